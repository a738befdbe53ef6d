/**
 * The plugin host: validate, filter, order, start, health-check, quarantine, reload and stop plugins.
 * Built-in and user plugins go through exactly the same path. One plugin's failure never stops the kernel.
 */
import type { HookCatalogue } from '../../sdk/hooks.js';
import type { PluginContext, PluginDefinition, PluginInstance, QueueApi } from '../../sdk/plugin.js';
import type { Logger, PluginManifest } from '../../sdk/types.js';
import { ErrorCodes, KeelError, errorCode, errorMessage, type ErrorCode } from '../errors.js';
import type { HookName } from '../../sdk/hooks.js';
import { untapAll } from '../hooks/catalogue.js';
import type { Dispatcher } from '../registry/dispatch.js';
import type { Registry } from '../registry/registry.js';
import { compileArgs, lazyArgs } from '../registry/validator.js';
import { createPluginContext, type HostConfig } from './context.js';
import type { PluginCandidate, PluginOrigin } from './discover.js';
import { permittedByLists } from './lists.js';
import { validateManifest } from './manifest-schema.js';
import { orderPlugins } from './order.js';
import { PluginStateFile } from './state-file.js';
import { withTimeout } from './timeout.js';

export { permittedByLists } from './lists.js';

export type PluginStateName = 'loaded' | 'disabled' | 'failed' | 'quarantined' | 'invalid' | 'stopped';

export interface PluginStatus {
  id: string;
  origin: PluginOrigin;
  state: PluginStateName;
  reason?: string;
  code?: ErrorCode;
  version?: string;
  kind?: string;
  description?: string;
  skills: string[];
  failures: number;
}

export interface HostOptions {
  home: string;
  version: string;
  config: HostConfig;
  registry: Registry;
  hooks: Readonly<HookCatalogue>;
  dispatch: Dispatcher;
  queue: QueueApi;
  logger: (tag: string) => Logger;
  setupTimeoutMs?: number;
  stopTimeoutMs?: number;
  healthTimeoutMs?: number;
  /** Consecutive failures (setup or health) before quarantine. */
  quarantineAfter?: number;
}

interface Running {
  candidate: PluginCandidate;
  manifest: PluginManifest;
  instance: PluginInstance;
  ctx: PluginContext;
  abort: AbortController;
  revoke(): void;
}

interface Known {
  candidate: PluginCandidate;
  manifest?: PluginManifest;
  status: PluginStatus;
}

const codeOf = errorCode;

export class PluginHost {
  private readonly known = new Map<string, Known>();
  private readonly running = new Map<string, Running>();
  /** Start order, for stopping in reverse. */
  private readonly order: string[] = [];
  private readonly log: Logger;
  private readonly state: PluginStateFile;
  private healthTimer: NodeJS.Timeout | undefined;
  /** Extra checks of each health round (custom skills that do not compile). */
  private readonly probes: Array<() => Promise<void>> = [];

  constructor(private readonly o: HostOptions) {
    this.log = o.logger('plugins');
    this.state = new PluginStateFile(o.home);
  }

  statuses(): PluginStatus[] {
    return [...this.known.values()].map((k) => ({ ...k.status, skills: [...k.status.skills] }));
  }

  status(id: string): PluginStatus | undefined {
    return this.known.get(id)?.status;
  }

  /** Validate, filter, order and start every candidate. */
  async start(candidates: PluginCandidate[]): Promise<void> {
    const accepted: Known[] = [];
    for (const c of candidates) {
      const k = this.admit(c);
      if (k) accepted.push(k);
    }
    const { ordered, refused } = orderPlugins(accepted.map((k) => k.manifest!));
    for (const r of refused) this.setState(r.id, 'failed', r.reason, r.code);
    for (const m of ordered) await this.startOne(m.id);
  }

  /** Manifest check, duplicate check, lists, quarantine, config keys. Returns the entry if it may start. */
  private admit(c: PluginCandidate): Known | undefined {
    const base: PluginStatus = { id: c.id, origin: c.origin, state: 'invalid', skills: [], failures: this.state.failures(c.id) };
    if (this.known.has(c.id)) {
      const other = this.known.get(c.id)!;
      const reason = `duplicate plugin id "${c.id}": ${c.dir} and ${other.candidate.dir}; the first one (${other.candidate.origin}) is kept`;
      this.log.error(`${ErrorCodes.PLUGIN_DUPLICATE}: ${reason}`);
      this.known.set(`${c.id}@${c.dir}`, {
        candidate: c,
        status: { ...base, id: `${c.id}@${c.dir}`, state: 'invalid', reason, code: ErrorCodes.PLUGIN_DUPLICATE },
      });
      return undefined;
    }
    if (c.disabled) {
      // Refused by name before any of its code ran (not even its manifest module).
      this.known.set(c.id, { candidate: c, status: { ...base, state: 'disabled', reason: c.disabled } });
      this.log.info(`Plugin ${c.id} disabled: ${c.disabled}`);
      return undefined;
    }
    if (c.error) {
      this.known.set(c.id, { candidate: c, status: { ...base, reason: c.error, code: ErrorCodes.MANIFEST_INVALID } });
      this.log.error(`Plugin ${c.id}: ${c.error}`);
      return undefined;
    }
    let manifest: PluginManifest;
    try {
      manifest = validateManifest(c.manifest, c.dir);
    } catch (e) {
      this.known.set(c.id, { candidate: c, status: { ...base, reason: errorMessage(e), code: ErrorCodes.MANIFEST_INVALID } });
      this.log.error(errorMessage(e));
      return undefined;
    }
    const k: Known = {
      candidate: c,
      manifest,
      status: {
        ...base,
        state: 'stopped',
        version: manifest.version,
        kind: manifest.kind,
        description: manifest.description,
        skills: (manifest.skills ?? []).map((s) => s.name),
      },
    };
    this.known.set(c.id, k);
    // Keys of every valid manifest are known, so `keel config set` works even for a disabled plugin.
    try {
      if (manifest.config || manifest.channel) this.o.config.registerKeys(manifest.id, manifest.config ?? {}, manifest.channel);
    } catch (e) {
      this.fail(k, e, ErrorCodes.CONFIG_DUPLICATE_KEY);
      return undefined;
    }
    const lists = permittedByLists(
      manifest.id,
      this.o.config.get<string[]>('pluginAllowList'),
      this.o.config.get<string[]>('pluginDenyList'),
    );
    if (!lists.ok) {
      this.setState(c.id, 'disabled', lists.reason);
      this.log.info(`Plugin ${c.id} disabled: ${lists.reason}`);
      return undefined;
    }
    const q = this.state.quarantine(c.id);
    if (q) {
      this.setState(c.id, 'quarantined', `quarantined since ${q.since}: ${q.reason}. Repair it, then run \`keel plugins enable ${c.id}\``);
      return undefined;
    }
    return k;
  }

  private setState(id: string, state: PluginStateName, reason?: string, code?: ErrorCode): void {
    const k = this.known.get(id);
    if (!k) return;
    k.status.state = state;
    if (reason === undefined) delete k.status.reason;
    else k.status.reason = reason;
    if (code === undefined) delete k.status.code;
    else k.status.code = code;
  }

  private fail(k: Known, e: unknown, fallback: ErrorCode): void {
    const code = codeOf(e) ?? fallback;
    this.setState(k.candidate.id, 'failed', errorMessage(e), code);
    this.log.error(`Plugin ${k.candidate.id} failed: ${errorMessage(e)}`);
  }

  /** Import and set up one admitted plugin, under the setup timeout. */
  private async startOne(id: string): Promise<boolean> {
    const k = this.known.get(id);
    if (!k?.manifest || this.running.has(id)) return false;
    const manifest = k.manifest;
    const abort = new AbortController();
    let ctx: ReturnType<typeof createPluginContext> | undefined;
    try {
      const def: PluginDefinition = await withTimeout(k.candidate.load(), this.o.setupTimeoutMs ?? 10_000, `loading plugin ${id}`);
      if (def.manifest && def.manifest.id !== manifest.id) {
        throw new KeelError(
          ErrorCodes.MANIFEST_INVALID,
          `Plugin entry of ${id} exports a manifest with id "${def.manifest.id}"; the manifest file says "${manifest.id}".`,
        );
      }
      // Built-in plugins' argument schemas (tested with them) are compiled at their skill's first call: some hundred
      // compiles less at every start. A user's are compiled now, so a broken schema fails the load with its reason.
      this.o.registry.addSkills(id, manifest.skills ?? [], k.candidate.origin === 'builtin' ? lazyArgs : compileArgs);
      ctx = createPluginContext({ ...this.o, manifest, abort, onTapError: (owner, hook, e) => this.tapFailed(owner, hook, e) });
      const setup = Promise.resolve(def.setup(ctx.ctx));
      const instance =
        (await withTimeout(setup, this.o.setupTimeoutMs ?? 10_000, `setup of plugin ${id}`).catch((e: unknown) => {
          // A setup that finishes after its time is up is stopped then: nobody owns what it opened (a server on its
          // port, timers), and the next try would find them in its way.
          setup.then((late) => late?.stop?.()).catch(() => undefined);
          throw e;
        })) ?? {};
      this.running.set(id, { candidate: k.candidate, manifest, instance, ctx: ctx.ctx, abort, revoke: ctx.revoke });
      this.order.push(id);
      this.setState(id, 'loaded');
      if (this.state.failures(id) > 0 && !(await this.probe(id))) return false;
      this.o.hooks.pluginLoaded.call({ id });
      return true;
    } catch (e) {
      abort.abort();
      ctx?.revoke();
      this.cleanup(id);
      this.fail(k, e, ErrorCodes.PLUGIN_SETUP_FAILED);
      // A port in use or a missing device is not the plugin's fault: no step towards quarantine and repair.
      if (codeOf(e) !== ErrorCodes.PLUGIN_ENVIRONMENT) await this.recordFailure(id, errorMessage(e));
      return false;
    }
  }

  /** Per plugin, the tail of its tap-failure handling, so failures of one plugin are counted one at a time. */
  private readonly tapChains = new Map<string, Promise<void>>();
  private stopping = false;

  /**
   * A tap of a plugin threw or rejected. The hook's caller never sees it (kernel/hooks/catalogue.ts); here it is
   * logged with the plugin and hook and counted like a failed health check: at `quarantineAfter` consecutive
   * failures the plugin is stopped (its taps removed), quarantined, and its repair queued. Runs detached from
   * the hook, so the action that fired it is neither delayed nor changed.
   */
  private tapFailed(id: string, hook: HookName, error: unknown): void {
    this.log.error(
      `Plugin ${id}: its ${hook} hook tap failed: ${errorMessage(error)}. The ${hook} outcome is unchanged; the failure counts towards the plugin's health.`,
    );
    const prev = this.tapChains.get(id) ?? Promise.resolve();
    const next = prev
      .then(async () => {
        // Already stopped or quarantined by an earlier failure: the same burst is not counted twice. Taps that
        // fail while everything shuts down are only logged.
        if (!this.running.has(id) || this.stopping) return;
        const reason = `${hook} hook tap failed: ${errorMessage(error)}`;
        if (this.state.failures(id) + 1 >= (this.o.quarantineAfter ?? 3)) await this.stopOne(id);
        await this.recordFailure(id, reason);
      })
      .catch((e: unknown) => this.log.error(`Counting the failed ${hook} tap of ${id} failed: ${errorMessage(e)}`))
      .finally(() => {
        if (this.tapChains.get(id) === next) this.tapChains.delete(id);
      });
    this.tapChains.set(id, next);
  }

  /** Resolves once every reported tap failure has been counted (tests, orderly shutdown). */
  async tapFailuresSettled(): Promise<void> {
    while (this.tapChains.size > 0) await Promise.all([...this.tapChains.values()]);
  }

  /** After earlier failures, a plugin that now starts is healthy again only when its health check agrees. */
  private async probe(id: string): Promise<boolean> {
    const ok = await this.healthOf(id);
    if (ok.ok) {
      this.state.reset(id);
      this.known.get(id)!.status.failures = 0;
    }
    return true;
  }

  private cleanup(id: string): void {
    untapAll(this.o.hooks, id);
    this.o.registry.removePlugin(id);
  }

  /** Counts a consecutive failure; at the threshold the plugin is quarantined and a repair action is queued. */
  private async recordFailure(id: string, reason: string): Promise<void> {
    const n = this.state.fail(id);
    const k = this.known.get(id);
    if (k) k.status.failures = n;
    if (n < (this.o.quarantineAfter ?? 3)) return;
    this.state.setQuarantine(id, reason);
    this.setState(id, 'quarantined', `quarantined after ${n} consecutive failures: ${reason}`);
    this.log.error(`Plugin ${id} quarantined after ${n} consecutive failures: ${reason}`);
    this.o.hooks.pluginQuarantined.call({ id, reason });
    try {
      await this.o.queue.push({
        task: `Repair plugin "${id}" with self_repair_skill: it failed ${n} times in a row (${reason}).`,
        priority: 8,
        source: 'kernel',
        actor: { kind: 'operator', channel: 'kernel' },
        metadata: { repair: { plugin: id, reason } },
      });
    } catch (e) {
      this.log.error(`Could not queue the repair of ${id}: ${errorMessage(e)}`);
    }
  }

  private async healthOf(id: string): Promise<{ ok: boolean; message?: string }> {
    const r = this.running.get(id);
    if (!r?.instance.health) return { ok: true };
    try {
      const rep = await withTimeout(Promise.resolve(r.instance.health()), this.o.healthTimeoutMs ?? 5_000, `health check of ${id}`);
      return rep && typeof rep.ok === 'boolean' ? rep : { ok: false, message: 'health() returned no report' };
    } catch (e) {
      return { ok: false, message: errorMessage(e) };
    }
  }

  /** One health round: running plugins are checked, failed ones get another setup attempt. */
  async checkHealth(): Promise<void> {
    for (const [id] of [...this.running]) {
      const rep = await this.healthOf(id);
      if (rep.ok) {
        if (this.state.failures(id) > 0) {
          this.state.reset(id);
          this.known.get(id)!.status.failures = 0;
        }
        continue;
      }
      const reason = `health check failed: ${rep.message ?? 'not ok'}`;
      this.log.warn(`Plugin ${id}: ${reason}`);
      const threshold = this.o.quarantineAfter ?? 3;
      if (this.state.failures(id) + 1 >= threshold) await this.stopOne(id);
      await this.recordFailure(id, reason);
    }
    const retryable = new Set<string>([ErrorCodes.PLUGIN_SETUP_FAILED, ErrorCodes.PLUGIN_TIMEOUT, ErrorCodes.PLUGIN_ENVIRONMENT]);
    for (const k of [...this.known.values()]) {
      if (k.status.state === 'failed' && k.manifest && !this.running.has(k.candidate.id) && retryable.has(k.status.code ?? '')) {
        await this.startOne(k.candidate.id);
      }
    }
    for (const probe of this.probes) {
      try {
        await probe();
      } catch (e) {
        this.log.error(`Health probe failed: ${errorMessage(e)}`);
      }
    }
  }

  /** Runs checkHealth every `pluginHealthCheckIntervalMinutes`. */
  startHealthTimer(): void {
    const minutes = Number(this.o.config.get('pluginHealthCheckIntervalMinutes') ?? 15);
    if (!(minutes > 0)) return;
    this.healthTimer = setInterval(() => {
      this.checkHealth().catch((e) => this.log.error(`Health round failed: ${errorMessage(e)}`));
    }, minutes * 60_000);
    this.healthTimer.unref();
  }

  private async stopOne(id: string): Promise<void> {
    const r = this.running.get(id);
    if (!r) return;
    this.running.delete(id);
    const i = this.order.indexOf(id);
    if (i >= 0) this.order.splice(i, 1);
    r.abort.abort();
    try {
      if (r.instance.stop) await withTimeout(Promise.resolve(r.instance.stop()), this.o.stopTimeoutMs ?? 5_000, `stop of plugin ${id}`);
    } catch (e) {
      this.log.warn(`Plugin ${id} did not stop cleanly: ${errorMessage(e)}`);
    }
    r.revoke();
    this.cleanup(id);
    this.setState(id, 'stopped');
    this.o.hooks.pluginUnloaded.call({ id });
  }

  /** Load one more plugin at run time (hot reload, custom skills). Replaces a running one with the same id. */
  async load(candidate: PluginCandidate): Promise<PluginStatus> {
    if (this.running.has(candidate.id)) await this.unload(candidate.id);
    this.known.delete(candidate.id);
    const k = this.admit(candidate);
    if (k) {
      const { refused } = orderPlugins([k.manifest!], (cap) => this.o.registry.providerOf(cap) !== undefined || this.running.has(cap));
      if (refused[0]) this.setState(candidate.id, 'failed', refused[0].reason, refused[0].code);
      else await this.startOne(candidate.id);
    }
    return this.known.get(candidate.id)!.status;
  }

  async unload(id: string): Promise<void> {
    await this.stopOne(id);
    const k = this.known.get(id);
    if (k?.manifest?.config || k?.manifest?.channel) this.o.config.unregisterKeys(id);
    this.known.delete(id);
  }

  /**
   * A plugin that cannot even be loaded (a custom skill that does not compile or import): listed as failed and
   * counted like a failed setup, so that at `quarantineAfter` consecutive failures it is quarantined and its
   * repair is queued. Nothing is counted while a good version of it runs (a bad save keeps the last good one).
   */
  async reportBroken(c: { id: string; origin: PluginOrigin; dir: string }, reason: string): Promise<PluginStatus> {
    const running = this.known.get(c.id);
    if (this.running.has(c.id) && running) return running.status;
    let k = this.known.get(c.id);
    if (!k || k.manifest) {
      const candidate: PluginCandidate = {
        id: c.id,
        origin: c.origin,
        dir: c.dir,
        error: reason,
        load: () => Promise.reject(new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, reason)),
      };
      k = { candidate, status: { id: c.id, origin: c.origin, state: 'failed', skills: [], failures: this.state.failures(c.id) } };
      this.known.set(c.id, k);
    }
    k.candidate.error = reason;
    const lists = permittedByLists(c.id, this.o.config.get<string[]>('pluginAllowList'), this.o.config.get<string[]>('pluginDenyList'));
    if (!lists.ok) {
      this.setState(c.id, 'disabled', lists.reason);
      return k.status;
    }
    const q = this.state.quarantine(c.id);
    if (q) {
      this.setState(c.id, 'quarantined', `quarantined since ${q.since}: ${q.reason}. Repair it, then run \`keel plugins enable ${c.id}\``);
      return k.status;
    }
    this.setState(c.id, 'failed', reason, ErrorCodes.PLUGIN_LOAD_FAILED);
    await this.recordFailure(c.id, reason);
    return k.status;
  }

  /** Forget a plugin that is not running (its file was removed). */
  forget(id: string): void {
    if (!this.running.has(id)) this.known.delete(id);
  }

  /** The allow/deny lists' verdict on a name, as configured now (custom skills ask before compiling a file). */
  permitted(name: string): { ok: boolean; reason?: string } {
    return permittedByLists(name, this.o.config.get<string[]>('pluginAllowList'), this.o.config.get<string[]>('pluginDenyList'));
  }

  /** Adds a check to every health round. */
  addHealthProbe(probe: () => Promise<void>): void {
    this.probes.push(probe);
  }

  /** Lift a quarantine (after a repair) and try to start the plugin again. */
  async enable(id: string): Promise<PluginStatus | undefined> {
    this.state.clearQuarantine(id);
    const k = this.known.get(id);
    if (!k) return undefined;
    if (!k.manifest) {
      // Never loaded (a custom skill that did not compile): it loads again when its file is saved or at the next
      // health round.
      this.state.reset(id);
      k.status.failures = 0;
      this.setState(id, 'failed', k.candidate.error, ErrorCodes.PLUGIN_LOAD_FAILED);
      return k.status;
    }
    if (k.status.state === 'quarantined' || k.status.state === 'failed') {
      k.status.failures = 0;
      return this.load(k.candidate);
    }
    return k.status;
  }

  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Stop everything in reverse start order. */
  async stopAll(): Promise<void> {
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.stopping = true;
    await this.tapFailuresSettled();
    for (const id of [...this.order].reverse()) await this.stopOne(id);
  }
}
