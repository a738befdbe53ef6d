/**
 * adminUsers is an open record: ids are checked against the user-id form their channel declares (a channel
 * plugin's manifest, or SPEC's table for the built-in names), and a change naming an unknown channel is refused.
 */
import { readFileSync, existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { validateManifest } from '../../../kernel/plugins/manifest-schema.js';
import { isAdmin } from '../../../kernel/policy/index.js';
import { SPEC_CHANNELS } from '../../../sdk/channel.js';
import type { ConfigOrigin } from '../../../sdk/types.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

const OPERATOR: ConfigOrigin = { kind: 'operator', actor: { kind: 'operator', channel: 'cli' } };
const ECHO = { name: 'echo', userIdPattern: '^e-[0-9]+$', userIdExample: 'e-1' };

describe('adminUsers validation', () => {
  it("accepts every SPEC channel's example id before any channel plugin is installed", async () => {
    const c = await fixture().load();
    const value = Object.fromEntries(Object.values(SPEC_CHANNELS).map((s) => [s.name, [s.userIdExample]]));
    await expect(c.set('adminUsers', value, OPERATOR)).resolves.toMatchObject({ status: 'applied' });
    expect(c.get('adminUsers')).toEqual(value);
  });

  it.each([
    ['chatA', 'alice', /adminUsers\.chatA: "alice" is not a chatA user id .*e\.g\. "123456789"/],
    ['chatB', '+49 151 234', /adminUsers\.chatB: .*not a chatB user id/],
    ['chatC', '1234567890123456', /adminUsers\.chatC: .*\\d\{17,20\}/],
    ['chatD', 'alice', /adminUsers\.chatD: .*U01ABCDEF23/],
    ['email', 'not-an-address', /adminUsers\.email: .*owner@example\.com/],
  ])('refuses a %s id of the wrong form (%s) and changes nothing', async (channel, id, message) => {
    const f = fixture();
    const c = await f.load();
    await c.set('adminUsers', { chatA: ['111'] }, OPERATOR);
    const err = await c.set('adminUsers', { chatA: ['111'], [channel]: [id] }, OPERATOR).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.CONFIG_INVALID_VALUE });
    expect((err as Error).message).toMatch(message);
    expect(c.get('adminUsers')).toEqual({ chatA: ['111'] });
    expect(readFileSync(f.file, 'utf8')).not.toContain(id);
  });

  it('refuses an unknown channel name on change, naming the known ones', async () => {
    const f = fixture();
    const c = await f.load();
    const err = await c.set('adminUsers', { telegram: ['1'] }, OPERATOR).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/unknown channel "telegram".*known channels: chatA, chatB, chatC, chatD, email/);
    expect(existsSync(f.file)).toBe(false);
    expect(() => c.parseCliValue('adminUsers', '{"telegram":["1"]}')).toThrow(/unknown channel "telegram"/);
  });

  it("validates a user channel's ids against the pattern its manifest declares, and forgets it when unloaded", async () => {
    const f = fixture();
    f.registry.register('echo-plugin', {}, ECHO);
    const c = await f.load();
    await expect(c.set('adminUsers', { echo: ['e-42'] }, OPERATOR)).resolves.toMatchObject({ status: 'applied' });
    await expect(c.set('adminUsers', { echo: ['42'] }, OPERATOR)).rejects.toThrow(
      /adminUsers\.echo: "42" is not a echo user id .*\^e-\[0-9\]\+\$.*"e-1"/,
    );
    expect(() => f.registry.register('other-plugin', {}, ECHO)).toThrow(
      /Channel "echo" is declared by both "echo-plugin" and "other-plugin"/,
    );
    f.registry.unregister('echo-plugin');
    await expect(c.set('adminUsers', { echo: ['e-43'] }, OPERATOR)).rejects.toThrow(/unknown channel "echo".*known channels: chatA/);
  });

  it('a manifest declaring a SPEC name replaces the fallback form', async () => {
    const f = fixture();
    f.registry.register('my-chata', {}, { name: 'chatA', userIdPattern: '^tg[0-9]+$', userIdExample: 'tg1' });
    const c = await f.load();
    await expect(c.set('adminUsers', { chatA: ['tg5'] }, OPERATOR)).resolves.toMatchObject({ status: 'applied' });
    await expect(c.set('adminUsers', { chatA: ['5'] }, OPERATOR)).rejects.toThrow(/not a chatA user id/);
  });

  it('keeps a file value naming a channel whose plugin loads later, and checks it once the plugin declares its form', async () => {
    const f = fixture();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(f.file, 'adminUsers:\n  echo: ["e-7"]\n  chatA: ["111"]\n');
    const c = await f.load();
    expect(c.get('adminUsers')).toEqual({ echo: ['e-7'], chatA: ['111'] });
    const echoAdmin = { kind: 'user' as const, channel: 'echo', userId: 'e-7' };
    expect(isAdmin(echoAdmin, c)).toBe(true);
    // A plugin declaring a form the file's ids do not have: the value becomes invalid, nobody is admin (fail closed).
    f.registry.register('echo-plugin', {}, { name: 'echo', userIdPattern: '^x$', userIdExample: 'x' });
    expect(c.get('adminUsers')).toBeUndefined();
    expect(isAdmin(echoAdmin, c)).toBe(false);
    expect(isAdmin({ kind: 'user', channel: 'chatA', userId: '111' }, c)).toBe(false);
  });
});

describe('the manifest channel field', () => {
  const base = { id: 'echo', version: '1.0.0', kind: 'channel', description: 'echo', provides: ['channel:echo'] };
  it('accepts an anchored pattern that matches its example', () => {
    expect(validateManifest({ ...base, channel: ECHO }, 'plugins/echo').channel).toEqual(ECHO);
  });
  it.each([
    [{ ...ECHO, userIdPattern: '^(e$' }, /not a valid regular expression/],
    [{ ...ECHO, userIdPattern: 'e-[0-9]+' }, /must be anchored/],
    [{ ...ECHO, userIdExample: 'x' }, /userIdExample "x" does not match/],
    [{ name: 'echo', userIdPattern: '^e$' }, /userIdExample/],
    [{ ...ECHO, name: 'other' }, /channel.name is "other" but provides does not list "channel:other"/],
  ])('refuses a bad channel field %#', (channel, message) => {
    expect(() => validateManifest({ ...base, channel }, 'plugins/echo')).toThrow(message);
  });
});
