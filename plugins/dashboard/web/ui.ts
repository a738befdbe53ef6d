/** Shared view helpers: htm bound to preact, a data hook, small widgets. */
import { h } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import htm from 'htm';
import { api, stream, type StreamMsg } from './api.js';

export const html = htm.bind(h);

/** Fetches `path`, again when `deps` change or when one of `refreshOn` events arrives (and after a stream gap). */
export function useApi<T>(path: string | null, opts: { refreshOn?: (m: StreamMsg) => boolean; poll?: number } = {}) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    if (!path) return;
    api<T>(path)
      .then((d) => {
        setData(d);
        setError(null);
      })
      .catch((e: Error) => setError(e.message));
  }, [path]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the options are read once per path; load changes with the path
  useEffect(() => {
    load();
    const off = stream.subscribe((m) => {
      if (m.type === 'gap' || (opts.refreshOn && opts.refreshOn(m))) load();
    });
    const t = opts.poll ? setInterval(load, opts.poll) : undefined;
    return () => {
      off();
      if (t) clearInterval(t);
    };
  }, [load]);
  return { data, error, reload: load };
}

export const isActionEvent = (m: StreamMsg) => m.type === 'event' && typeof m.event === 'string' && m.event.startsWith('action.');

export function Err({ error }: { error: string | null | undefined }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null;
}

export function Loading() {
  return html`<p class="muted">Loading…</p>`;
}

export function fmtTime(iso?: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function show(v: unknown): string {
  if (v === undefined) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}
