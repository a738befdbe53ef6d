import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Kernel } from '../../../kernel/kernel.js';
import type { AgentCapability, LlmCapability } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { boot, cleanup } from './harness.js';

afterEach(cleanup);

const settled = (k: Kernel, id: string) => {
  const a = k.queue.get(id);
  return a && (a.status === 'completed' || a.status === 'failed') ? a : undefined;
};
const agent = (k: Kernel) => k.registry.use<AgentCapability>('agent')!;
const llm = (k: Kernel) => k.registry.use<LlmCapability>('llm')!;
const logText = (k: Kernel) =>
  k.logs
    .recent({ limit: 1000 })
    .map((e) => e.message)
    .join('\n');

describe('model router', () => {
  it('tries the fallback model of the provider when the primary model fails', async () => {
    const { kernel: k, fake } = await boot({
      config: { llmProvider: 'fake', modelName: 'fake-model', fallbackModelNames: { fake: 'fake-backup' } },
    });
    fake.defaultReply = (req) =>
      req.model === 'fake-model'
        ? { error: { message: 'HTTP 503 overloaded', status: 503, retryable: true } }
        : { text: `answered by ${req.model}` };
    const a = await k.queue.push({ task: 'hello', maxRetries: 0 });
    const done = await waitFor(() => settled(k, a.id), 'the action to settle');
    expect(done).toMatchObject({ status: 'completed', result: 'answered by fake-backup' });
    expect(fake.calls.map((c) => c.model)).toEqual(['fake-model', 'fake-backup']);
    expect(logText(k)).toMatch(/fake model fake-model failed .*HTTP 503 overloaded.*; trying its fallback model fake-backup/);
  });

  it('then tries an alternative configured provider with its model from providerModelNames', async () => {
    const config = {
      llmProvider: 'fake',
      modelName: 'fake-model',
      fallbackModelNames: { fake: 'fake-backup' },
      providerModelNames: { alt: 'alt-model' },
    };
    const { kernel: k, fake, extra } = await boot({ config, providers: ['alt'] });
    fake.defaultReply = { error: { message: 'HTTP 500 down', status: 500 } };
    extra.alt!.defaultReply = (req) => ({ text: `alt answered with ${req.model}` });
    const a = await k.queue.push({ task: 'hello', maxRetries: 0 });
    const done = await waitFor(() => settled(k, a.id), 'the action to settle');
    expect(done).toMatchObject({ status: 'completed', result: 'alt answered with alt-model' });
    expect(fake.calls.map((c) => c.model)).toEqual(['fake-model', 'fake-backup']);
    expect(logText(k)).toMatch(/trying the alternative provider alt with model alt-model/);
  });

  it('fails with every step of the chain in the reason when nothing answers, and says how to add a fallback', async () => {
    const { kernel: k, fake } = await boot();
    fake.defaultReply = { error: { message: 'HTTP 500 down', status: 500 } };
    const a = await k.queue.push({ task: 'hello', maxRetries: 0 });
    const done = await waitFor(() => settled(k, a.id), 'the action to settle');
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/the model call failed: fake model fake-model: HTTP 500 down \(no fallback: set fallbackModelNames\.fake/);
  });

  it('ends a call that takes longer than llmTimeoutMs', async () => {
    const { kernel: k, fake } = await boot({ config: { llmProvider: 'fake', modelName: 'fake-model', llmTimeoutMs: 1000 } });
    fake.defaultReply = { delayMs: 20_000, text: 'too late' };
    const a = await k.queue.push({ task: 'hello', maxRetries: 0 });
    const done = await waitFor(() => settled(k, a.id), 'the action to settle');
    expect(done.error).toMatch(/fake did not answer within 1000 ms/);
    expect(fake.calls[0]!.timeoutMs).toBe(1000);
  });

  it('writes one token usage line per call and a per-provider, per-model summary', async () => {
    const { kernel: k, fake, home } = await boot();
    fake.replies.push({ text: 'one', usage: { inputTokens: 100, outputTokens: 7 } });
    const a = await k.queue.push({ task: 'hello', maxRetries: 0 });
    await waitFor(() => settled(k, a.id), 'the action to settle');
    const r = await k.execute('deep_reason', { topic: 'x' }, k.operator);
    expect(r.success).toBe(true);
    const summaryFile = join(home, 'token-usage-summary.json');
    const summary = await waitFor(() => {
      if (!existsSync(summaryFile)) return undefined;
      const s = JSON.parse(readFileSync(summaryFile, 'utf8'));
      return s.total.calls === 2 ? s : undefined;
    }, 'the summary to count two calls');
    expect(summary.total).toMatchObject({ calls: 2, failures: 0, inputTokens: 110, outputTokens: 12 });
    expect(summary.providers.fake.models['fake-model']).toMatchObject({ calls: 2, inputTokens: 110, outputTokens: 12 });
    const lines = readFileSync(join(home, 'token-usage.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      provider: 'fake',
      model: 'fake-model',
      purpose: 'main',
      ok: true,
      inputTokens: 100,
      outputTokens: 7,
      actionId: a.id,
    });
  });

  it('honours tokenUsagePath and tokenLogPath', async () => {
    const { kernel: k, home } = await boot({
      config: {
        llmProvider: 'fake',
        modelName: 'fake-model',
        tokenUsagePath: '$KEEL_HOME/usage/summary.json',
        tokenLogPath: '$KEEL_HOME/usage/calls.log',
      },
    });
    await k.execute('deep_reason', { topic: 'x' }, k.operator);
    await waitFor(() => existsSync(join(home, 'usage', 'summary.json')) && existsSync(join(home, 'usage', 'calls.log')), 'the usage files');
    expect(existsSync(join(home, 'token-usage.log'))).toBe(false);
  });

  it('remembers the model used with a provider and restores it when the provider is switched back', async () => {
    const { kernel: k, extra } = await boot({ config: { llmProvider: 'fake', modelName: 'fake-model' }, providers: ['alt'] });
    await k.execute('deep_reason', { topic: 'x' }, k.operator);
    await waitFor(
      () => (k.config.get<Record<string, string>>('providerModelNames') ?? {})['fake'] === 'fake-model',
      'providerModelNames.fake',
    );
    // Switch provider and model by hand, then back to a provider that modelName does not belong to.
    await k.config.set('providerModelNames', { fake: 'fake-model', alt: 'alt-model' }, { kind: 'operator' });
    await k.config.set('llmProvider', 'alt', { kind: 'operator' });
    await k.config.set('modelName', 'gpt-4o-mini', { kind: 'operator' });
    expect(llm(k).current()).toEqual({ provider: 'alt', model: 'alt-model' });
    await k.execute('deep_reason', { topic: 'y' }, k.operator);
    expect(extra.alt!.calls.at(-1)!.model).toBe('alt-model');
    await k.config.set('llmProvider', 'fake', { kind: 'operator' });
    expect(llm(k).current()).toEqual({ provider: 'fake', model: 'fake-model' });
  });

  it('serves purpose "fast" with fastModelName', async () => {
    const { kernel: k, fake } = await boot({ config: { llmProvider: 'fake', modelName: 'fake-model', fastModelName: 'fake-mini' } });
    const r = await llm(k).chat({ messages: [{ role: 'user', content: 'summarise' }], purpose: 'fast' });
    expect(r).toMatchObject({ provider: 'fake', model: 'fake-mini' });
    expect(fake.calls[0]!.model).toBe('fake-mini');
  });
});

describe('agent readiness', () => {
  it('says exactly what is missing', async () => {
    const { kernel: k, fake } = await boot({ config: {} });
    expect(agent(k).ready()).toEqual({
      ready: false,
      reason: expect.stringMatching(/^no model configured: set modelName \(and llmProvider or a provider key\)/),
    });
    await waitFor(() => k.runner!.status().state === 'waiting', 'the runner to wait');
    expect(k.runner!.status().reason).toMatch(/no model configured/);

    await k.config.set('modelName', 'mystery-model', { kind: 'operator' });
    expect(agent(k).ready().reason).toMatch(/Cannot tell which provider serves model "mystery-model".*set llmProvider/);

    await k.config.set('modelName', 'openai/gpt-4o', { kind: 'operator' });
    expect(agent(k).ready().reason).toMatch(/could belong to providerE or providerF .*: set llmProvider/);

    await k.config.set('modelName', 'gpt-4o-mini', { kind: 'operator' });
    expect(agent(k).ready().reason).toMatch(/^providerA is not available: no running plugin provides "provider:providerA"/);

    await k.config.set('llmProvider', 'fake', { kind: 'operator' });
    await k.config.set('modelName', 'fake-model', { kind: 'operator' });
    fake.configured = { ok: false, missing: 'set fakeApiKey (env FAKE_API_KEY)' };
    expect(agent(k).ready()).toEqual({ ready: false, reason: 'fake is not configured: set fakeApiKey (env FAKE_API_KEY)' });
    expect(llm(k).current()).toMatchObject({
      provider: 'fake',
      model: 'fake-model',
      missing: 'fake is not configured: set fakeApiKey (env FAKE_API_KEY)',
    });

    delete fake.configured;
    expect(agent(k).ready()).toEqual({ ready: true });
    const a = await k.queue.push({ task: 'now it runs', maxRetries: 0 });
    await waitFor(() => settled(k, a.id), 'the waiting action to run');
    expect(k.queue.get(a.id)).toMatchObject({ status: 'completed', result: 'fake answer' });
  });

  it('refuses a misspelt llmProvider and accepts providerA..providerK', async () => {
    const { kernel: k } = await boot();
    await expect(k.config.set('llmProvider', 'providerZ', { kind: 'operator' })).rejects.toThrow();
    await expect(k.config.set('llmProvider', 'providera', { kind: 'operator' })).rejects.toThrow();
    for (const id of ['providerA', 'providerG', 'providerK']) {
      await k.config.set('llmProvider', id, { kind: 'operator' });
      expect(k.config.get('llmProvider')).toBe(id);
    }
  });
});
