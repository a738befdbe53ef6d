import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import type { ConfigOrigin } from '../../../sdk/types.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

const OPERATOR: ConfigOrigin = { kind: 'operator', actor: { kind: 'operator', channel: 'cli' } };

describe('saving configuration changes', () => {
  it('creates the file with mode 0600 and leaves no temporary file behind', async () => {
    const f = fixture();
    const c = await f.load();
    const out = await c.set('testPort', 4100, OPERATOR);
    expect(out).toMatchObject({ status: 'applied', key: 'testPort', value: 4100 });
    expect(statSync(f.file).mode & 0o777).toBe(0o600);
    expect(readFileSync(f.file, 'utf8')).toBe('testPort: 4100\n');
    expect(readdirSync(f.home).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect((await f.load()).get('testPort')).toBe(4100);
  });

  it('tightens an existing world-readable file to 0600', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: 1\n');
    chmodSync(f.file, 0o644);
    const c = await f.load();
    expect(statSync(f.file).mode & 0o777).toBe(0o600);
    chmodSync(f.file, 0o644);
    await c.set('testPort', 2, OPERATOR);
    expect(statSync(f.file).mode & 0o777).toBe(0o600);
  });

  it("keeps the user's comments, order and other keys", async () => {
    const f = fixture();
    const original = [
      '# Keel configuration',
      '',
      '# the port everyone uses',
      'testPort: 3100 # keep this note',
      'testOrigins:',
      '  - https://a.test # first origin',
      'someOtherPluginKey: hello # not loaded today',
      '',
    ].join('\n');
    writeFileSync(f.file, original);
    const c = await f.load();
    await c.set('testPort', 4200, OPERATOR);
    await c.set('safeMode', true, OPERATOR);
    const text = readFileSync(f.file, 'utf8');
    expect(text).toContain('# Keel configuration');
    expect(text).toContain('# the port everyone uses');
    expect(text).toContain('testPort: 4200 # keep this note');
    expect(text).toContain('  - https://a.test # first origin');
    expect(text).toContain('someOtherPluginKey: hello # not loaded today');
    expect(text.indexOf('testPort')).toBeLessThan(text.indexOf('someOtherPluginKey'));
    expect(text.trimEnd().endsWith('safeMode: true')).toBe(true);
  });

  it('keeps a hand edit made after loading', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: 1\n');
    const c = await f.load();
    writeFileSync(f.file, 'testPort: 1\ntestRegion: eu-north-1\n');
    await c.set('testPort', 2, OPERATOR);
    expect(readFileSync(f.file, 'utf8')).toContain('testRegion: eu-north-1');
    expect(c.get('testRegion')).toBe('eu-north-1');
  });

  it('rejects an unknown key and a wrong type, changing nothing', async () => {
    const f = fixture();
    writeFileSync(f.file, '# mine\ntestPort: 1\n');
    const before = readFileSync(f.file, 'utf8');
    const c = await f.load();
    await expect(c.set('testPrt', 2, OPERATOR)).rejects.toMatchObject({
      code: ErrorCodes.CONFIG_UNKNOWN_KEY,
      message: expect.stringContaining('did you mean testPort'),
    });
    await expect(c.set('testPort', 'two', OPERATOR)).rejects.toMatchObject({
      code: ErrorCodes.CONFIG_INVALID_VALUE,
      message: expect.stringContaining('expected a number'),
    });
    await expect(c.set('adminUsers', { chatA: '123' }, OPERATOR)).rejects.toMatchObject({ code: ErrorCodes.CONFIG_INVALID_VALUE });
    expect(readFileSync(f.file, 'utf8')).toBe(before);
    expect(c.get('testPort')).toBe(1);
  });

  it('refuses to overwrite a file that no longer parses', async () => {
    const f = fixture();
    const c = await f.load();
    writeFileSync(f.file, 'testPort: [1,\n');
    await expect(c.set('testPort', 2, OPERATOR)).rejects.toMatchObject({ code: ErrorCodes.CONFIG_FILE_INVALID });
    expect(readFileSync(f.file, 'utf8')).toBe('testPort: [1,\n');
  });

  it('never copies environment values into the file, and says when the environment shadows a save', async () => {
    const f = fixture();
    const secret = 'sk-env-secret-0123456789';
    const c = await f.load({ env: { TEST_API_KEY: secret, TEST_PORT: '9999', TEST_TOKEN: 'tok-env-abcdefghijk' } });
    expect(c.get('testApiKey')).toBe(secret);
    await c.set('testRegion', 'eu-west-3', OPERATOR);
    const out = await c.set('testPort', 4000, OPERATOR);
    const text = readFileSync(f.file, 'utf8');
    expect(text).not.toContain(secret);
    expect(text).not.toContain('tok-env');
    expect(text).not.toContain('9999');
    expect(text).toContain('testPort: 4000');
    expect(c.get('testPort')).toBe(9999);
    expect(out).toMatchObject({ status: 'applied', shadowedBy: { layer: 'env', name: 'TEST_PORT' } });
    expect((out as { message?: string }).message).toContain('TEST_PORT');
    expect(f.log.lines.some((l) => l.level === 'warn' && l.text.includes('TEST_PORT'))).toBe(true);
    expect(f.log.text()).not.toContain(secret);
  });

  it('serialises concurrent saves so none is lost', async () => {
    const f = fixture();
    const c = await f.load();
    await Promise.all([
      c.set('testPort', 1, OPERATOR),
      c.set('testRegion', 'r', OPERATOR),
      c.set('testEnabled', true, OPERATOR),
      c.set('queueFailedLimit', 7, OPERATOR),
    ]);
    const again = await f.load();
    expect([again.get('testPort'), again.get('testRegion'), again.get('testEnabled'), again.get('queueFailedLimit')]).toEqual([
      1,
      'r',
      true,
      7,
    ]);
  });

  it('announces changes (secrets masked) and reloads hand edits as origin "file"', async () => {
    const f = fixture();
    const c = await f.load();
    const events: Array<{ key: string; value: unknown; kind: string }> = [];
    const off = c.onChange((e) => events.push({ key: e.key, value: e.value, kind: e.origin.kind }));
    await c.set('testPort', 4000, OPERATOR);
    await c.set('testToken', 'tok-abcdefghijklmnop', OPERATOR);
    expect(events).toEqual([
      { key: 'testPort', value: 4000, kind: 'operator' },
      { key: 'testToken', value: 'tok-****', kind: 'operator' },
    ]);
    writeFileSync(f.file, `${readFileSync(f.file, 'utf8')}safeMode: true\n`);
    const { changed } = await c.reload();
    expect(changed).toEqual(['safeMode']);
    expect(c.get('safeMode')).toBe(true);
    expect(events.at(-1)).toEqual({ key: 'safeMode', value: true, kind: 'file' });
    off();
    await c.set('testPort', 1, OPERATOR);
    expect(events).toHaveLength(3);
    expect(f.log.text()).not.toContain('tok-abcdefghijklmnop');
  });

  it('keeps the last good configuration when a reload finds broken YAML', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: 1\n');
    const c = await f.load();
    writeFileSync(f.file, 'testPort: [\n');
    await expect(c.reload()).rejects.toMatchObject({ code: ErrorCodes.CONFIG_FILE_INVALID });
    expect(c.get('testPort')).toBe(1);
  });
});
