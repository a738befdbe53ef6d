import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  actorLabel,
  AUTONOMY_SOURCE,
  chainOf,
  describeActor,
  humanBehind,
  isAutonomous,
  isUntrusted,
  MAX_ACTOR_DEPTH,
  OPERATOR_SOURCES,
  principalOf,
  type Actor,
} from '../../sdk/index.js';

const alice: Actor = { kind: 'user', channel: 'chatA', userId: '42' };
const operator: Actor = { kind: 'operator', channel: 'cli' };
const agentFor = (who: Actor | undefined, extra: Partial<Actor> = {}): Actor => ({
  kind: 'agent',
  channel: 'chatA',
  ...(who ? { onBehalfOf: who } : {}),
  ...extra,
});
/** An agent chain of `agents` agents working for `who`. */
function nest(agents: number, who?: Actor): Actor {
  let a = who;
  for (let i = 0; i < agents; i++) a = agentFor(a);
  return a as Actor;
}

describe('principalOf and humanBehind', () => {
  it('follow agents to the human', () => {
    expect(principalOf(nest(3, alice))).toBe(alice);
    expect(humanBehind(nest(3, alice))).toBe(alice);
    expect(humanBehind(alice)).toBe(alice);
    expect(humanBehind(agentFor(operator))).toBe(operator);
  });

  it('the agent on its own: it is its own principal, with no human behind it', () => {
    const solo = nest(2);
    expect(principalOf(solo)?.kind).toBe('agent');
    expect(humanBehind(solo)).toBeUndefined();
    expect(humanBehind(undefined)).toBeUndefined();
  });

  it('a chain longer than MAX_ACTOR_DEPTH has nobody behind it', () => {
    expect(humanBehind(nest(MAX_ACTOR_DEPTH - 1, alice))).toBe(alice);
    expect(humanBehind(nest(MAX_ACTOR_DEPTH, alice))).toBeUndefined();
    expect(principalOf(nest(MAX_ACTOR_DEPTH, alice))).toBeUndefined();
    expect(principalOf(nest(MAX_ACTOR_DEPTH + 5))).toBeUndefined();
  });

  it('a cycle or a link that is not an actor cannot be followed', () => {
    const a: Actor = { kind: 'agent', channel: 'chatA' };
    const b: Actor = { kind: 'agent', channel: 'chatA', onBehalfOf: a };
    a.onBehalfOf = b;
    expect(chainOf(a).complete).toBe(false);
    expect(humanBehind(a)).toBeUndefined();
    const junk = agentFor('operator' as unknown as Actor);
    expect(chainOf(junk)).toEqual({ links: [junk], complete: false });
    expect(humanBehind(junk)).toBeUndefined();
  });
});

describe('isUntrusted', () => {
  it('is true when any actor in the chain is marked untrusted', () => {
    expect(isUntrusted(alice)).toBe(false);
    expect(isUntrusted(nest(3, alice))).toBe(false);
    expect(isUntrusted(nest(3, { ...alice, untrusted: true }))).toBe(true);
    expect(isUntrusted(agentFor(alice, { untrusted: true }))).toBe(true);
    expect(isUntrusted(undefined)).toBe(false);
  });

  it('fails closed: a chain longer than MAX_ACTOR_DEPTH is untrusted, however trusted each link says it is', () => {
    expect(isUntrusted(nest(MAX_ACTOR_DEPTH - 1, operator))).toBe(false);
    expect(isUntrusted(nest(MAX_ACTOR_DEPTH, operator))).toBe(true);
    expect(isUntrusted(nest(50, operator))).toBe(true);
    expect(isUntrusted(agentFor({ kind: 'nobody' } as unknown as Actor))).toBe(true);
  });
});

describe('isAutonomous', () => {
  it('is the agent on its own, or the autonomy channel anywhere, or an unreadable chain', () => {
    expect(isAutonomous(nest(1))).toBe(true);
    expect(isAutonomous(agentFor({ kind: 'agent', channel: AUTONOMY_SOURCE }))).toBe(true);
    expect(isAutonomous(agentFor(alice))).toBe(false);
    expect(isAutonomous(operator)).toBe(false);
    expect(isAutonomous(nest(MAX_ACTOR_DEPTH + 1, alice))).toBe(true);
  });
});

describe('describeActor and actorLabel', () => {
  it('name the actor and whom it works for', () => {
    expect(describeActor(operator)).toBe('the operator (cli)');
    expect(describeActor(alice)).toBe('user 42 on chatA');
    expect(describeActor({ kind: 'user', channel: 'chatB' })).toBe('an unidentified user on chatB');
    expect(describeActor(nest(2, alice))).toBe('the agent working for user 42 on chatA');
    expect(describeActor(nest(1))).toBe('the agent acting on its own');
    expect(describeActor(undefined)).toBe('nobody');
    expect(describeActor(nest(MAX_ACTOR_DEPTH + 1, alice))).toMatch(/too long or malformed/);
  });

  it('label the principal for records', () => {
    expect(actorLabel(agentFor(alice))).toBe('chatA:42');
    expect(actorLabel(agentFor(operator))).toBe('operator');
    expect(actorLabel(nest(1))).toBe('agent (chatA)');
    expect(actorLabel(nest(MAX_ACTOR_DEPTH + 1, alice))).toBe('unknown');
  });
});

describe('OPERATOR_SOURCES', () => {
  it('are the sources the operator pushes from; autonomy is the agent, not the operator', () => {
    expect([...OPERATOR_SOURCES].sort()).toEqual(['cli', 'gateway', 'scheduler', 'ws']);
    expect(OPERATOR_SOURCES.has(AUTONOMY_SOURCE)).toBe(false);
  });
});

describe('one walker of onBehalfOf', () => {
  const root = join(import.meta.dirname, '..', '..');
  function* sources(dir: string): Generator<string> {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) yield* sources(path);
      else if (/\.(ts|tsx|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield path;
    }
  }
  // A loop (for/while, or a recursion step) that moves along the chain: `x = x.onBehalfOf`, `cur.onBehalfOf` in a
  // for-loop header, or a function calling itself with `.onBehalfOf`.
  const WALK = /(\w+)\s*=\s*\1(?:\?)?\.onBehalfOf\b|for\s*\([^)]*\.onBehalfOf|\w+\((?:\w+\.)?\w+\??\.onBehalfOf\b[^)]*depth/;

  it('the pattern recognises the walks it replaced', () => {
    expect(WALK.test('for (let d = 0; cur && d < 8; d++, cur = cur.onBehalfOf) if (cur.untrusted) return true;')).toBe(true);
    expect(WALK.test('for (let d = 0; who?.kind === "agent" && d < 5; d++) who = who.onBehalfOf;')).toBe(true);
    expect(WALK.test('while (a) a = a?.onBehalfOf;')).toBe(true);
    expect(WALK.test('return actor.onBehalfOf !== undefined && check(actor.onBehalfOf, config, depth + 1);')).toBe(true);
    expect(WALK.test('...(action.metadata.actor ? { onBehalfOf: action.metadata.actor } : {}),')).toBe(false);
  });

  it('no file outside sdk/actor.ts walks onBehalfOf itself', () => {
    const offenders: string[] = [];
    for (const dir of ['kernel', 'sdk', 'plugins', 'examples', 'bench']) {
      for (const file of sources(join(root, dir))) {
        const rel = relative(root, file);
        if (rel === join('sdk', 'actor.ts')) continue;
        if (WALK.test(readFileSync(file, 'utf8'))) offenders.push(rel);
      }
    }
    expect(offenders, 'use chainOf / principalOf / humanBehind / isUntrusted from sdk/actor.ts').toEqual([]);
  });
});
