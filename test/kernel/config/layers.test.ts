import { writeFileSync } from 'node:fs';
import Type from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes, KeelError } from '../../../kernel/errors.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

describe('configuration layers: defaults < file < environment < command line', () => {
  it('takes each layer over the one below it, and says which layer a value came from', async () => {
    const f = fixture();
    expect((await f.load()).get('testPort')).toBe(3100);
    expect((await f.load()).layerOf('testPort')).toBe('default');

    writeFileSync(f.file, 'testPort: 4000\n');
    let c = await f.load();
    expect(c.get('testPort')).toBe(4000);
    expect(c.layerOf('testPort')).toBe('file');

    c = await f.load({ env: { TEST_PORT: '5000' } });
    expect(c.get('testPort')).toBe(5000);
    expect(c.layerOf('testPort')).toBe('env');

    c = await f.load({ env: { TEST_PORT: '5000' }, overrides: { testPort: 6000 } });
    expect(c.get('testPort')).toBe(6000);
    expect(c.layerOf('testPort')).toBe('override');

    // Command-line flags arrive as strings: they are read by the key's type.
    c = await f.load({ env: { TEST_PORT: '5000' }, overrides: { testPort: '7000' } });
    expect(c.get('testPort')).toBe(7000);
  });

  it('reads the first set of several environment names (PROVIDERD_REGION before AWS_REGION)', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testRegion: eu-west-1\n');
    expect((await f.load({ env: { AWS_REGION: 'us-east-1' } })).get('testRegion')).toBe('us-east-1');
    expect((await f.load({ env: { AWS_REGION: 'us-east-1', TESTD_REGION: 'ap-south-1' } })).get('testRegion')).toBe('ap-south-1');
    // An empty variable is "not set": the next name, then the file, applies.
    const c = await f.load({ env: { TESTD_REGION: '', AWS_REGION: '' } });
    expect(c.get('testRegion')).toBe('eu-west-1');
    expect(c.layerOf('testRegion')).toBe('file');
  });

  it('parses environment strings by the key type: booleans, lists, JSON objects', async () => {
    const f = fixture();
    for (const [raw, want] of [
      ['yes', true],
      ['1', true],
      ['TRUE', true],
      ['no', false],
      ['0', false],
      ['false', false],
    ] as const) {
      expect((await f.load({ env: { TEST_ENABLED: raw } })).get('testEnabled')).toBe(want);
    }
    expect((await f.load({ env: { TEST_ORIGINS: 'https://a.test, https://b.test' } })).get('testOrigins')).toEqual([
      'https://a.test',
      'https://b.test',
    ]);
    expect((await f.load({ env: { TEST_ORIGINS: '["x","y"]' } })).get('testOrigins')).toEqual(['x', 'y']);
    expect((await f.load({ env: { TEST_MODELS: '{"providerA":"m1"}' } })).get('testModels')).toEqual({ providerA: 'm1' });
    expect((await f.load({ env: { KEEL_SAFE_MODE: 'on' } })).get('safeMode')).toBe(true);
  });

  it('reports an invalid file value naming key, file and expected type, and falls back to the default', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: "not a port"\nsafeMode: maybe\n');
    const c = await f.load();
    expect(c.get('testPort')).toBe(3100);
    expect(c.layerOf('testPort')).toBe('default');
    expect(c.get('safeMode')).toBe(false);
    const problems = c.problems();
    const port = problems.find((p) => p.key === 'testPort');
    expect(port?.code).toBe(ErrorCodes.CONFIG_FILE_INVALID);
    expect(port?.message).toContain('testPort');
    expect(port?.message).toContain(f.file);
    expect(port?.message).toContain('expected a number');
    expect(problems.find((p) => p.key === 'safeMode')?.message).toContain('boolean');
    expect(f.log.lines.some((l) => l.level === 'error' && l.text.includes('testPort') && l.text.includes(f.file))).toBe(true);
  });

  it('reads YAML 1.1 style words (`yes`, "8080") for typed keys the way the environment is read', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testEnabled: yes\ntestPort: "8080"\n');
    const c = await f.load();
    expect(c.get('testEnabled')).toBe(true);
    expect(c.get('testPort')).toBe(8080);
    expect(c.problems()).toEqual([]);
  });

  it('skips an invalid environment value for the file value below it', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: 4000\n');
    const c = await f.load({ env: { TEST_PORT: 'abc' } });
    expect(c.get('testPort')).toBe(4000);
    expect(c.problems()).toEqual([
      expect.objectContaining({ key: 'testPort', layer: 'env', source: 'TEST_PORT', code: ErrorCodes.CONFIG_INVALID_VALUE }),
    ]);
  });

  it('treats a blank `key:` in the file as unset', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort:\ntestApiKey:\n');
    const c = await f.load();
    expect(c.get('testPort')).toBe(3100);
    expect(c.has('testApiKey')).toBe(false);
    expect(c.problems()).toEqual([]);
  });

  it('refuses unparseable YAML with the line and column', async () => {
    const f = fixture();
    writeFileSync(f.file, 'testPort: 1\ntestOrigins: [a,\nsafeMode: true\n');
    const err = await f.load().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeelError);
    expect((err as KeelError).code).toBe(ErrorCodes.CONFIG_FILE_INVALID);
    expect((err as KeelError).message).toMatch(/line \d+, column \d+/);
    expect((err as KeelError).message).toContain(f.file);
  });

  it('refuses a file whose top level is not a mapping', async () => {
    const f = fixture();
    writeFileSync(f.file, '- a\n- b\n');
    await expect(f.load()).rejects.toMatchObject({ code: ErrorCodes.CONFIG_FILE_INVALID });
  });

  it('keeps unknown file keys, warns about them, and types them once their plugin registers', async () => {
    const f = fixture();
    writeFileSync(f.file, 'laterPluginLimit: "12"\ntestPrt: 1\n');
    const c = await f.load();
    expect(c.unknownFileKeys().sort()).toEqual(['laterPluginLimit', 'testPrt']);
    expect(c.get('laterPluginLimit')).toBe('12');
    expect(c.all()['laterPluginLimit']).toBe('12');
    const warning = f.log.lines.find((l) => l.level === 'warn' && l.text.includes('testPrt'));
    expect(warning?.text).toContain('did you mean testPort');

    f.registry.register('later', {
      laterPluginLimit: { schema: Type.Integer(), default: 5, policy: 'SAFE', description: 'declared later' },
    });
    expect(c.get('laterPluginLimit')).toBe(12);
    expect(c.unknownFileKeys()).toEqual(['testPrt']);
    f.registry.unregister('later');
    expect(c.get('laterPluginLimit')).toBe('12');
  });

  it('hands out values nobody can change behind the store', async () => {
    const f = fixture();
    const c = await f.load();
    const list = c.get<string[]>('commandDenyList');
    expect(() => list.push('ls')).toThrow();
    expect(c.get<string[]>('commandDenyList')).not.toContain('ls');
  });
});
