/**
 * Approvals in the chat for the system plugin's two waiting things (docs/approvals.md): a command waiting for
 * confirmation (autoExecuteCommands off) and an APPROVAL configuration change the agent asked for. The request goes
 * to the chat the action came from, with Approve / Refuse buttons; an admin's tap there decides it through the same
 * paths as approve_command and `manage_config approve`.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { ApprovalService, type ApprovalExecutor, type ApprovalRequest, type ApprovalsCapability } from '../../../sdk/approvals.js';
import {
  type Action,
  type Actor,
  approvalButtonData,
  type ConfigOrigin,
  type GatewayRoutesCapability,
  humanBehind,
  type PluginContext,
  Type,
} from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import type { CommandService } from './service.js';
import { skillExecutor, skillRequester } from './skill-approvals.js';

const coded = errorsFor('system');

/** Channels that show the buttons and hand a tap back (`approvals.decide`). Others keep the CLI and REST paths. */
export const BUTTON_CHANNELS = new Set(['chatA', 'chatC', 'chatD', 'gateway-chat']);

type Ctx = PluginContext<typeof manifest>;

/** The chat an approval for this call goes to, or undefined when the work did not come from a chat with buttons. */
export function originOf(actor: Actor, action: Action | undefined): { channel: string; chatId: string } | undefined {
  const human = humanBehind(actor);
  const channel = action?.source ?? human?.channel;
  const chatId = (action?.metadata.replyTo as { chatId?: unknown } | undefined)?.chatId;
  if (!channel || !BUTTON_CHANNELS.has(channel) || (typeof chatId !== 'string' && typeof chatId !== 'number')) return undefined;
  return { channel, chatId: String(chatId) };
}

function configOrigin(by: Actor, reason?: string): ConfigOrigin {
  return { kind: by.kind === 'operator' ? 'operator' : 'admin', actor: by, ...(reason ? { reason } : {}) };
}

/** The service, with `requestSkill` (a privileged skill refused on untrusted work; skill-approvals.ts). */
export type SystemApprovals = ApprovalService & Required<Pick<ApprovalsCapability, 'requestSkill'>>;

export function createApprovals(ctx: Ctx, commands: CommandService): SystemApprovals {
  const command: ApprovalExecutor = {
    approve: (r, by) => commands.decide(r.id, 'approve', by, ctx.signal),
    refuse: async (r, by) => void (await commands.decide(r.id, 'refuse', by)),
    expire: async (r) => void (await commands.pending.take(r.id)),
  };
  const config: ApprovalExecutor = {
    approve: async (r, by) => {
      const out = await ctx.config.approve(r.id, configOrigin(by));
      return out.status === 'applied' ? `Applied: ${out.key} changed.` : out.message;
    },
    refuse: async (r, by) => void (await ctx.config.reject(r.id, configOrigin(by))),
    // Nobody answered: the change is dropped as if refused (the operator's own rule, with the reason said).
    expire: async (r) => void (await ctx.config.reject(r.id, { kind: 'operator', reason: 'approval request expired unanswered' })),
  };
  const service = new ApprovalService({
    home: ctx.home,
    log: ctx.log,
    isAdmin: (actor) => ctx.use('kernel:policy')?.isAdmin(actor) === true,
    executors: { command, config, skill: skillExecutor(ctx) },
    delivery: {
      async send(r, text, buttons, key) {
        const channel = ctx.use(`channel:${r.origin.channel}`);
        if (!channel) throw coded('KEEL_E_CHANNEL_NOT_CONNECTED', `channel ${r.origin.channel} is not running here`);
        const message = buttons
          ? {
              text,
              buttons: [
                [
                  { text: 'Approve', callback_data: approvalButtonData(r.id, 'approve') },
                  { text: 'Refuse', callback_data: approvalButtonData(r.id, 'refuse') },
                ],
              ],
            }
          : { text };
        await channel.send(r.origin.chatId!, message, { idempotencyKey: key, format: 'plain' });
      },
      event(name, r) {
        ctx.use('gateway:events')?.emit(name, publicView(r));
      },
    },
  });
  return Object.assign(service, { requestSkill: skillRequester(ctx, service) });
}

/** What the gateway shows of a request (it holds no secret: `ask` masks values; a skill call's arguments stay out). */
function publicView(r: ApprovalRequest): Record<string, unknown> {
  const { call: _kept, ...rest } = r;
  return {
    ...rest,
    requestedBy: r.requestedBy ? { kind: r.requestedBy.kind, channel: r.requestedBy.channel, userId: r.requestedBy.userId } : undefined,
  };
}

const ErrorBody = Type.Object({ error: Type.String(), message: Type.String() });
const RequestBody = Type.Object(
  {
    id: Type.String(),
    kind: Type.String(),
    ask: Type.String(),
    state: Type.String(),
    origin: Type.Object({ channel: Type.String(), chatId: Type.Optional(Type.String()) }),
    requestedAt: Type.String(),
    expiresAt: Type.String(),
    decidedBy: Type.Optional(Type.String()),
    decidedAt: Type.Optional(Type.String()),
    outcome: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
const Decided = Type.Object({ status: Type.String(), message: Type.String(), request: Type.Optional(RequestBody) });

/** GET /api/approvals and POST /api/approvals/:id/approve|refuse (the operator; docs/api.md "Approvals"). */
export function approvalRoutes(approvals: ApprovalService): GatewayRoutesCapability {
  const decideRoute = (decision: 'approve' | 'refuse') => ({
    method: 'POST' as const,
    url: `/api/approvals/:id/${decision}`,
    summary: decision === 'approve' ? 'Approve a waiting request (as the operator)' : 'Refuse a waiting request (as the operator)',
    description:
      'The same as an admin tapping the button in the chat: decided once (200 with status decided); 409 when it was already decided or expired; 404 unknown id; 403 for a caller that is not the operator (a remote client while the gateway has no API key).',
    schema: {
      params: Type.Object({ id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,58}$' }) }),
      response: { 200: Decided, 403: ErrorBody, 404: ErrorBody, 409: Decided, 400: ErrorBody, 401: ErrorBody },
    },
    handler: async (req: { params: Record<string, string>; caller: { operator: boolean; actor: Actor } }) => {
      if (!req.caller.operator)
        return {
          status: 403,
          body: { error: 'Forbidden', message: 'Only the operator (the gateway key, or loopback without one) can decide approvals here.' },
        };
      const out = await approvals.decide(req.params.id!, decision, { kind: 'operator', channel: 'gateway' });
      const status = out.status === 'decided' ? 200 : out.status === 'unknown' ? 404 : out.status === 'not-admin' ? 403 : 409;
      if (status === 404 || status === 403)
        return { status, body: { error: status === 404 ? 'NotFound' : 'Forbidden', message: out.message } };
      return { status, body: { status: out.status, message: out.message, ...(out.request ? { request: publicView(out.request) } : {}) } };
    },
  });
  return {
    routes: [
      {
        method: 'GET',
        url: '/api/approvals',
        summary: 'Approval requests: the pending ones first, then the recently decided',
        schema: { response: { 200: Type.Object({ approvals: Type.Array(RequestBody) }), 401: ErrorBody } },
        handler: async () => {
          await approvals.sweep();
          return { body: { approvals: approvals.list().map(publicView) } };
        },
      },
      decideRoute('approve'),
      decideRoute('refuse'),
    ],
  };
}
