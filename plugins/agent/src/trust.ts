/**
 * Which work counts as started by untrusted content (DESIGN section 8). The agent marks its skill calls
 * `untrusted: true` in these cases, and the kernel then refuses privileged skills unless the local operator
 * is the one asking (kernel/policy/authorize.ts):
 * - the action carries `metadata.untrusted === true`, or its requester is flagged untrusted;
 * - the action came from a chat channel or email (chatA..chatD, email, gateway-chat) and the requester is not
 *   an admin there (`adminUsers`, with `identityLinks` followed one step in either direction);
 * - an earlier skill in the same action brought outside content in (see `bringsOutsideContent`): from then on,
 *   every call of that action is untrusted, because the model has read text nobody vetted.
 */
import type { Action, Actor, ConfigView, SkillManifest } from '../../../sdk/index.js';

export const CHAT_SOURCES: ReadonlySet<string> = new Set(['chatA', 'chatB', 'chatC', 'chatD', 'email', 'gateway-chat']);
/** Categories of skills that return text from outside (web pages, mail, messages of others, stored documents). */
export const OUTSIDE_CATEGORIES: ReadonlySet<string> = new Set(['web', 'browser', 'search', 'email', 'messaging', 'knowledge']);
const OUTSIDE_NAMES = /^(?:web_|http_|browser_|extract_|fetch_email|search_emails|rag_search|index_emails)/;

function listed(admins: unknown, channel: string, userId: string): boolean {
  if (!admins || typeof admins !== 'object') return false;
  const list = (admins as Record<string, unknown>)[channel];
  return Array.isArray(list) && list.some((id) => typeof id === 'string' && id.trim() === userId);
}

function read(config: ConfigView, key: string): unknown {
  try {
    return config.get(key);
  } catch {
    return undefined;
  }
}

/** Whether the requester is an admin on the channel they wrote from (fails closed). */
export function requesterIsAdmin(actor: Actor | undefined, config: ConfigView): boolean {
  if (!actor) return false;
  if (actor.kind === 'operator') return true;
  if (actor.kind !== 'user' || !actor.userId) return false;
  const admins = read(config, 'adminUsers');
  if (listed(admins, actor.channel, actor.userId)) return true;
  const links = read(config, 'identityLinks');
  if (!links || typeof links !== 'object') return false;
  const me = `${actor.channel}:${actor.userId}`;
  for (const [from, to] of Object.entries(links as Record<string, unknown>)) {
    if (typeof to !== 'string') continue;
    const other = from === me ? to : to === me ? from : undefined;
    if (!other) continue;
    const i = other.indexOf(':');
    if (i > 0 && listed(admins, other.slice(0, i), other.slice(i + 1))) return true;
  }
  return false;
}

export function startsUntrusted(action: Action, config: ConfigView): boolean {
  if (action.metadata?.untrusted === true) return true;
  const actor = action.metadata?.actor;
  if (actor?.untrusted) return true;
  if (CHAT_SOURCES.has(action.source)) return actor?.kind !== 'operator' && !requesterIsAdmin(actor, config);
  return false;
}

export function bringsOutsideContent(skill: SkillManifest | undefined): boolean {
  if (!skill) return false;
  return Boolean(skill.isResearch) || OUTSIDE_CATEGORIES.has(skill.category) || OUTSIDE_NAMES.test(skill.name);
}
