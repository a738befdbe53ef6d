/**
 * Builds timelines from the kernel's hooks: actionQueued / actionStarted / actionSettled (queued, started,
 * retries with their reasons, settled), modelCall (provider, model, tokens, time), afterSkill (name, outcome,
 * time), messageDelivered (channel, platform message ids) and messageIgnored (inbound messages that did not
 * become an action). Every tap is synchronous SQLite work, so the events of one process keep their order.
 */
import type { Action, PluginContext } from '../../../sdk/index.js';
import type { TimelineAction, TimelineStore } from './store.js';

/** Longest text kept from a result, error or reason. */
const TEXT_CAP = 300;

const cap = (s: string | undefined): string | undefined => (s === undefined ? undefined : s.length > TEXT_CAP ? `${s.slice(0, TEXT_CAP)}…` : s);

/** The timeline's view of an action (its origin from `metadata.inbound`, which `receive` sets). */
export function describe(a: Action): TimelineAction {
  const inb = a.metadata.inbound as { channel?: unknown; messageId?: unknown; userId?: unknown } | undefined;
  const inbound =
    inb && typeof inb.channel === 'string' && typeof inb.messageId === 'string'
      ? { channel: inb.channel, messageId: inb.messageId, ...(typeof inb.userId === 'string' ? { userId: inb.userId } : {}) }
      : undefined;
  return { id: a.id, task: a.task, source: a.source, status: a.status, createdAt: a.createdAt, ...(inbound ? { inbound } : {}) };
}

export function record(ctx: PluginContext, store: TimelineStore): void {
  // An action pushed by another process (`keel push`) is first seen when it starts: ensure() back-dates its
  // origin and `queued` to its creation time.
  const ensure = (a: Action) => store.ensure(describe(a));
  const ensureId = (id: string | undefined): boolean => {
    if (!id) return false;
    if (store.has(id)) return true;
    const a = ctx.queue.get(id);
    if (!a) return false;
    ensure(a);
    return true;
  };

  ctx.hooks.tap('actionQueued', (a) => {
    ensure(a);
  });
  ctx.hooks.tap('actionStarted', (a) => {
    ensure(a);
    store.update(a.id, { status: 'executing' });
    store.add(a.id, 'started', { attempt: a.metadata.retries + 1, ...(a.metadata.retries ? { retries: a.metadata.retries } : {}) });
  });
  ctx.hooks.tap('actionSettled', (a, o) => {
    ensure(a);
    if (o.status === 'retry') {
      store.add(a.id, 'retry', {
        reason: cap(o.detail ?? a.error ?? 'unknown') as string,
        retry: a.metadata.retries,
        maxRetries: a.metadata.maxRetries,
        ...(a.metadata.notBefore ? { notBefore: new Date(a.metadata.notBefore).toISOString() } : {}),
      });
      store.update(a.id, { status: 'pending', ...(o.detail ? { error: o.detail } : {}) });
      return;
    }
    const at = a.settledAt ?? new Date().toISOString();
    store.add(a.id, 'settled', { status: o.status, ...(o.detail ? { [o.status === 'completed' ? 'result' : 'reason']: cap(o.detail) } : {}) }, at);
    store.update(a.id, {
      status: o.status === 'removed' ? 'removed' : o.status,
      settledAt: at,
      ...(o.status === 'completed' && o.detail ? { result: o.detail } : {}),
      ...(o.status !== 'completed' && o.detail ? { error: o.detail } : {}),
    });
  });
  ctx.hooks.tap('modelCall', (c) => {
    if (!ensureId(c.actionId)) return;
    store.add(c.actionId!, 'model_call', {
      provider: c.provider,
      model: c.model,
      purpose: c.purpose,
      ok: c.ok,
      inputTokens: c.inputTokens,
      outputTokens: c.outputTokens,
      durationMs: c.durationMs,
      ...(c.error ? { error: cap(c.error) } : {}),
    });
  });
  ctx.hooks.tap('afterSkill', (call, r) => {
    if (!ensureId(call.actionId)) return;
    store.add(call.actionId!, 'skill_call', {
      name: call.name,
      ok: r.success,
      durationMs: Math.round(r.executionTime),
      ...(r.success ? {} : { error: cap(r.result), ...(r.code ? { code: r.code } : {}) }),
    });
  });
  ctx.hooks.tap('messageDelivered', (m) => {
    if (!ensureId(m.actionId)) return;
    store.add(m.actionId!, 'reply', { channel: m.channel, ...(m.to ? { to: m.to } : {}), messageId: m.messageId, messageIds: m.messageIds });
  });
  ctx.hooks.tap('messageIgnored', (m) => {
    store.ignored({ at: new Date().toISOString(), ...m });
  });
}
