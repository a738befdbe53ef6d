/**
 * Builds timelines from the kernel's hooks: actionQueued / actionStarted / actionSettled (queued, started,
 * retries with their reasons, settled), modelCall (provider, model, tokens, time), afterSkill (name, outcome,
 * time), messageDelivered (channel, platform message ids) and messageIgnored (inbound messages that did not
 * become an action).
 */
import { randomBytes } from 'node:crypto';
import type { SkillCall } from '../../../sdk/hooks.js';
import type { Action, PluginContext, SkillResult } from '../../../sdk/index.js';
import type { TimelineAction, TimelineEventType, TimelineStore } from './store.js';

/** The channel of the actor Keel's MCP server runs calls as (plugins/mcp: `/mcp` and `keel mcp`). */
export const MCP_CHANNEL = 'mcp';

/** Longest text kept from a result, error or reason. */
const TEXT_CAP = 300;

const cap = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : s.length > TEXT_CAP ? `${s.slice(0, TEXT_CAP)}…` : s;

/** The timeline's view of an action (its origin from `metadata.inbound`, which `receive` sets). */
export function describe(a: Action): TimelineAction {
  const inb = a.metadata.inbound as { channel?: unknown; messageId?: unknown; userId?: unknown } | undefined;
  // Why privileged skills may be refused to it: the sender is not an admin, or it quotes someone who is not.
  const q = a.metadata.quoted as { userName?: unknown; userId?: unknown; fromBot?: unknown; trusted?: unknown } | undefined;
  const quotedFrom =
    q && typeof q === 'object' ? (q.fromBot === true ? 'Keel' : [q.userName, q.userId].find((x) => typeof x === 'string' && x)) : undefined;
  // An edit is filed under the message it edits, so `keel trace <message id>` shows every version's action.
  const e = a.metadata.edit as { of?: unknown; at?: unknown; after?: unknown } | undefined;
  const edit =
    e && typeof e === 'object' && typeof e.of === 'string'
      ? {
          editOf: e.of,
          ...(typeof e.at === 'string' ? { editedAt: e.at } : {}),
          ...(typeof e.after === 'string' ? { after: e.after } : {}),
        }
      : undefined;
  const inbound =
    inb && typeof inb.channel === 'string' && typeof inb.messageId === 'string'
      ? {
          channel: inb.channel,
          messageId: edit ? edit.editOf : inb.messageId,
          ...(edit ?? {}),
          ...(typeof inb.userId === 'string' ? { userId: inb.userId } : {}),
          ...(a.metadata.untrusted === true ? { untrusted: true as const } : {}),
          ...(typeof quotedFrom === 'string' ? { quotedFrom, quotedTrusted: q!.trusted === true } : {}),
        }
      : undefined;
  return { id: a.id, task: a.task, source: a.source, status: a.status, createdAt: a.createdAt, ...(inbound ? { inbound } : {}) };
}

/**
 * Taps the hooks and writes behind: each tap only queues its write, and the queue is committed in one
 * transaction on the next turn of the event loop (or at `flush`). A push or a skill call never waits for
 * SQLite, the order of one process's events is kept, and a crash can lose at most the writes of that turn.
 */
export function record(ctx: PluginContext, store: TimelineStore, onError: (e: unknown) => void): { flush(): void } {
  const queue: Array<() => void> = [];
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    if (!queue.length) return;
    const ops = queue.splice(0);
    try {
      store.tx(() => {
        for (const op of ops) op();
      });
    } catch (e) {
      onError(e);
    }
  };
  const later = (op: () => void) => {
    queue.push(op);
    scheduled ??= setImmediate(flush);
  };

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
  const snapshot = (a: Action): Action => ({ ...a, metadata: { ...a.metadata } });

  ctx.hooks.tap('actionQueued', (a) => {
    const s = snapshot(a);
    later(() => ensure(s));
  });
  // An edited chat message amended its waiting action: the task it now has, and when and which edit it was.
  ctx.hooks.tap('actionAmended', (a) => {
    const s = snapshot(a);
    const at = new Date().toISOString();
    later(() => {
      ensure(s);
      store.retask(s.id, s.task);
      const e = s.metadata.edit as { at?: unknown } | undefined;
      store.add(s.id, 'amended', { task: cap(s.task) as string, ...(typeof e?.at === 'string' ? { editedAt: e.at } : {}) }, at);
    });
  });
  ctx.hooks.tap('actionStarted', (a) => {
    const s = snapshot(a);
    later(() => {
      ensure(s);
      store.update(s.id, { status: 'executing' });
      store.add(s.id, 'started', { attempt: s.metadata.retries + 1, ...(s.metadata.retries ? { retries: s.metadata.retries } : {}) });
    });
  });
  ctx.hooks.tap('actionSettled', (a, o) => {
    const s = snapshot(a);
    const at = new Date().toISOString();
    later(() => {
      ensure(s);
      if (o.status === 'retry') {
        store.add(
          s.id,
          'retry',
          {
            reason: cap(o.detail ?? s.error ?? 'unknown') as string,
            retry: s.metadata.retries,
            maxRetries: s.metadata.maxRetries,
            ...(s.metadata.notBefore ? { notBefore: new Date(s.metadata.notBefore).toISOString() } : {}),
          },
          at,
        );
        store.update(s.id, { status: 'pending', ...(o.detail ? { error: o.detail } : {}) });
        return;
      }
      const settledAt = s.settledAt ?? at;
      store.add(
        s.id,
        'settled',
        { status: o.status, ...(o.detail ? { [o.status === 'completed' ? 'result' : 'reason']: cap(o.detail) } : {}) },
        settledAt,
      );
      store.update(s.id, {
        status: o.status,
        settledAt,
        ...(o.status === 'completed' && o.detail ? { result: o.detail } : {}),
        ...(o.status !== 'completed' && o.detail ? { error: o.detail } : {}),
      });
    });
  });
  ctx.hooks.tap('modelCall', (c) => {
    if (!c.actionId) return;
    const at = new Date().toISOString();
    later(() => {
      if (!ensureId(c.actionId)) return;
      store.add(
        c.actionId!,
        'model_call',
        {
          provider: c.provider,
          model: c.model,
          purpose: c.purpose,
          ok: c.ok,
          inputTokens: c.inputTokens,
          outputTokens: c.outputTokens,
          durationMs: c.durationMs,
          ...(c.error ? { error: cap(c.error) } : {}),
        },
        at,
      );
    });
  });
  ctx.hooks.tap('afterSkill', (call, r) => {
    if (!call.actionId) {
      // A call an MCP client made (Keel's MCP server, plugins/mcp): no action of the queue, so a timeline of its own.
      if (call.actor.channel === MCP_CHANNEL) {
        const s = mcpCall(call, r);
        later(() => {
          if (!store.ensure(s.action)) return;
          for (const e of s.events) store.add(s.action.id, e.type, e.data, e.at);
          store.update(s.action.id, s.settled);
        });
      }
      return;
    }
    const at = new Date().toISOString();
    const data = {
      name: call.name,
      ok: r.success,
      durationMs: Math.round(r.executionTime),
      ...(r.success ? {} : { error: cap(r.result), ...(r.code ? { code: r.code } : {}) }),
    };
    later(() => {
      if (ensureId(call.actionId)) store.add(call.actionId!, 'skill_call', data, at);
    });
  });
  ctx.hooks.tap('messageDelivered', (m) => {
    if (!m.actionId) return;
    const at = new Date().toISOString();
    const data = { channel: m.channel, ...(m.to ? { to: m.to } : {}), messageId: m.messageId, messageIds: [...m.messageIds] };
    later(() => {
      if (ensureId(m.actionId)) store.add(m.actionId!, 'reply', data, at);
    });
  });
  ctx.hooks.tap('messageIgnored', (m) => {
    const r = { at: new Date().toISOString(), ...m };
    later(() => store.ignored(r));
  });
  return { flush };
}

/**
 * The timeline of one tools/call of an MCP client (docs/mcp.md): an id of its own (`mcp_<ms>_<hex>`), source
 * `mcp`, task `MCP tools/call <name>`, filed under the message id `mcp:<name>` (so `keel trace mcp:<name>` lists
 * every MCP call of that skill), with `received` (who called), `queued`, `started`, `skill_call` and `settled`.
 * Arguments and results are not copied (as for every skill call): only whether it worked, and the error, capped.
 */
export function mcpCall(
  call: SkillCall,
  r: SkillResult,
  now = Date.now(),
): {
  action: TimelineAction;
  events: Array<{ type: TimelineEventType; data: Record<string, unknown>; at: string }>;
  settled: { status: string; settledAt: string; result?: string; error?: string };
} {
  const at = new Date(now).toISOString();
  const createdAt = new Date(now - Math.round(r.executionTime)).toISOString();
  const who = call.actor.userId ?? call.actor.kind;
  const status = r.success ? 'completed' : 'failed';
  const detail = cap(r.result);
  return {
    action: {
      id: `mcp_${now}_${randomBytes(3).toString('hex')}`,
      task: `MCP tools/call ${call.name}`,
      source: MCP_CHANNEL,
      status,
      createdAt,
      inbound: { channel: MCP_CHANNEL, messageId: `mcp:${call.name}`, userId: who },
    },
    events: [
      { type: 'started', data: { attempt: 1 }, at: createdAt },
      {
        type: 'skill_call',
        data: {
          name: call.name,
          ok: r.success,
          durationMs: Math.round(r.executionTime),
          ...(r.success ? {} : { error: detail, ...(r.code ? { code: r.code } : {}) }),
        },
        at,
      },
      { type: 'settled', data: { status, ...(r.success ? {} : { reason: detail }) }, at },
    ],
    // A skill's result may be large or sensitive (a file, a page): kept out, as for every skill call; errors kept.
    settled: { status, settledAt: at, ...(r.success ? {} : { error: r.result }) },
  };
}
