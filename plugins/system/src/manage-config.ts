/**
 * manage_config: the agent's door to configuration, bound by the policy classes (SPEC "Configuration change
 * policy"). Every `set` goes to the kernel with origin `agent`, whoever prompted the agent: SAFE applies, APPROVAL
 * waits for a human, LOCKED is refused (the kernel logs it). `approve` is for humans only: the operator (origin
 * `operator`), or a channel admin, directly or through the agent working for them (origin `admin` with the human
 * as actor). The agent's own autonomous call is passed on as origin `agent`, which the kernel refuses with
 * KEEL_E_APPROVAL_FORBIDDEN; the attempt is logged here too.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Action, Actor, ConfigOrigin, PluginContext, SkillArgs } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { describeActor } from '../../../sdk/actor.js';
import { approverOf } from './admin.js';
import { originOf } from './approvals.js';
import type { ApprovalService } from '../../../sdk/approvals.js';

const coded = errorsFor('system');

export type ManageConfigArgs = SkillArgs<typeof manifest, 'manage_config'>;

type Ctx = Pick<PluginContext, 'config' | 'log' | 'use'>;
type Approvals = Pick<ApprovalService, 'request'>;

/** A string value read as the key's type: JSON for lists and objects, true/false, numbers. */
export function parseValue(raw: unknown, current: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  const t = raw.trim();
  if (Array.isArray(current) || (current !== null && typeof current === 'object')) {
    try {
      return JSON.parse(t);
    } catch {
      return Array.isArray(current)
        ? t
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : raw;
    }
  }
  if (typeof current === 'boolean') return t === 'true' ? true : t === 'false' ? false : raw;
  if (typeof current === 'number') return t !== '' && Number.isFinite(Number(t)) ? Number(t) : raw;
  if (typeof current === 'string') return raw;
  // No current value: JSON when it looks like JSON, the string otherwise.
  if (/^(true|false|null|-?\d+(\.\d+)?([eE][+-]?\d+)?|\[.*\]|\{.*\})$/s.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return raw;
    }
  }
  return raw;
}

export async function manageConfig(ctx: Ctx, a: ManageConfigArgs, actor: Actor, action?: Action, approvals?: Approvals): Promise<unknown> {
  const info = ctx.use('kernel:info');
  const classes = new Map((info?.configKeys() ?? []).map((k) => [k.key, k]));
  switch (a.action) {
    case 'show': {
      const values = ctx.config.all({ masked: true });
      if (a.key !== undefined) {
        const k = classes.get(a.key);
        if (!k && !(a.key in values)) throw coded('KEEL_E_NOT_FOUND', `Unknown configuration key "${a.key}"`);
        return { key: a.key, value: values[a.key] ?? null, ...(k ? { policy: k.policy, owner: k.owner, secret: k.secret } : {}) };
      }
      if (a.detail === 'policy') {
        if (!info) throw coded('KEEL_E_PLUGIN_FAILED', 'the kernel did not provide kernel:info, so policy classes are unknown');
        return {
          keys: [...classes.values()]
            .sort((x, y) => x.key.localeCompare(y.key))
            .map((k) => ({ key: k.key, policy: k.policy, owner: k.owner, secret: k.secret })),
        };
      }
      return { config: values };
    }
    case 'set': {
      if (!a.key) throw coded('KEEL_E_INVALID_ARGUMENT', 'set needs a key');
      if (a.value === undefined) throw coded('KEEL_E_INVALID_ARGUMENT', 'set needs a value');
      let current: unknown;
      try {
        current = ctx.config.get(a.key);
      } catch {
        current = undefined;
      }
      const value = parseValue(a.value, current);
      const origin: ConfigOrigin = { kind: 'agent', actor, ...(a.reason ? { reason: a.reason } : {}) };
      const out = await ctx.config.set(a.key, value, origin);
      const chat = out.status === 'pending' ? originOf(actor, action) : undefined;
      if (out.status === 'pending' && chat && approvals) {
        // The value as the pending list shows it: masked when the key is secret.
        const shown = ctx.config.pending().find((p) => p.id === out.id)?.value;
        const r = await approvals.request(
          {
            id: out.id,
            kind: 'config',
            ask: `set ${out.key} to ${JSON.stringify(shown)}${a.reason ? ` (reason: ${a.reason})` : ''}`,
            requestedBy: actor,
            origin: chat,
          },
          ctx.config.get<number>('approvalExpiryMinutes') ?? 10,
        );
        return {
          ...out,
          message: `${out.message}. The request was sent to this chat with Approve and Refuse buttons for an admin; it expires at ${r.expiresAt}.`,
        };
      }
      return out;
    }
    case 'pending':
      return { pending: ctx.config.pending() };
    case 'approve': {
      const id = a.key ?? (typeof a.value === 'string' ? a.value : undefined);
      if (!id) throw coded('KEEL_E_INVALID_ARGUMENT', 'approve needs the pending change id (as key)');
      const who = approverOf(actor, ctx);
      let origin: ConfigOrigin;
      if (!who.ok) {
        ctx.log.warn(`config: self-approval attempt refused: ${describeActor(actor)} tried to approve pending change ${id}: ${who.reason}`);
        // The kernel makes the final call (and refuses an agent origin with KEEL_E_APPROVAL_FORBIDDEN).
        origin = { kind: 'agent', actor, ...(a.reason ? { reason: a.reason } : {}) };
      } else if (who.human.kind === 'operator') {
        origin = { kind: 'operator', actor: who.human };
      } else {
        origin = { kind: 'admin', actor: who.human };
      }
      return ctx.config.approve(id, origin);
    }
  }
}
