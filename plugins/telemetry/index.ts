/**
 * Telemetry plugin entry: the anonymous usage ping. See docs/telemetry.md.
 *
 * Sent at start (fire and forget: setup never waits for it) and every 24 h: a POST of exactly
 * {version, installationId, uptimeSeconds, errorCounts: {error, warn}}. Failures are silent (debug log only);
 * stop() aborts a ping in flight and returns at once.
 */
import { errorsFor } from '../../sdk/errors.js';
import { definePlugin, errorMessage } from '../../sdk/index.js';
import manifest from './manifest.js';
import { withLinkedSignal } from '../../sdk/retry.js';
import { installationId } from './src/installation-id.js';

const coded = errorsFor('telemetry');

/** The default service. `.invalid` never resolves (RFC 2606), and the plugin skips such hosts without a request. */
export const DEFAULT_USAGE_PING_URL = 'https://telemetry.keel.invalid/v1/ping';
export const PING_EVERY_MS = 24 * 60 * 60 * 1000;

export interface UsagePing {
  version: string;
  installationId: string;
  uptimeSeconds: number;
  errorCounts: { error: number; warn: number };
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const stopping = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const counts = { error: 0, warn: 0 };
    const info = ctx.use('kernel:info');
    // Counts only: the entry's message is never looked at, let alone kept.
    for (const e of info?.logs() ?? []) if (e.level === 'error' || e.level === 'warn') counts[e.level]++;
    const unsubscribe = info?.onLog((e) => {
      if (e.level === 'error' || e.level === 'warn') counts[e.level]++;
    });
    const startedAt = Date.parse(info?.startedAt ?? '') || Date.now();

    const ping = async (): Promise<void> => {
      if (stopping.signal.aborted || !ctx.config.get('usagePingEnabled')) return;
      const configured = ctx.config.get('usagePingUrl');
      const url = configured && configured.trim() ? configured.trim() : DEFAULT_USAGE_PING_URL;
      let host: string;
      try {
        const u = new URL(url);
        if (u.protocol !== 'https:' && u.protocol !== 'http:') throw coded('KEEL_E_INVALID_ARGUMENT', `unsupported protocol ${u.protocol}`);
        host = u.hostname.toLowerCase();
      } catch (e) {
        ctx.log.debug(`Usage ping skipped: usagePingUrl is not a usable URL (${errorMessage(e)}).`);
        return;
      }
      if (host === 'invalid' || host.endsWith('.invalid')) {
        ctx.log.debug(`Usage ping skipped: ${host} is a reserved .invalid host (no telemetry service is configured).`);
        return;
      }
      try {
        const body: UsagePing = {
          version: ctx.version,
          installationId: installationId(ctx.home),
          uptimeSeconds: Math.max(0, Math.floor((Date.now() - startedAt) / 1000)),
          errorCounts: { error: counts.error, warn: counts.warn },
        };
        const token = ctx.config.get('usagePingToken');
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (typeof token === 'string' && token !== '') headers.authorization = `Bearer ${token}`;
        const timeout = ctx.config.get('usagePingTimeoutMs');
        await withLinkedSignal([AbortSignal.timeout(timeout), stopping.signal, ctx.signal], async (signal) => {
          const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal, redirect: 'error' });
          // Drain so the connection is released; the answer itself is not used.
          await res.arrayBuffer().catch(() => undefined);
          ctx.log.debug(`Usage ping sent (HTTP ${res.status}).`);
        });
      } catch (e) {
        ctx.log.debug(`Usage ping failed (ignored): ${e instanceof Error ? e.name : 'error'}.`);
      }
    };

    // Not awaited: start never waits for the network.
    queueMicrotask(() => void ping());
    timer = setInterval(() => void ping(), PING_EVERY_MS);
    timer.unref();

    return {
      stop() {
        stopping.abort();
        if (timer) clearInterval(timer);
        timer = undefined;
        unsubscribe?.();
      },
    };
  },
});
