import { describe, expect, it } from 'vitest';
import { sessionKey } from '../../../kernel/policy/index.js';
import type { Actor, ConfigView } from '../../../sdk/types.js';

function view(values: Record<string, unknown>): ConfigView {
  return { get: <T>(k: string) => values[k] as T, has: (k) => values[k] !== undefined, all: () => ({ ...values }) };
}

const onA: Actor = { kind: 'user', channel: 'chatA', userId: '111' };
const onC: Actor = { kind: 'user', channel: 'chatC', userId: '555' };
const onD: Actor = { kind: 'user', channel: 'chatD', userId: 'U9' };
const operator: Actor = { kind: 'operator', channel: 'cli' };
const links = { 'chatC:555': 'chatA:111', 'chatD:U9': 'chatC:555' };

describe('sessionKey', () => {
  it('per-channel-peer (the default): one session per user per channel', () => {
    for (const cfg of [view({}), view({ sessionScope: 'per-channel-peer', identityLinks: links }), view({ sessionScope: 'bogus' })]) {
      expect(sessionKey(onA, cfg)).toBe('chatA:111');
      expect(sessionKey(onC, cfg)).toBe('chatC:555');
      expect(sessionKey(operator, cfg)).toBe('operator');
    }
  });

  it('per-peer: linked identities share one session, whichever way and however far the links go', () => {
    const cfg = view({ sessionScope: 'per-peer', identityLinks: links });
    const keys = [onA, onC, onD].map((a) => sessionKey(a, cfg));
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toBe('chatA:111');
    expect(sessionKey({ kind: 'user', channel: 'chatB', userId: '1@x' }, cfg)).toBe('chatB:1@x');
    expect(sessionKey(onC, view({ sessionScope: 'per-peer' }))).toBe('chatC:555');
    expect(sessionKey(operator, cfg)).toBe('operator');
  });

  it('main: one global session for everybody', () => {
    const cfg = view({ sessionScope: 'main', identityLinks: links });
    for (const a of [onA, onC, operator, { kind: 'agent', channel: 'autonomy' } as Actor]) expect(sessionKey(a, cfg)).toBe('main');
  });

  it('puts the agent in the session of the person it works for', () => {
    const cfg = view({});
    expect(sessionKey({ kind: 'agent', channel: 'chatA', onBehalfOf: onA }, cfg)).toBe('chatA:111');
    expect(sessionKey({ kind: 'agent', channel: 'autonomy' }, cfg)).toBe('agent');
    expect(sessionKey({ kind: 'user', channel: 'email', userId: 'Ann@Example.com' }, cfg)).toBe('email:ann@example.com');
  });
});
