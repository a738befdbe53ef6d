import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes, KeelError } from '../../../kernel/errors.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

function thrown(fn: () => unknown): KeelError {
  try {
    fn();
  } catch (e) {
    if (e instanceof KeelError) return e;
    throw e;
  }
  throw new Error('expected a KeelError');
}

describe('parseCliValue (keel config set <key> <value>)', () => {
  it('reads values by the key type', async () => {
    const c = await fixture().load();
    expect(c.parseCliValue('safeMode', 'true')).toBe(true);
    expect(c.parseCliValue('safeMode', 'no')).toBe(false);
    expect(c.parseCliValue('testPort', '8080')).toBe(8080);
    expect(c.parseCliValue('queueCompletedLimit', '250')).toBe(250);
    expect(c.parseCliValue('commandAllowList', '["git","npm"]')).toEqual(['git', 'npm']);
    expect(c.parseCliValue('commandAllowList', 'git, npm,ls')).toEqual(['git', 'npm', 'ls']);
    expect(c.parseCliValue('commandAllowList', '')).toEqual([]);
    expect(c.parseCliValue('adminUsers', '{"chatA":["123"]}')).toEqual({ chatA: ['123'] });
    expect(c.parseCliValue('sessionScope', 'per-peer')).toBe('per-peer');
    // Strings are verbatim: a secret with spaces or a leading dash survives.
    expect(c.parseCliValue('testApiKey', ' sk-abc def')).toBe(' sk-abc def');
  });

  it('rejects an unknown key with suggestions', async () => {
    const c = await fixture().load();
    const e = thrown(() => c.parseCliValue('safemode', 'true'));
    expect(e.code).toBe(ErrorCodes.CONFIG_UNKNOWN_KEY);
    expect(e.message).toContain('did you mean safeMode');
    const e2 = thrown(() => c.parseCliValue('comandDenyList', '[]'));
    expect(e2.message).toContain('commandDenyList');
    expect(thrown(() => c.parseCliValue('zzzzzzzzzzzz', '1')).message).not.toContain('did you mean');
  });

  it('rejects a wrong type, naming what was expected', async () => {
    const c = await fixture().load();
    const cases: Array<[string, string, RegExp]> = [
      ['testPort', 'eighty', /expected a number|not a number/],
      ['testPort', '', /not a number/],
      ['testPort', '0x10', /not a number/],
      ['safeMode', 'maybe', /boolean/],
      ['queueCompletedLimit', '1.5', /integer/],
      ['queueCompletedLimit', '-1', /at least 0/],
      ['sessionScope', 'everyone', /one of: main, per-peer, per-channel-peer/],
      ['adminUsers', '{"chatZ":["1"]}', /adminUsers/],
      ['adminUsers', 'not json', /JSON/],
    ];
    for (const [key, raw, pattern] of cases) {
      const e = thrown(() => c.parseCliValue(key, raw));
      expect(e.code, `${key}=${raw}`).toBe(ErrorCodes.CONFIG_INVALID_VALUE);
      expect(e.message, `${key}=${raw}`).toMatch(pattern);
      expect(e.message).toContain(key);
    }
  });

  it('never echoes a secret in the error', async () => {
    const f = fixture();
    const Type = (await import('typebox')).default;
    f.registry.register('pinned', {
      pinnedKey: { schema: Type.String({ pattern: '^sk-' }), policy: 'APPROVAL', secret: true, description: 'x' },
    });
    const c = await f.load();
    const e = thrown(() => c.parseCliValue('pinnedKey', 'hunter2-very-secret'));
    expect(e.code).toBe(ErrorCodes.CONFIG_INVALID_VALUE);
    expect(e.message).not.toContain('hunter2');
  });
});
