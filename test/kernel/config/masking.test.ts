import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { looksSecret, mask } from '../../../kernel/config/index.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

describe('mask', () => {
  it('shows a short prefix of long values only', () => {
    expect(mask('sk-abcdefghijklmnop')).toBe('sk-a****');
    expect(mask('abcdefghijkl')).toBe('abcd****');
    expect(mask('abcdefghijk')).toBe('ab****');
    expect(mask('abcdefgh')).toBe('ab****');
    expect(mask('abcdefg')).toBe('****');
    expect(mask('x')).toBe('****');
  });

  it('leaves "not set" visible and masks non-strings whole', () => {
    expect(mask('')).toBe('');
    expect(mask(undefined)).toBeUndefined();
    expect(mask(null)).toBeNull();
    expect(mask({ user: 'a', pass: 'b' })).toBe('****');
    expect(mask(123456789012)).toBe('****');
  });

  it('recognises secret-looking names', () => {
    for (const n of ['gatewayApiKey', 'chatAToken', 'chatDSigningSecret', 'smtpPassword']) expect(looksSecret(n)).toBe(true);
    for (const n of ['gatewayPort', 'modelName', 'safeMode']) expect(looksSecret(n)).toBe(false);
  });
});

describe('all({ masked: true }) as GET /api/config shows it', () => {
  it('masks declared secrets from every layer, and secret-looking unknown file keys', async () => {
    const f = fixture();
    writeFileSync(
      f.file,
      [
        'testToken: tok-file-abcdefghijkl',
        'testPort: 4000',
        'otherPluginApiKey: ok-file-abcdefghijkl',
        'otherPluginSettings:',
        '  url: https://x.test',
        '  password: pw-nested-abcdefgh',
        'otherPluginName: visible',
      ].join('\n'),
    );
    const c = await f.load({ env: { TEST_API_KEY: 'sk-env-abcdefghijkl' } });
    const shown = c.all({ masked: true });
    expect(shown['testToken']).toBe('tok-****');
    expect(shown['testApiKey']).toBe('sk-e****');
    expect(shown['otherPluginApiKey']).toBe('ok-f****');
    expect(shown['otherPluginSettings']).toEqual({ url: 'https://x.test', password: 'pw-n****' });
    expect(shown['otherPluginName']).toBe('visible');
    expect(shown['testPort']).toBe(4000);
    expect(shown['commandDenyList']).toContain('rm');
    expect('adminUsers' in shown).toBe(false);
    const json = JSON.stringify(shown);
    for (const s of ['tok-file-abcdefghijkl', 'sk-env-abcdefghijkl', 'ok-file-abcdefghijkl', 'pw-nested-abcdefgh'])
      expect(json).not.toContain(s);

    const raw = c.all();
    expect(raw['testToken']).toBe('tok-file-abcdefghijkl');
    expect(raw['testApiKey']).toBe('sk-env-abcdefghijkl');
  });

  it('describes a key without revealing a secret value', async () => {
    const c = await fixture().load({ env: { TEST_TOKEN: 'tok-abcdefghijklmn' } });
    expect(c.describe('testToken')).toMatchObject({
      owner: 'testplugin',
      policy: 'LOCKED',
      secret: true,
      layer: 'env',
      env: ['TEST_TOKEN'],
      value: 'tok-****',
      expected: 'a string',
    });
  });
});
