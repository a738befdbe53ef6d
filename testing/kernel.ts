/**
 * A real kernel under a temporary KEEL_HOME, for plugin tests: the one boot helper Keel's own tests use.
 * The kernel module is imported lazily, so importing `keel/sdk/testing` for the fake plugins stays cheap.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kernel } from '../kernel/kernel.js';
import type { PluginContext, PluginDefinition } from '../sdk/plugin.js';
import type { PluginManifest } from '../sdk/types.js';
import { tempHome } from './home.js';

/**
 * How to boot a test kernel.
 * @example const opts: TestKernelOptions = { builtins: ['agent'], runAgent: true, config: { llmProvider: 'fake' } };
 */
export interface TestKernelOptions {
  /** Configuration values with the highest precedence (command-line overrides). */
  config?: Record<string, unknown>;
  /** Text of `$home/keel.config.yaml` (written before start; changeable later through the config API). */
  configYaml?: string;
  /** Environment variables the kernel sees (default none: the test's own environment never leaks in). */
  env?: Record<string, string>;
  /** Built-in plugins: `false` none (default), `true` all, or only the listed ids. */
  builtins?: boolean | string[];
  /** Load user plugins from `$home/plugins` (default true). */
  userPlugins?: boolean;
  /** Plugins given in memory (definitions), loaded as user plugins. */
  plugins?: PluginDefinition[];
  /** Use this home instead of a fresh temporary one (it is then not removed by `close`). */
  home?: string;
  /** Run the agent runner on the queue (default false). */
  runAgent?: boolean;
  /** The runner's longest idle wait between queue checks in ms (default 100 in tests). */
  runnerIdleMs?: number;
  /** Watch `$home/skills` for custom skills (default false). */
  watchSkills?: boolean;
  /** Called with the home before the kernel starts (copy plugins in, write files). */
  before?(home: string): void | Promise<void>;
}

/**
 * A booted test kernel.
 * @example const { kernel, home, close } = await bootKernel(); await close();
 */
export interface TestKernel {
  kernel: Kernel;
  home: string;
  /** Stops the kernel and removes the temporary home. Safe to call twice. */
  close(): Promise<void>;
}

function inMemoryCandidate(home: string, def: PluginDefinition) {
  return {
    id: def.manifest.id,
    origin: 'user' as const,
    dir: join(home, 'plugins', def.manifest.id),
    manifest: def.manifest,
    load: async () => def,
  };
}

/**
 * Boot a real kernel under a temporary KEEL_HOME.
 * @example
 * const t = await bootKernel({ builtins: ['providerC'], config: { providerCApiKey: 'sk-test' } });
 * try { expect(t.kernel.registry.use('provider:providerC')).toBeDefined(); } finally { await t.close(); }
 */
export async function bootKernel(opts: TestKernelOptions = {}): Promise<TestKernel> {
  const home = opts.home ?? tempHome('keel-test-');
  const owned = opts.home === undefined;
  const cleanups: string[] = owned ? [home] : [];
  try {
    mkdirSync(home, { recursive: true });
    if (opts.configYaml !== undefined) writeFileSync(join(home, 'keel.config.yaml'), opts.configYaml, { mode: 0o600 });
    await opts.before?.(home);
    const [{ startKernel }, { LogSink }, { discoverBuiltins }] = await Promise.all([
      import('../kernel/kernel.js'),
      import('../kernel/log.js'),
      import('../kernel/plugins/discover.js'),
    ]);
    const extra = (opts.plugins ?? []).map((d) => inMemoryCandidate(home, d));
    const builtins = opts.builtins ?? false;
    let builtinDir: string | undefined;
    if (builtins !== true) {
      // An empty built-in folder, plus the chosen built-ins as extra candidates.
      builtinDir = tempHome('keel-test-builtins-');
      cleanups.push(builtinDir);
      if (Array.isArray(builtins) && builtins.length > 0) {
        const found = (await discoverBuiltins()).filter((c) => builtins.includes(c.id));
        const missing = builtins.filter((id) => !found.some((c) => c.id === id));
        if (missing.length) throw new Error(`bootKernel: no built-in plugin ${missing.join(', ')}`);
        extra.push(...(found as typeof extra));
      }
    }
    const kernel = await startKernel({
      home,
      ...(builtinDir ? { builtinDir } : {}),
      builtinOnly: opts.userPlugins === false,
      extraPlugins: extra,
      env: opts.env ?? {},
      watchSkills: opts.watchSkills ?? false,
      runAgent: opts.runAgent ?? false,
      runner: { maxIdleMs: opts.runnerIdleMs ?? 100 },
      logs: new LogSink({ quiet: true }),
      overrides: opts.config ?? {},
    });
    let closed: Promise<void> | undefined;
    return {
      kernel,
      home,
      close: () =>
        (closed ??= (async () => {
          try {
            await kernel.stop();
          } finally {
            for (const d of cleanups) rmSync(d, { recursive: true, force: true });
          }
        })()),
    };
  } catch (e) {
    for (const d of cleanups) rmSync(d, { recursive: true, force: true });
    throw e;
  }
}

/**
 * What `createTestContext` returns: the kernel and the context the plugin under test got.
 * @example const { ctx, close } = await createTestContext(myPlugin); ctx.log.info('hi'); await close();
 */
export interface TestContext extends TestKernel {
  /** The plugin context handed to the plugin's `setup` (for a bare manifest: a plugin with an empty setup). */
  ctx: PluginContext;
}

/**
 * Run one plugin (a definition, or a bare manifest) in a real kernel under a temporary KEEL_HOME and hand back
 * its context. Throws with the plugin's state and reason when it does not load.
 * @example
 * const t = await createTestContext(myPlugin, { config: { myPluginGreeting: 'Hi' } });
 * expect((await t.ctx.skills.execute('greet', { name: 'Ada' }, { kind: 'operator', channel: 'cli' })).result).toBe('Hi, Ada!');
 * await t.close();
 */
export async function createTestContext(plugin: PluginDefinition | PluginManifest, opts: TestKernelOptions = {}): Promise<TestContext> {
  const def: PluginDefinition =
    'setup' in plugin && typeof plugin.setup === 'function' ? plugin : { manifest: plugin as PluginManifest, setup() {} };
  let captured: PluginContext | undefined;
  const wrapped: PluginDefinition = {
    ...def,
    setup(ctx) {
      captured = ctx;
      return def.setup(ctx);
    },
  };
  const t = await bootKernel({ ...opts, plugins: [wrapped, ...(opts.plugins ?? [])] });
  const status = t.kernel.host.status(def.manifest.id);
  if (!captured || status?.state !== 'loaded') {
    await t.close();
    throw new Error(`plugin ${def.manifest.id} did not load: ${status?.state ?? 'unknown'}${status?.reason ? ` (${status.reason})` : ''}`);
  }
  return { ...t, ctx: captured };
}
