/**
 * Who is behind a request, and whether it can be trusted: the one place that walks an actor's `onBehalfOf` chain.
 * The kernel's policy and every plugin decide with these functions, so a chain is never read two ways.
 *
 * The chain is the actor, the actor it works for (`onBehalfOf`), and so on. It is followed at most
 * {@link MAX_ACTOR_DEPTH} links; a longer chain (or a cycle, or a link that is not an actor) cannot be read to
 * its end, and every decision treats it the way that refuses: untrusted, nobody behind it.
 */
import type { Actor } from './types.js';

/**
 * How many actors a chain may hold: the agent, its sub-agents (delegation nests at most 2 levels) and the person
 * they all work for, with room to spare. Anything longer is refused, not truncated.
 * @example if (chainOf(actor).complete === false) refuse('the request passed through too many agents');
 */
export const MAX_ACTOR_DEPTH = 8;

/**
 * Sources whose actions the local operator (or Keel on the operator's behalf) pushed: an action from one of these
 * without a recorded actor runs as the operator, and its answer goes back to no chat.
 * @example const actor = action.metadata.actor ?? (OPERATOR_SOURCES.has(action.source) ? { kind: 'operator', channel: action.source } : undefined);
 */
export const OPERATOR_SOURCES: ReadonlySet<string> = new Set(['cli', 'gateway', 'ws', 'scheduler']);

/**
 * The source (and channel) of work the agent started on its own in autonomy mode: no person is behind it.
 * @example if (action.source === AUTONOMY_SOURCE) return; // nobody to answer
 */
export const AUTONOMY_SOURCE = 'autonomy';

/**
 * An actor chain as far as it could be read.
 * @example const { links, complete } = chainOf(call.actor); if (!complete) refuse();
 */
export interface ActorChain {
  /** The actor first, then whom each works for. */
  links: Actor[];
  /** False when the chain was longer than MAX_ACTOR_DEPTH, cyclic, or held something that is not an actor. */
  complete: boolean;
}

function isActor(x: unknown): x is Actor {
  if (x === null || typeof x !== 'object') return false;
  const kind = (x as { kind?: unknown }).kind;
  return kind === 'operator' || kind === 'user' || kind === 'agent';
}

/**
 * The chain of an actor: itself, whom it works for, and so on (the only loop over `onBehalfOf` in Keel).
 * @example chainOf({ kind: 'agent', channel: 'chatA', onBehalfOf: alice }) // { links: [agent, alice], complete: true }
 */
export function chainOf(actor: Actor | undefined): ActorChain {
  const links: Actor[] = [];
  let cur: unknown = actor;
  while (cur !== undefined) {
    if (!isActor(cur) || links.length >= MAX_ACTOR_DEPTH || links.includes(cur)) return { links, complete: false };
    links.push(cur);
    cur = cur.onBehalfOf;
  }
  return { links, complete: true };
}

/**
 * Whose work this is: the first actor in the chain that is not an agent, or the agent itself when it acts on its
 * own (nobody behind it). Undefined without an actor or when the chain cannot be read to its end.
 * @example principalOf({ kind: 'agent', channel: 'autonomy' }) // the agent: it works for nobody
 */
export function principalOf(actor: Actor | undefined): Actor | undefined {
  const { links, complete } = chainOf(actor);
  const human = links.find((a) => a.kind !== 'agent');
  if (human) return human;
  return complete ? links.at(-1) : undefined;
}

/**
 * The human behind an actor: the operator or a user, found by following `onBehalfOf` through agents. Undefined for
 * the agent on its own and for a chain that cannot be read to its end.
 * @example if (!humanBehind(call.actor)) return refuse('the agent cannot approve on its own');
 */
export function humanBehind(actor: Actor | undefined): Actor | undefined {
  const who = principalOf(actor);
  return who && who.kind !== 'agent' ? who : undefined;
}

/**
 * Whether untrusted content (a web page, a mail, a non-admin's message) started this work: any actor in the chain
 * marked `untrusted`. A chain that cannot be read to its end counts as untrusted (fail closed).
 * @example if (isUntrusted(call.actor)) throw forbiddenError('Work started by untrusted content cannot approve.');
 */
export function isUntrusted(actor: Actor | undefined): boolean {
  const { links, complete } = chainOf(actor);
  return !complete || links.some((a) => a.untrusted === true);
}

/**
 * Whether the agent acts on its own in autonomy mode: nobody behind it, or the autonomy channel anywhere in the
 * chain. A chain that cannot be read to its end has nobody provably behind it, so it counts as autonomous.
 * @example if (isAutonomous(call.actor)) limitToAllowedChannels();
 */
export function isAutonomous(actor: Actor | undefined): boolean {
  if (!actor) return false;
  const { links, complete } = chainOf(actor);
  return !complete || links.some((a) => a.channel === AUTONOMY_SOURCE) || principalOf(actor)?.kind === 'agent';
}

function person(a: Actor): string {
  if (a.kind === 'operator') return `the operator (${a.channel})`;
  if (a.kind === 'user') return a.userId ? `user ${a.userId} on ${a.channel}` : `an unidentified user on ${a.channel}`;
  return `the agent (${a.channel})`;
}

/**
 * A phrase naming the actor for log lines and refusals, with whom it works for.
 * @example describeActor({ kind: 'agent', channel: 'chatA', onBehalfOf: { kind: 'user', channel: 'chatA', userId: '42' } })
 * // 'the agent working for user 42 on chatA'
 */
export function describeActor(actor: Actor | undefined): string {
  if (!actor) return 'nobody';
  const { links, complete } = chainOf(actor);
  if (!complete) return `${links[0] ? person(links[0]) : 'an unreadable actor'} (its chain of actors is too long or malformed to follow)`;
  if (actor.kind !== 'agent') return person(actor);
  const human = humanBehind(actor);
  return human ? `the agent working for ${person(human)}` : 'the agent acting on its own';
}

/**
 * A short, stable label of whose work this is, for records (`requestedBy`, `scheduledBy`): `operator`,
 * `agent (<channel>)`, or `<channel>:<userId>`.
 * @example actorLabel({ kind: 'user', channel: 'chatA', userId: '42' }) // 'chatA:42'
 */
export function actorLabel(actor: Actor | undefined): string {
  const who = principalOf(actor);
  if (!who) return 'unknown';
  if (who.kind === 'operator') return 'operator';
  if (who.kind === 'agent') return `agent (${who.channel})`;
  return `${who.channel}:${who.userId ?? '?'}`;
}
