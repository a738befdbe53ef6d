/**
 * THE decision whether an actor may run a skill. Dispatch calls it before every skill call;
 * there is no other path to a skill. It fails closed: a malformed input, a missing setting or
 * an exception inside means "no". The caller logs every refusal.
 *
 * Order of the checks, first refusal wins:
 * 1. safe mode: run_command and create_custom_skill are off for everyone, the operator included;
 * 2. privileged skills (spec admin-only list, `adminOnly`, `isDangerous`) need an admin;
 * 3. a privileged skill never runs on work that untrusted content started (a web page, an email,
 *    a non-admin chat) unless the person behind it is the local operator: a prompt injection
 *    must not reach a shell through an admin's forwarded email;
 * 4. an outbound skill (outbound.ts: send_file, send_chat*, send_email, `isOutbound` ...) on untrusted
 *    work may only answer the requester (the chat the action came from, the person behind it), unless
 *    the local operator is behind the work; a call whose recipient cannot be read is refused.
 */
import { describeActor, humanBehind, isUntrusted } from '../../sdk/actor.js';
import { type Address, requesterOf, sameAddress } from '../../sdk/outbound.js';
import type { Action, Actor, ConfigView, SkillManifest } from '../../sdk/types.js';
import { ErrorCodes, type ErrorCode } from '../errors.js';
import { isPrivilegedSkill, SAFE_MODE_BLOCKED_SKILLS } from './admin-skills.js';
import { isAdmin } from './is-admin.js';
import { isOutboundSkill, recipientsOf } from './outbound.js';

export interface AuthorizeInput {
  actor: Actor;
  skill: SkillManifest & { plugin?: string };
  config: ConfigView;
  /** The call's arguments, validated: outbound skills are judged by whom they send to. */
  args?: unknown;
  /** The action the call is made for: whom the work answers. */
  action?: Action;
}

/**
 * `approvable`: the refusal is rule 3 only (an admin's work that untrusted content reached), so an admin may still
 * approve this one call in the chat (docs/approvals.md); dispatch then asks the `approvals` capability.
 */
export type AuthorizeResult = { allowed: true } | { allowed: false; code: ErrorCode; reason: string; approvable?: true };

const ALLOWED: AuthorizeResult = Object.freeze({ allowed: true });

export function authorize(input: AuthorizeInput): AuthorizeResult {
  try {
    return decide(input);
  } catch {
    return deny(ErrorCodes.FORBIDDEN, 'The permission check failed, so the skill was not run.');
  }
}

function decide({ actor, skill, config, args, action }: AuthorizeInput): AuthorizeResult {
  if (!actor || typeof actor !== 'object' || !isActorKind(actor.kind)) {
    return deny(ErrorCodes.FORBIDDEN, 'The request does not say who is asking, so no skill can run.');
  }
  if (!skill || typeof skill.name !== 'string' || skill.name === '') {
    return deny(ErrorCodes.FORBIDDEN, 'The skill has no name, so it cannot be checked and does not run.');
  }
  const name = skill.name;

  if (SAFE_MODE_BLOCKED_SKILLS.has(name) && safeModeOn(config)) {
    return deny(ErrorCodes.SAFE_MODE, `${name} is disabled while safe mode is on (an operator can turn off safeMode).`);
  }

  if (isPrivilegedSkill(skill)) {
    if (!isAdmin(actor, config)) {
      return deny(ErrorCodes.FORBIDDEN, `${name} is admin-only and ${describeActor(actor)} is not an admin${adminHint(actor)}.`);
    }
    if (isUntrusted(actor) && humanBehind(actor)?.kind !== 'operator') {
      return {
        allowed: false,
        code: ErrorCodes.FORBIDDEN,
        reason:
          `${name} is refused: this work was started by untrusted content (a web page, an email, a non-admin chat or a message quoted from one), ` +
          'and privileged skills run on such work only when the local operator asks.',
        approvable: true,
      };
    }
  }

  if (isOutboundSkill(skill) && isUntrusted(actor) && humanBehind(actor)?.kind !== 'operator')
    return outboundDecision(name, actor, args, action);
  return ALLOWED;
}

const UNTRUSTED_WORK =
  'this work is untrusted (it was started by, or has read, content nobody vetted: a web page, an email, a non-admin chat, knowledge content or a quoted message)';

/** Rule 4: on untrusted work an outbound skill may only answer the requester. */
function outboundDecision(name: string, actor: Actor, args: unknown, action: Action | undefined): AuthorizeResult {
  const to = recipientsOf(name, args, action);
  if (!to) {
    return deny(
      ErrorCodes.FORBIDDEN,
      `${name} is refused: ${UNTRUSTED_WORK}, and on such work a skill that sends something out of Keel may only answer the requester; ` +
        `whom ${name} would send to cannot be told from its arguments, so it does not run (the local operator may run it).`,
    );
  }
  const requester = requesterOf(actor, action);
  const others = to.filter((r) => !requester.some((q) => sameAddress(q, r)));
  if (others.length === 0) return ALLOWED;
  return deny(
    ErrorCodes.FORBIDDEN,
    `${name} is refused: ${UNTRUSTED_WORK}, and on such work a skill that sends something out of Keel may only answer the requester ` +
      `(${requester.length ? requester.map(label).join(' or ') : 'nobody: this work has no requester to answer'}), not ${others.map(label).join(', ')}.`,
  );
}

function label(a: Address): string {
  return `${a.channel} ${a.id}`;
}

function deny(code: ErrorCode, reason: string): AuthorizeResult {
  return { allowed: false, code, reason };
}

function isActorKind(kind: unknown): kind is Actor['kind'] {
  return kind === 'operator' || kind === 'user' || kind === 'agent';
}

/** Only an explicit `false` (or no setting at all, whose default is off) counts as off. */
function safeModeOn(config: ConfigView): boolean {
  const v = config.get<unknown>('safeMode');
  return v !== false && v !== undefined;
}

function adminHint(actor: Actor): string {
  const who = humanBehind(actor);
  if (who?.kind !== 'user' || !who.userId) return '';
  return ` (an operator can add them to adminUsers.${who.channel})`;
}
