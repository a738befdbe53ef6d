/**
 * Which work counts as started by untrusted content (DESIGN section 8). The agent marks its skill calls
 * `untrusted: true` in these cases, and the kernel then refuses privileged skills, and lets outbound skills
 * (send_file, send_chat*, send_email ...) answer only the requester, unless the local operator is behind the
 * work (kernel/policy/authorize.ts):
 * - the action carries `metadata.untrusted === true`, or its requester is flagged untrusted;
 * - the action quotes a message (`metadata.quoted`, the message a chat task replies to) that is not marked
 *   trusted: neither the bot's own nor an admin's, so the model reads words nobody vetted from the start;
 * - the action came from a chat channel or email (chatA..chatD, email, gateway-chat) and the requester is not
 *   an admin there (the kernel's decision, capability `kernel:policy`: `adminUsers` and `identityLinks`);
 * - an earlier skill in the same action brought outside content in (see `bringsOutsideContent`): from then on,
 *   every call of that action is untrusted, because the model has read text nobody vetted.
 */
import { isUntrusted } from '../../../sdk/actor.js';
import type { Action, Actor, SkillManifest } from '../../../sdk/index.js';
import { quotedOf } from './quoted.js';

export const CHAT_SOURCES: ReadonlySet<string> = new Set(['chatA', 'chatB', 'chatC', 'chatD', 'email', 'gateway-chat']);
/** Categories of skills that return text from outside (web pages, mail, messages of others, stored documents). */
export const OUTSIDE_CATEGORIES: ReadonlySet<string> = new Set(['web', 'browser', 'search', 'email', 'messaging', 'knowledge', 'mcp']);
const OUTSIDE_NAMES = /^(?:mcp_|web_|http_|browser_|extract_|fetch_email|search_emails|rag_search|index_emails)/;

/** `isAdmin` is the kernel's decision (capability `kernel:policy`); without it nobody is an admin. */
export function startsUntrusted(action: Action, isAdmin: (actor: Actor | undefined) => boolean): boolean {
  if (action.metadata?.untrusted === true) return true;
  const quoted = quotedOf(action.metadata);
  if (quoted && !quoted.trusted) return true;
  const actor = action.metadata?.actor;
  if (actor && isUntrusted(actor)) return true;
  if (CHAT_SOURCES.has(action.source)) return actor?.kind !== 'operator' && !isAdmin(actor);
  return false;
}

export function bringsOutsideContent(skill: SkillManifest | undefined): boolean {
  if (!skill) return false;
  return Boolean(skill.isResearch) || OUTSIDE_CATEGORIES.has(skill.category) || OUTSIDE_NAMES.test(skill.name);
}
