/**
 * Test support for plugin authors and Keel's own tests, published as `keel/sdk/testing`.
 *
 * A layer above the SDK contract: it boots a real kernel, so it imports kernel/ and sdk/, and nothing in sdk/
 * imports it (test/conformance/boundaries.test.ts). That is why it lives in testing/, not under sdk/.
 *
 * @example
 * const home = tempHome();
 * installFakeAgent(home);            // a plugin that provides `agent` without a model
 * const t = await bootKernel({ home, plugins: [fakeChannel('chat')] });
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folder of the fake agent plugin (manifest.json + index.js). */
export const FAKE_AGENT_DIR = join(import.meta.dirname, 'fake-agent');

export { removeHome, tempHome } from './home.js';
export { bootKernel, createTestContext, type TestContext, type TestKernel, type TestKernelOptions } from './kernel.js';
export { fakeChannel, type FakeChannel, type FakeChannelOptions } from './fake-channel.js';

/**
 * Copy the fake agent into `$home/plugins/fake-agent`, where the kernel discovers user plugins.
 * Only one plugin may provide `agent`, so unless `keepBuiltinAgent` is set this also denies the built-in
 * `agent` plugin in `$home/keel.config.yaml` (written when absent; a file with its own pluginDenyList is left alone).
 */
export function installFakeAgent(home: string, opts: { keepBuiltinAgent?: boolean } = {}): void {
  cpSync(FAKE_AGENT_DIR, join(home, 'plugins', 'fake-agent'), { recursive: true });
  if (opts.keepBuiltinAgent) return;
  const file = join(home, 'keel.config.yaml');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (/^pluginDenyList\s*:/m.test(current)) return;
  const sep = current && !current.endsWith('\n') ? '\n' : '';
  writeFileSync(file, `${current}${sep}pluginDenyList:\n  - agent\n`, { mode: 0o600 });
}

/** Folder of the scripted fake model provider plugin (manifest.json + index.js). */
export const FAKE_PROVIDER_DIR = join(import.meta.dirname, 'fake-provider');

/** One scripted reply of the fake provider (or, in-process, a function of the request that returns one). */
export type FakeReply =
  | {
      text?: string;
      toolCalls?: Array<{ name: string; arguments?: Record<string, unknown>; raw?: string; id?: string }>;
      usage?: { inputTokens: number; outputTokens: number };
      /** Throw a provider error instead of answering. */
      error?: { message: string; status?: number; retryable?: boolean };
      /** Wait this long first (honours the call's abort signal). */
      delayMs?: number;
    }
  | ((req: FakeProviderCall & { signal?: AbortSignal }) => FakeReply | Promise<FakeReply>);

/** What the fake provider saw in one call. */
export interface FakeProviderCall {
  model: string;
  messages: Array<{ role: string; content: string; toolCalls?: unknown[]; toolCallId?: string; name?: string }>;
  tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
  timeoutMs?: number;
}

/** Drives one installed fake provider from the test. */
export interface FakeProviderControl {
  /** Capability id (`provider:<id>`), e.g. `fake`. */
  id: string;
  /** Replies consumed in order, one per call. */
  replies: FakeReply[];
  /** Every call, in order. */
  calls: FakeProviderCall[];
  /** Reply when `replies` is empty (default: text "fake answer"). */
  defaultReply?: FakeReply;
  /** Whether the provider says it reads images (default false). */
  vision?: boolean;
  /** What `configured()` returns (default ok). */
  configured?: { ok: true } | { ok: false; missing: string };
}

const FAKE_REGISTRY = Symbol.for('keel.fakeProvider');

/**
 * Copy the fake provider into `$home/plugins/fake-provider[-<id>]` and return its in-process control.
 * The plugin provides `provider:<id>` (default `fake`); point the agent at it with `llmProvider: <id>`.
 * @example
 * const fake = installFakeProvider(home);
 * fake.replies.push({ toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] }, { text: 'done' });
 */
export function installFakeProvider(home: string, opts: { id?: string } = {}): FakeProviderControl {
  const id = opts.id ?? 'fake';
  if (!/^(?!provider)[a-z][a-z0-9-]*$/.test(id)) throw new Error(`fake provider id "${id}" must be lowercase letters, digits and dashes`);
  const pluginId = id === 'fake' ? 'fake-provider' : `fake-provider-${id}`;
  const dir = join(home, 'plugins', pluginId);
  cpSync(FAKE_PROVIDER_DIR, dir, { recursive: true });
  const manifestFile = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { id: string; provides: string[] };
  manifest.id = pluginId;
  manifest.provides = [`provider:${id}`];
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  const g = globalThis as unknown as Record<symbol, Map<string, FakeProviderControl> | undefined>;
  const registry = (g[FAKE_REGISTRY] ??= new Map<string, FakeProviderControl>());
  const control: FakeProviderControl = { id, replies: [], calls: [] };
  registry.set(`${home}|${id}`, control);
  return control;
}
