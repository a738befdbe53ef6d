/**
 * POST /api/agent/probe: one short real call to the model the agent uses, through the real agent plugin and
 * providerA's openai client against the loopback server that speaks OpenAI's wire protocol. It says whether the key
 * and the model work, and when not, what to change; it never falls back and never shows the key.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { chatReply, errorReply, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { startGateway, type Gw } from './harness.js';

const KEY = 'sk-probe-test-0123456789abcdef';
let g: Gw | undefined;
let fake: ScriptedServer | undefined;
afterEach(async () => {
  await g?.close();
  await fake?.close();
  g = undefined;
  fake = undefined;
});

async function boot(overrides: Record<string, unknown> = {}): Promise<{ g: Gw; fake: ScriptedServer }> {
  fake = await startOpenAIFake();
  const all: Record<string, unknown> = { providerAApiKey: KEY, providerABaseUrl: fake.url, modelName: 'gpt-4o-mini', ...overrides };
  for (const k of Object.keys(all)) if (all[k] === undefined) delete all[k];
  g = await startGateway({ overrides: all });
  return { g, fake };
}

const probe = async (gw: Gw) => {
  const r = await gw.req('/api/agent/probe', { method: 'POST' });
  const text = await r.text();
  expect(text).not.toContain(KEY);
  return { status: r.status, body: JSON.parse(text) };
};

const chats = (f: ScriptedServer) => f.requests.filter((r) => r.url.endsWith('/chat/completions'));

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('POST /api/agent/probe', () => {
  it('a working key and model: ok, with the provider, the model, the time and the first words of the reply', async () => {
    const { g, fake } = await boot();
    fake.script(chatReply({ text: 'OK' }));
    const { status, body } = await probe(g);
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, provider: 'providerA', model: 'gpt-4o-mini', reply: 'OK' });
    expect(typeof body.ms).toBe('number');
    // one short call, with the key, for the configured model
    const [call] = chats(fake);
    expect(chats(fake)).toHaveLength(1);
    expect(call!.body.model).toBe('gpt-4o-mini');
    expect(call!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(call!.body.max_completion_tokens ?? call!.body.max_tokens).toBeLessThanOrEqual(16);
  });

  it('a refused key: not ok, the provider’s words and status, and the setting to fix; no fallback is tried', async () => {
    // a normal call would try the fallback model next (a second request to the same fake); a probe must not
    const { g, fake } = await boot({ fallbackModelNames: { providerA: 'gpt-4o' } });
    fake.script(errorReply(401, 'Incorrect API key provided: sk-pr****cdef.'));
    const { status, body } = await probe(g);
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: false, provider: 'providerA', model: 'gpt-4o-mini', status: 401 });
    expect(body.error).toMatch(/HTTP 401.*Incorrect API key/);
    expect(body.fix).toMatch(/refused the credentials: check providerAApiKey \(or PROVIDERA_API_KEY\)/);
    expect(chats(fake)).toHaveLength(1);
  });

  it('an unknown model: the fix names modelName', async () => {
    const { g, fake } = await boot({ modelName: 'gpt-nonexistent' });
    fake.script(errorReply(404, 'The model `gpt-nonexistent` does not exist or you do not have access to it.'));
    const { body } = await probe(g);
    expect(body).toMatchObject({ ok: false, model: 'gpt-nonexistent', status: 404 });
    expect(body.fix).toMatch(/does not know the model "gpt-nonexistent".*check modelName/);
  });

  it('a provider this machine cannot reach: the fix says so and names the base-URL setting', async () => {
    const port = await closedPort();
    const { g } = await boot({ providerABaseUrl: `http://127.0.0.1:${port}/v1`, providerATimeoutSeconds: 5 });
    const { body } = await probe(g);
    expect(body).toMatchObject({ ok: false, provider: 'providerA' });
    expect(body.status).toBeUndefined();
    expect(body.fix).toMatch(/could not reach providerA.*providerABaseUrl|did not answer in time.*providerABaseUrl/);
  });

  it('no model configured: not ok, and the error says what to set; nothing is sent anywhere', async () => {
    const { g, fake } = await boot({ modelName: undefined });
    const { body } = await probe(g);
    expect(body.ok).toBe(false);
    expect(body.error).toMatch(/modelName/);
    expect(body.fix).toMatch(/keel config set/);
    expect(chats(fake)).toHaveLength(0);
  });

  it('503 when no agent plugin runs in the process (no model to check)', async () => {
    g = await startGateway({ fakeAgent: true });
    const r = await g.req('/api/agent/probe', { method: 'POST' });
    expect(r.status).toBe(503);
    expect(((await r.json()) as { message: string }).message).toMatch(/no agent plugin/i);
  });
});
