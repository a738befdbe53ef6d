/**
 * Approvals for a privileged skill on untrusted work (docs/approvals.md, docs/security.md): the kernel refuses an
 * admin-only skill on work that read outside content (a web page, a mail, a non-admin's message), and asks here.
 * The call stays refused for the agent; a `skill` request with the skill and its exact arguments (shown in words,
 * secrets masked, size-bounded) goes to the admins of the chat the action came from, through the same approvals
 * service as commands. An admin's Approve runs that call once, with those arguments, as the approving admin
 * (a trusted actor, checked again by the kernel's policy); the result is posted in the chat.
 *
 * Fails closed, no request sent: work that did not come from a chat with buttons (the CLI, autonomy, WhatsApp,
 * email), a chat channel with no `adminUsers`, arguments too large to show and keep.
 */
import { createHash } from 'node:crypto';
import type { ApprovalExecutor, ApprovalService, SkillApprovalAnswer, SkillApprovalInput } from '../../../sdk/approvals.js';
import { scrubSecretShapes } from '../../../sdk/secret-shapes.js';
import type { PluginContext, SkillManifest } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { originOf } from './approvals.js';

type Ctx = PluginContext<typeof manifest>;

/** The arguments kept for the approval, as JSON: larger calls are not sent for approval (refused as before). */
export const MAX_ARGS_BYTES = 16_384;
const MAX_VALUE_CHARS = 200;
const MAX_ASK_CHARS = 900;
/** How much of the approved call's result is posted in the chat. */
export const MAX_RESULT_CHARS = 1500;

/** Argument names whose value is never shown (`apiKey`, `password`, `auth_token`, `client_secret` ...). */
const SECRET_NAME = /pass(?:word|phrase|wd)?|secret|token|api[_-]?key|^key$|[_-]key$|private[_-]?key|credential|auth|cookie|session/i;

/** Names of the parameters the skill's own schema marks secret (`writeOnly`, `format: password`). */
function secretParams(skill: SkillManifest | undefined): Set<string> {
  const props = (skill?.parameters as { properties?: Record<string, { writeOnly?: unknown; format?: unknown }> } | undefined)?.properties;
  const out = new Set<string>();
  for (const [k, v] of Object.entries(props ?? {})) if (v?.writeOnly === true || v?.format === 'password') out.add(k);
  return out;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** One value in words: nested secrets masked too, credential shapes scrubbed, long values cut. */
function shown(value: unknown, secret: (name: string) => boolean): string {
  const mask = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(mask);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, secret(k) ? '[hidden]' : mask(x)]));
    return v;
  };
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(mask(value)) ?? String(value));
  return clip(scrubSecretShapes(text), MAX_VALUE_CHARS);
}

/**
 * The call in plain words: `run wipe_disk with target: "/srv", token: [hidden]`.
 * @example describeSkillCall('wipe_disk', { target: '/srv', token: 'x' }) // 'run the skill wipe_disk with target: "/srv", token: [hidden]'
 */
export function describeSkillCall(name: string, args: Record<string, unknown>, skill?: SkillManifest): string {
  const marked = secretParams(skill);
  const secret = (k: string) => marked.has(k) || SECRET_NAME.test(k);
  const parts = Object.entries(args).map(([k, v]) => `${k}: ${secret(k) ? '[hidden]' : shown(v, SECRET_NAME.test.bind(SECRET_NAME))}`);
  const words = `run the skill ${name} ${parts.length ? `with ${parts.join(', ')}` : 'with no arguments'}`;
  return `${clip(words, MAX_ASK_CHARS)} (asked on untrusted work: check it is what you want)`;
}

/** The same call of the same action always has the same request id: asking again sends nothing new. */
function requestId(actionId: string, name: string, args: Record<string, unknown>): string {
  const h = createHash('sha256')
    .update(JSON.stringify([actionId, name, args]))
    .digest('hex')
    .slice(0, 20);
  return `skl_${h}`;
}

function hasAdmins(ctx: Ctx, channel: string): boolean {
  try {
    const admins = ctx.config.get<unknown>('adminUsers' as never) as unknown;
    if (admins === null || typeof admins !== 'object' || Array.isArray(admins)) return false;
    const list = (admins as Record<string, unknown>)[channel];
    return Array.isArray(list) && list.some((id) => typeof id === 'string' && id.trim() !== '');
  } catch {
    return false;
  }
}

/** Runs the approved call once, as the approving admin, through the kernel's dispatch (policy checked again). */
export function skillExecutor(ctx: Ctx): ApprovalExecutor {
  return {
    async approve(r, by) {
      if (!r.call) return 'Nothing was run: the call this request was for is not known here any more.';
      const res = await ctx.skills.execute(r.call.skill, r.call.args, by, { signal: ctx.signal });
      const text = clip(scrubSecretShapes(res.result), MAX_RESULT_CHARS);
      return res.success ? `${r.call.skill} ran. Result:\n${text}` : `${r.call.skill} did not run (${res.code ?? 'refused'}): ${text}`;
    },
    // Nothing else waits for a skill call: the request (and its arguments) leaving `pending` drops it.
    refuse: async () => {},
    expire: async () => {},
  };
}

/** `approvals.requestSkill`: what the kernel's dispatch asks when it refused a privileged skill on untrusted work. */
export function skillRequester(ctx: Ctx, approvals: ApprovalService): (input: SkillApprovalInput) => Promise<SkillApprovalAnswer> {
  return async ({ skill, args, actor, action }) => {
    const origin = originOf(actor, action);
    if (!origin || !action) return { sent: false, message: '' };
    const no = (why: string): SkillApprovalAnswer => ({
      sent: false,
      message: `No approval request was sent: ${why}. Do not call it again on this work.`,
    });
    if (!hasAdmins(ctx, origin.channel)) return no(`${origin.channel} has no admins (adminUsers.${origin.channel}) to approve it`);
    let json: string;
    try {
      json = JSON.stringify(args);
    } catch {
      return no('its arguments cannot be kept');
    }
    if (Buffer.byteLength(json) > MAX_ARGS_BYTES) return no(`its arguments are larger than ${MAX_ARGS_BYTES} bytes`);
    const manifestOf = ctx.skills.list({ includeUnavailable: true }).find((s) => s.name === skill);
    const r = await approvals.request(
      {
        id: requestId(action.id, skill, args),
        kind: 'skill',
        ask: describeSkillCall(skill, args, manifestOf),
        requestedBy: actor,
        origin,
        call: { skill, args: JSON.parse(json) as Record<string, unknown> },
      },
      ctx.config.get('approvalExpiryMinutes'),
    );
    if (r.state !== 'pending')
      return {
        sent: false,
        message: `The same call was sent for approval before and is ${r.state}${r.outcome ? ` (${r.outcome.split('\n')[0]})` : ''}. Do not call it again.`,
      };
    return {
      sent: true,
      request: r,
      message:
        `It was sent for approval (${r.id}) to the admins of this chat, with Approve and Refuse buttons: if an admin approves, ` +
        `${skill} runs once with these arguments and the result is posted in this chat. It expires at ${r.expiresAt}. ` +
        "Tell the user it awaits an admin's approval; do not call it again.",
    };
  };
}
