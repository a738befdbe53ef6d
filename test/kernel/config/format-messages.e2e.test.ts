/**
 * A value of the right type but the wrong form (a token that does not look like one, a too-short string) is
 * refused with the form in words ("a Telegram bot token: ..."), never "expected a string, got a string": for
 * every key with a pattern, and through every door (the registry, `keel config set`, PUT /api/config/:key,
 * manage_config).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSchema, KERNEL_KEYS, KeyRegistry } from '../../../kernel/config/index.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { keelCli, rm, tmp } from '../../helpers.js';
import { startGateway, type Gw } from '../../plugins/gateway/harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const BAD = 'bad value!';
const TELEGRAM = /expected a Telegram bot token: the bot's number, a colon, then letters, digits, "_" or "-" \(like 123456789:AAH4x/;
const DISCORD = /expected a Discord bot token: at least 20 letters, digits, "\.", "_" or "-" .*, got a string of 5 characters/;

type Json = Record<string, unknown>;

/** Every sub-schema that has a pattern, with where it sits (`chatACommands/items/properties/command`). */
function patterned(schema: unknown, path: string, out: Array<{ path: string; schema: Json }>): void {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => patterned(s, `${path}/${i}`, out));
    return;
  }
  const s = schema as Json;
  if (typeof s['pattern'] === 'string') out.push({ path, schema: s });
  for (const [k, v] of Object.entries(s)) if (k !== 'patternProperties' || typeof v === 'object') patterned(v, `${path}/${k}`, out);
}

async function allKeys(): Promise<KeyRegistry> {
  const registry = new KeyRegistry();
  registry.register('kernel', KERNEL_KEYS);
  for (const c of await discoverBuiltins(join(ROOT, 'plugins'))) {
    const m = c.manifest as { id: string; config?: Record<string, never> } | undefined;
    if (m?.config) registry.register(m.id, m.config);
  }
  return registry;
}

describe('config values of the wrong form', () => {
  it('every key with a pattern says the form it wants in words, and a bad value gets that sentence', async () => {
    const registry = await allKeys();
    const found: string[] = [];
    for (const { key, spec } of registry.entries()) {
      const subs: Array<{ path: string; schema: Json }> = [];
      patterned(spec.schema, key, subs);
      for (const sub of subs) {
        // A key name pattern (patternProperties' own key) is not a value form.
        if (/\/patternProperties$/.test(sub.path.replace(/\/[^/]+$/, ''))) continue;
        found.push(sub.path);
        const words = describeSchema(sub.schema);
        expect(words, sub.path).not.toBe('a string');
        expect(words, `${sub.path}: the form in words, not the regular expression`).not.toMatch(/regular expression/);
      }
      // Keys whose value itself is a patterned string (or a union with one): a bad value names that form.
      const top = subs.filter((s) => s.path === key || /^[^/]+\/anyOf\/\d+$/.test(s.path));
      for (const sub of top) {
        const check = registry.validate(key, BAD);
        expect(check.ok, key).toBe(false);
        const message = check.ok ? '' : check.message;
        expect(message, key).toContain(describeSchema(sub.schema));
        expect(message, key).not.toMatch(/expected a string, got a string/);
      }
    }
    // The walk did find the keys of the issue, nested ones included.
    expect(found).toEqual(
      expect.arrayContaining([
        'chatAToken',
        'chatCToken',
        'chatDBotToken',
        'chatACommands/items/properties/command',
        'llmProvider/anyOf/1',
      ]),
    );
    expect(found.length).toBeGreaterThan(30);
  });

  it('names the form of a nested value and reads well for too-short strings', async () => {
    const registry = await allKeys();
    const message = (key: string, value: unknown) => {
      const c = registry.validate(key, value);
      return c.ok ? 'accepted' : c.message;
    };
    expect(message('chatAToken', 'bad')).toMatch(TELEGRAM);
    expect(message('chatAToken', 'bad')).toMatch(/got a string of 3 characters$/);
    expect(message('chatCToken', 'short')).toMatch(DISCORD);
    expect(message('chatACommands', [{ command: 'Start Now', description: 'go' }])).toMatch(
      /\(at \/0\/command: expected a command name of 1 to 32 lowercase letters, digits or "_", without the "\/", got a string of 9 characters\)$/,
    );
    expect(message('identityLinks', { 'chatA:1': 'nobody' })).toMatch(/expected an identity "<channel>:<user_id>", like chatA:123456789/);
    expect(message('modelName', '')).toBe('expected a non-empty string, got an empty string');
    expect(message('queueRedisSigningKey', 'short')).toBe(
      'expected a signing key of at least 32 characters (e.g. from `openssl rand -base64 32`), got a string of 5 characters',
    );
    expect(message('providerABaseUrl', 'api.example.com')).toBe(
      'expected a URL starting with http:// or https://, got the string "api.example.com"',
    );
    expect(message('browserCdpEndpoint', 'localhost:9222')).toMatch(
      /^expected a URL starting with ws:\/\/, wss:\/\/, http:\/\/ or https:\/\/ \(at most 2048 characters\)/,
    );
    expect(message('emailAddress', 'keel')).toBe('expected an email address like keel@example.com, got the string "keel"');
  });
});

describe('the same message through every door', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({ fakeAgent: true });
  });
  afterAll(async () => g?.close());

  it('keel config set says what a Telegram or Discord token looks like', async () => {
    const home = tmp();
    try {
      const a = await keelCli(home, ['config', 'set', 'chatAToken', 'bad']);
      expect(a.code).toBe(2);
      expect(a.stderr).toMatch(TELEGRAM);
      expect(a.stderr).not.toMatch(/got a string\b(?! of)/);
      const c = await keelCli(home, ['config', 'set', 'chatCToken', 'short'], {});
      expect(c.code).toBe(2);
      expect(c.stderr).toMatch(DISCORD);
    } finally {
      rm(home);
    }
  });

  it('PUT /api/config/:key and manage_config say it too', async () => {
    const r = await g.req('/api/config/chatAToken', { method: 'PUT', json: { value: 'bad' } });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { message: string };
    expect(body.message).toMatch(TELEGRAM);
    const short = await g.req('/api/config/chatCToken', { method: 'PUT', json: { value: 'short' } });
    expect(short.status).toBe(400);
    expect(((await short.json()) as { message: string }).message).toMatch(DISCORD);

    const out = await g.kernel.execute(
      'manage_config',
      { action: 'set', key: 'chatBOwnerJID', value: 'bob' },
      { kind: 'operator', channel: 'cli' },
    );
    expect(out.success).toBe(false);
    expect(String(out.result)).toMatch(/expected a WhatsApp JID: the phone number with its country code, then @s\.whatsapp\.net/);
  });
});
