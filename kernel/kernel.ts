/**
 * Assembles a kernel: configuration, queue, hooks, registry, dispatch, plugin host, custom skills and
 * (when this process owns the queue) the runner.
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { HookCatalogue } from '../sdk/hooks.js';
import type { AgentCapability, KernelInfoCapability, PolicyCapability } from '../sdk/core-capabilities.js';
import type { QueueApi } from '../sdk/plugin.js';
import { isAdmin, sessionKey } from './policy/index.js';
import type { ChannelCapability } from '../sdk/channel.js';
import type { Action, Actor, Logger } from '../sdk/types.js';
import { ConfigStore, describeSchema, KeyRegistry, KERNEL_KEYS } from './config/index.js';
import { Housekeeping } from './housekeeping.js';
import { errorMessage } from './errors.js';
import { createHooks } from './hooks/catalogue.js';
import { LogSink } from './log.js';
import { installRoot, keelHome } from './paths.js';
import { CustomSkills } from './plugins/custom-skills.js';
import { discoverAll, type PluginCandidate } from './plugins/discover.js';
import { PluginHost, type HostOptions } from './plugins/host.js';
import type { HostConfig } from './plugins/context.js';
import { redisBackend } from './queue/backend.js';
import type { QueueEngine } from './queue/index.js';
import { cancelAction, moveFileQueueInto, openQueue } from './queue/queue.js';
import { createDispatcher, type Dispatcher } from './registry/dispatch.js';
import { Registry } from './registry/registry.js';
import { Runner } from './runner/runner.js';
import { livePids } from './util/pidfiles.js';

export interface KernelOptions {
  home?: string;
  /** `--config <file>`; default `$home/keel.config.yaml`. */
  configFile?: string;
  env?: NodeJS.ProcessEnv;
  /** Command-line values, the highest precedence. */
  overrides?: Record<string, unknown>;
  /** Built-in plugin folder (tests); default this installation's. */
  builtinDir?: string;
  /** Extra candidates (tests, embedding). */
  extraPlugins?: PluginCandidate[];
  /** Skip user plugins in $home/plugins. */
  builtinOnly?: boolean;
  /** Own the queue and run actions (`keel run`). */
  runAgent?: boolean;
  /** Watch $home/skills for custom skills (default true). */
  watchSkills?: boolean;
  /** Re-read keel.config.yaml when it changes, e.g. after `keel config set` (default: when running the agent). */
  watchConfig?: boolean;
  logs?: LogSink;
  host?: Pick<HostOptions, 'setupTimeoutMs' | 'stopTimeoutMs' | 'healthTimeoutMs' | 'quarantineAfter'>;
  runner?: { maxIdleMs?: number };
  /** The file this process's stdout and stderr go to (a detached process): rotated past logFileMaxMB. */
  logFile?: string;
}

export interface Kernel {
  home: string;
  version: string;
  config: ConfigStore;
  keys: KeyRegistry;
  queue: QueueEngine;
  hooks: Readonly<HookCatalogue>;
  registry: Registry;
  host: PluginHost;
  customSkills: CustomSkills | undefined;
  runner: Runner | undefined;
  logs: LogSink;
  log: Logger;
  execute: Dispatcher;
  /** The local operator, who is admin. */
  operator: Actor;
  /** Stops an action (what plugins get as `ctx.queue.cancel`). */
  cancel: QueueApi['cancel'];
  stop(): Promise<void>;
}

let cachedVersion: string | undefined;

/** Keel's version from package.json. */
export function keelVersion(): string {
  cachedVersion ??= (JSON.parse(readFileSync(join(installRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return cachedVersion;
}

/** Adapts the config store to what the host needs (every call goes to the one store). */
function hostConfig(config: ConfigStore, keys: KeyRegistry): HostConfig {
  return {
    get: <T>(k: string) => config.get<T>(k),
    has: (k: string) => config.has(k),
    all: (o?: { masked?: boolean }) => config.all(o),
    set: (k, v, origin) => config.set(k, v, origin),
    pending: () => config.pending(),
    approve: (id, origin) => config.approve(id, origin),
    reject: (id, origin) => config.reject(id, origin),
    // The store reads keys from the registry on every get, so newly registered keys need no reload.
    registerKeys: (owner, specs, channel) => keys.register(owner, specs, channel),
    unregisterKeys: (owner: string) => keys.unregister(owner),
    describeKey(key: string) {
      const k = keys.get(key);
      return k ? { owner: k.owner, secret: Boolean(k.spec.secret) } : undefined;
    },
  };
}

export async function startKernel(opts: KernelOptions = {}): Promise<Kernel> {
  const home = opts.home ?? keelHome(opts.env);
  await mkdir(home, { recursive: true });
  const version = keelVersion();
  const keys = new KeyRegistry();
  keys.register('kernel', KERNEL_KEYS);
  let config: ConfigStore | undefined;
  const logs =
    opts.logs ??
    new LogSink({
      secrets: () => (config ? secretValues(config, keys) : []),
    });
  const log = logs.logger('kernel');
  config = await ConfigStore.load({
    home,
    ...(opts.configFile ? { file: opts.configFile } : {}),
    env: opts.env ?? process.env,
    overrides: opts.overrides ?? {},
    registry: keys,
    log: logs.logger('config'),
    // Only the kernel's keys are declared yet: plugins declare theirs as they load (below).
    deferUnknownKeys: true,
  });
  const cfg = config;
  const queue = await openQueue({
    home,
    owner: Boolean(opts.runAgent),
    log: logs.logger('queue'),
    completedLimit: cfg.get<number>('queueCompletedLimit'),
    failedLimit: cfg.get<number>('queueFailedLimit'),
    redis: redisBackend(
      cfg.has('queueRedisUrl') ? cfg.get('queueRedisUrl') : undefined,
      cfg.get('queueRedisPrefix'),
      cfg.get('queueWorkerLeaseSeconds'),
      cfg.has('queueRedisSigningKey') ? cfg.get('queueRedisSigningKey') : undefined,
    ),
  });
  for (const p of queue.problems) log.error(p);
  if (queue.worker !== undefined) await moveFileQueueInto(queue, home, logs.logger('queue'));
  const hooks = createHooks();
  const registry = new Registry();
  const execute = createDispatcher({ registry, hooks, config: cfg, log: logs.logger('skills') });
  // A shared queue: an action from a chat is pinned to the runner that received it (its replies, typing and
  // reactions need that runner's connection); it moves only when that runner is gone (docs/scaling.md).
  const chatHere = (source: string | undefined) =>
    source !== undefined && registry.use<ChannelCapability>(`channel:${source}`) !== undefined;
  const queueApi: QueueApi = {
    push: async (input, options) => {
      const before = Date.now();
      const worker = queue.worker;
      const a = await queue.push(
        worker !== undefined && chatHere(input.source) ? { ...input, metadata: { ...input.metadata, originWorker: worker } } : input,
        options,
      );
      // A retried push with the same idempotency key is the first push's action: it was announced then.
      if (options?.idempotencyKey === undefined || Date.parse(a.createdAt) >= before) await hooks.actionQueued.promise(a);
      return a;
    },
    get: (id) => queue.get(id),
    cancel: async (id, reason) => {
      // An executing action is stopped through the queue, so the runner holding it stops it wherever it runs.
      const { outcome, action } = await cancelAction(queue, id, reason);
      if (outcome === 'removed' && action) await hooks.actionSettled.promise(action, { status: 'removed', detail: reason });
      return outcome;
    },
    amend: async (id, change) => {
      if (!(await queue.amend(id, change))) return false;
      const a = queue.get(id);
      if (a) await hooks.actionAmended.promise(a);
      return true;
    },
    list: () => queue.list(),
    counts: () => queue.counts(),
    ...(queue.knowsInbound ? { knowsInbound: queue.knowsInbound } : {}),
  };
  const startedAt = new Date().toISOString();
  let runner: Runner | undefined;
  const info: KernelInfoCapability = {
    version,
    home,
    startedAt,
    // A shared queue: a runner on any machine works on it.
    agentRunning: () => Boolean(runner) || livePids(home).some((p) => p.name === 'agent') || (queue.sharedRunners() ?? 0) > 0,
    runner: () => runner?.status(),
    logs: (o) => logs.recent(o),
    onLog: (l) => logs.onEntry(l),
    plugins: () =>
      host
        .statuses()
        .map((s) => ({ id: s.id, state: s.state, ...(s.reason ? { reason: s.reason } : {}), ...(s.kind ? { kind: s.kind } : {}) })),
    enablePlugin: async (id) => {
      const st = await host.enable(id);
      return st ? { id: st.id, state: st.state, ...(st.reason ? { reason: st.reason } : {}) } : undefined;
    },
    configKeys: () =>
      keys.entries().map((e) => ({
        key: e.key,
        owner: e.owner,
        policy: e.spec.policy,
        secret: Boolean(e.spec.secret),
        description: e.spec.description,
        type: describeSchema(e.spec.schema),
        // A secret's default is never shown (there is none but the empty string, which says nothing either).
        ...(e.spec.default !== undefined && !e.spec.secret ? { default: e.spec.default } : {}),
        source: config.layerOf(e.key),
      })),
  };
  registry.provide('kernel', 'kernel:info', info);
  const policy: PolicyCapability = { isAdmin: (actor) => isAdmin(actor, cfg), sessionKey: (actor) => sessionKey(actor, cfg) };
  registry.provide('kernel', 'kernel:policy', policy);
  const host = new PluginHost({
    home,
    version,
    config: hostConfig(cfg, keys),
    registry,
    hooks,
    dispatch: execute,
    queue: queueApi,
    logger: (tag) => logs.logger(tag),
    ...opts.host,
  });
  cfg.onChange((e) => hooks.configChanged.call({ key: e.key, value: e.value, origin: e.origin.kind }));

  // The lists apply to user plugin folders before any of their code runs (discover.ts), then to manifest ids.
  const lists = { allow: cfg.get<string[]>('pluginAllowList') ?? [], deny: cfg.get<string[]>('pluginDenyList') ?? [] };
  const candidates = [
    ...(await discoverAll({
      home,
      lists,
      ...(opts.builtinDir ? { builtinDir: opts.builtinDir } : {}),
      ...(opts.builtinOnly ? { builtinOnly: true } : {}),
    })),
    ...(opts.extraPlugins ?? []),
  ];
  await host.start(candidates);
  cfg.warnUnknownKeys();
  host.startHealthTimer();

  let customSkills: CustomSkills | undefined;
  if (opts.watchSkills !== false) {
    customSkills = new CustomSkills({ home, host, log: logs.logger('skills') });
    await customSkills.start();
  }

  const unwatchConfig = (opts.watchConfig ?? opts.runAgent) ? watchConfigFile(cfg, log) : undefined;

  // Downloads are swept by the agent's process (one per home); a detached process keeps its own log in bounds.
  const housekeeping =
    opts.runAgent || opts.logFile
      ? new Housekeeping({
          home,
          config: cfg,
          log: logs.logger('housekeeping'),
          downloads: Boolean(opts.runAgent),
          ...(opts.logFile ? { logFile: opts.logFile } : {}),
        })
      : undefined;
  housekeeping?.start();

  if (opts.runAgent) {
    runner = new Runner({
      queue,
      hooks,
      agent: () => registry.use<AgentCapability>('agent'),
      log: logs.logger('runner'),
      ...(opts.runner?.maxIdleMs ? { maxIdleMs: opts.runner.maxIdleMs } : {}),
      ...(queue.worker !== undefined
        ? {
            accept: (a: Action) => {
              const origin = a.metadata.originWorker;
              if (typeof origin !== 'string' || origin === queue.worker) return true;
              if (queue.isWorkerAlive(origin)) return false;
              return registry.use<ChannelCapability>(`channel:${a.source}`)?.status().enabled === true;
            },
          }
        : {}),
    });
    runner.start();
  }

  let stopping: Promise<void> | undefined;
  return {
    home,
    version,
    config: cfg,
    keys,
    queue,
    hooks,
    registry,
    host,
    customSkills,
    runner,
    logs,
    log,
    execute,
    operator: { kind: 'operator', channel: 'cli' },
    cancel: queueApi.cancel,
    stop() {
      stopping ??= (async () => {
        await runner?.stop();
        await housekeeping?.stop();
        unwatchConfig?.();
        await customSkills?.stop();
        await host.stopAll();
        await queue.close();
      })();
      return stopping;
    },
  };
}

/**
 * Applies edits of the config file (by `keel config set` from another process, or by hand) to this running
 * kernel. A file that no longer parses keeps the last good configuration and says so. Plugin allow/deny list
 * changes take effect at the next start.
 */
function watchConfigFile(config: ConfigStore, log: Logger): () => void {
  const dir = dirname(config.path);
  const name = basename(config.path);
  let timer: NodeJS.Timeout | undefined;
  const reload = () => {
    config
      .reload()
      .then(({ changed }) => {
        if (changed.length) log.info(`Configuration reloaded: ${changed.join(', ')} changed.`);
      })
      .catch((e: unknown) => log.error(`${name} was changed but cannot be used; keeping the last good configuration: ${errorMessage(e)}`));
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, (_event, file) => {
      if (file !== name) return;
      clearTimeout(timer);
      timer = setTimeout(reload, 100);
    });
    watcher.on('error', () => undefined);
  } catch (e) {
    log.warn(`Cannot watch ${config.path} for changes: ${errorMessage(e)}`);
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}

function secretValues(config: ConfigStore, keys: KeyRegistry): string[] {
  const out: string[] = [];
  for (const k of keys.keys()) {
    if (!keys.get(k)?.spec.secret) continue;
    const v = config.get(k);
    if (typeof v === 'string' && v) out.push(v);
  }
  return out;
}
