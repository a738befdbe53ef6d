/**
 * SPEC Admin permissions 5: in autonomy mode, cross-channel sends are blocked unless the tool is exempt
 * (`send_email`) or the user is an admin. A `beforeSkill` tap refuses a messaging skill called by the agent on
 * its own (autonomy) when the target channel is not in autonomyAllowedChannels.
 *
 * Messaging skills: `send_<channel>` (and `send_*` with an args.channel), `react`, and skills prefixed by a chat
 * channel name (`chatA_*` ... `chatD_*`, `gateway-chat_*`, or a running user channel's name). The target channel
 * comes from the name, else from args.channel; when it cannot be told, the call is refused (fail closed).
 */
import { CHANNEL_NAMES, isAutonomous, listChannels, type PluginContext, type SkillCall, type SkillVeto } from '../../../sdk/index.js';
import { isAdmin } from './actors.js';

export const EXEMPT_SKILLS: ReadonlySet<string> = new Set(['send_email']);

/**
 * Whether the skill sends a message, and to which channel (undefined channel: cannot be told). `running` adds the
 * names of running channel plugins (a user's own channel) to SPEC's.
 */
export function messagingTarget(
  name: string,
  args: Record<string, unknown>,
  running: readonly string[] = [],
): { channel: string | undefined } | undefined {
  const fromArgs = typeof args.channel === 'string' && args.channel.trim() ? args.channel.trim() : undefined;
  // Longest names first, so a channel whose name extends another's is not mistaken for it.
  const names = [...new Set<string>([...CHANNEL_NAMES, ...running])].sort((a, b) => b.length - a.length);
  if (name.startsWith('send_')) {
    const rest = name.slice(5);
    const named = names.find((c) => c.toLowerCase() === rest.toLowerCase() || rest.toLowerCase().startsWith(`${c.toLowerCase()}_`));
    return { channel: named ?? fromArgs };
  }
  if (name === 'react') return { channel: fromArgs };
  const prefixed = names.filter((c) => c !== 'email').find((c) => name.toLowerCase().startsWith(`${c.toLowerCase()}_`));
  if (prefixed) return { channel: prefixed };
  return undefined;
}

export function crossChannelVeto(call: SkillCall, ctx: Pick<PluginContext, 'config' | 'use' | 'capabilities'>): SkillVeto | undefined {
  if (EXEMPT_SKILLS.has(call.name)) return undefined;
  if (!call.actor || !isAutonomous(call.actor)) return undefined;
  const target = messagingTarget(
    call.name,
    call.args ?? {},
    listChannels(ctx).map((c) => c.name),
  );
  if (!target) return undefined;
  if (isAdmin(ctx, call.actor)) return undefined;
  const allowed = ctx.config.get<unknown>('autonomyAllowedChannels');
  const list = Array.isArray(allowed) ? allowed.filter((x): x is string => typeof x === 'string') : [];
  if (target.channel && list.includes(target.channel)) return undefined;
  const where = target.channel ? `channel ${target.channel}` : 'a channel that cannot be determined';
  return {
    code: 'KEEL_E_FORBIDDEN',
    reason:
      `${call.name} is refused: in autonomy mode the agent may send on its own only to autonomyAllowedChannels ` +
      `(${list.length ? list.join(', ') : 'none'}; send_email is exempt), and this targets ${where}. ` +
      (target.channel
        ? `An operator can allow it with: keel config set autonomyAllowedChannels '${JSON.stringify([...list, target.channel])}'`
        : ''),
  };
}
