/**
 * The running configuration: merged layers to read, policy-checked changes to write.
 *
 * Reads are synchronous and cached (dispatch reads `safeMode` and `adminUsers` on every skill call).
 * Writes are serialised, edit keel.config.yaml in place (comments survive), go to disk atomically
 * with mode 0600, and only ever write the key being changed: a secret that came from the
 * environment is never copied into the file.
 */
import { join } from 'node:path';
import type { ConfigApi } from '../../sdk/plugin.js';
import type { ConfigChangeOutcome, ConfigOrigin, Logger, PendingConfigChange, PolicyClass } from '../../sdk/types.js';
import { ErrorCodes, KeelError, errorMessage } from '../errors.js';
import { approverProblem, decideChange } from './change-policy.js';
import type { KeyRegistry, RegisteredKey } from './key-registry.js';
import { Layers, type ConfigProblem, type Layer } from './layers.js';
import { suggestionText } from './nearest.js';
import { PendingStore, type StoredPendingChange } from './pending-store.js';
import { looksSecret, mask, maskByName } from './redact.js';
import { ensurePrivateMode, readConfigFile, writeConfigKey } from './yaml-file.js';

export const CONFIG_FILE_NAME = 'keel.config.yaml';
export const PENDING_FILE_NAME = 'config-pending.json';

export interface ConfigStoreOptions {
  /** The data directory (`~/.keel` or `KEEL_HOME`). */
  home: string;
  /** `--config` path; default `<home>/keel.config.yaml`. */
  file?: string;
  /** Default `process.env`. Read once. */
  env?: NodeJS.ProcessEnv;
  /** Command-line flags, highest precedence. Strings are parsed by the key's schema. */
  overrides?: Record<string, unknown>;
  registry: KeyRegistry;
  log?: Logger;
  /** Epoch milliseconds; tests pass a fixed clock. */
  clock?: () => number;
  /**
   * Do not warn about file keys nobody declares when loading: the caller registers more keys first (the kernel,
   * whose plugins declare theirs as they load) and then calls `warnUnknownKeys()`.
   */
  deferUnknownKeys?: boolean;
}

/** An applied change, saying when the new file value is hidden by a higher layer. */
export type AppliedChange = Extract<ConfigChangeOutcome, { status: 'applied' }> & {
  shadowedBy?: { layer: 'env' | 'override'; name?: string };
  message?: string;
};

/** What `describe` tells about one key (for `manage_config` with detail `policy`). */
export interface KeyDescription {
  key: string;
  owner: string;
  policy: PolicyClass;
  secret: boolean;
  description: string;
  expected: string;
  env: string[];
  layer: Layer;
  /** Masked when secret. */
  value: unknown;
}

/**
 * One effective value changed. `origin` is the request's origin (with its actor and reason), or
 * `{ kind: 'file' }` when a reload found the file edited by hand; `origin.kind` is what the
 * `configChanged` hook carries.
 */
export interface ConfigStoreChange {
  key: string;
  /** Masked when the key is secret. */
  value: unknown;
  origin: ConfigOrigin | { kind: 'file' };
}

export type ConfigChangeListener = (e: ConfigStoreChange) => void;

const SILENT: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export class ConfigStore implements ConfigApi {
  readonly path: string;
  readonly registry: KeyRegistry;
  private readonly log: Logger;
  private readonly layers: Layers;
  private readonly pendingStore: PendingStore;
  private readonly listeners = new Set<ConfigChangeListener>();
  private readonly reported = new Set<string>();
  private writing: Promise<unknown> = Promise.resolve();

  private constructor(opts: ConfigStoreOptions) {
    this.path = opts.file ?? join(opts.home, CONFIG_FILE_NAME);
    this.registry = opts.registry;
    this.log = opts.log ?? SILENT;
    const now = opts.clock ?? Date.now;
    this.layers = new Layers(this.registry, this.path, opts.env ?? process.env, opts.overrides ?? {}, (p) => this.reportProblem(p));
    this.pendingStore = new PendingStore(join(opts.home, PENDING_FILE_NAME), opts.log, now);
  }

  /**
   * Read the file and the pending list. Unparseable YAML throws CONFIG_FILE_INVALID with the line:
   * running on defaults instead could silently switch safe mode off. Invalid values do not throw;
   * they are logged, listed by `problems()`, and the key falls back to the next layer.
   */
  static async load(opts: ConfigStoreOptions): Promise<ConfigStore> {
    const store = new ConfigStore(opts);
    const content = await readConfigFile(store.path);
    if (content.exists && (await ensurePrivateMode(store.path))) {
      store.log.warn(`config: ${store.path} was readable by other users; its mode is now 0600 (it holds credentials)`);
    }
    store.layers.setFile(content.values);
    await store.pendingStore.load();
    if (!opts.deferUnknownKeys) store.warnUnknownKeys();
    store.problems();
    return store;
  }

  get pendingPath(): string {
    return this.pendingStore.path;
  }

  // ------------------------------------------------------------ reading

  get<T = unknown>(key: string): T {
    return this.layers.resolve(key)?.value as T;
  }

  has(key: string): boolean {
    return this.layers.resolve(key)?.value !== undefined;
  }

  /** Which layer the effective value comes from. */
  layerOf(key: string): Layer {
    return this.layers.resolve(key)?.layer ?? 'default';
  }

  /** Declared keys, then file keys nobody has declared (kept for plugins not loaded). */
  keys(): string[] {
    return [...this.registry.keys(), ...this.unknownFileKeys()];
  }

  all(opts: { masked?: boolean } = {}): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of this.keys()) {
      const value = this.get(key);
      if (value === undefined) continue;
      out[key] = opts.masked ? this.maskFor(key, value) : value;
    }
    return out;
  }

  /** Keys in the file that no registered owner declares. */
  unknownFileKeys(): string[] {
    return this.layers.fileKeys().filter((k) => !this.registry.has(k));
  }

  /** Values present in some layer but unusable (wrong type), each with where it came from. */
  problems(): ConfigProblem[] {
    return this.layers.problems();
  }

  describe(key: string): KeyDescription {
    const entry = this.known(key);
    const r = this.layers.resolve(key);
    return {
      key,
      owner: entry.owner,
      policy: entry.spec.policy,
      secret: entry.spec.secret === true,
      description: entry.spec.description,
      expected: this.registry.expected(key),
      env: [...(entry.spec.env ?? [])],
      layer: r?.layer ?? 'default',
      value: r ? this.maskFor(key, r.value) : undefined,
    };
  }

  /** Throws CONFIG_UNKNOWN_KEY, with "did you mean" suggestions, when no owner declares `key`. */
  assertKnown(key: string): void {
    this.known(key);
  }

  /** A `keel config set <key> <value>` argument as the key's type. Throws with suggestions or the expected type. */
  parseCliValue(key: string, raw: string): unknown {
    this.known(key);
    const check = this.registry.parseString(key, raw, { strict: true });
    if (!check.ok) throw this.invalid(key, check.message);
    return check.value;
  }

  // ------------------------------------------------------------ changing

  /**
   * Change a key. The value is validated first (a bad value changes nothing), then the policy:
   * the operator applies anything; the agent (and an admin through the agent) applies SAFE keys,
   * queues APPROVAL keys for a human, and is refused LOCKED keys.
   */
  async set(key: string, value: unknown, origin: ConfigOrigin): Promise<ConfigChangeOutcome> {
    const entry = this.known(key);
    const check = this.registry.validate(key, value, { strict: true });
    if (!check.ok) throw this.invalid(key, check.message);
    switch (decideChange(entry.spec.policy, origin)) {
      case 'apply':
        return this.serial(() => this.applyChange(key, check.value, origin));
      case 'pending':
        return this.serial(() => this.requestApproval(entry, check.value, origin));
      case 'locked': {
        const message = `${key} is LOCKED: the agent cannot change it; an operator can with \`keel config set\``;
        this.log.warn(
          `config: refused a change of ${key} by ${origin.kind}${origin.reason ? ` (reason: ${origin.reason})` : ''}: ${message}`,
        );
        throw new KeelError(ErrorCodes.CONFIG_LOCKED, message, { key, policy: entry.spec.policy });
      }
    }
  }

  /** Changes waiting for a human, secrets masked. */
  pending(): PendingConfigChange[] {
    return this.pendingStore.list().map((c) => this.publicPending(c));
  }

  /** Apply a pending change. Only the operator or a channel admin; the value is re-validated first. */
  async approve(id: string, origin: ConfigOrigin): Promise<ConfigChangeOutcome> {
    this.assertApprover(origin, 'approve');
    return this.serial(async () => {
      // Taken off the list before it is applied: a rejection racing in another process finds it gone.
      let value: unknown;
      const item = await this.pendingStore.remove(id, (c) => {
        this.known(c.key);
        const check = this.registry.validate(c.key, c.value, { strict: true });
        if (!check.ok) throw this.invalid(c.key, `${check.message}; the pending change ${id} stays until rejected`);
        value = check.value;
      });
      if (!item) throw notFound(id);
      let outcome: ConfigChangeOutcome;
      try {
        outcome = await this.applyChange(item.key, value, origin);
      } catch (e) {
        await this.pendingStore.restore(item);
        throw e;
      }
      this.log.info(`config: pending change ${id} (${item.key}) approved by ${origin.kind}`);
      return outcome;
    });
  }

  /** Drop a pending change. Same rule as approving. */
  async reject(id: string, origin: ConfigOrigin): Promise<PendingConfigChange> {
    this.assertApprover(origin, 'reject');
    return this.serial(async () => {
      const removed = await this.pendingStore.remove(id);
      if (!removed) throw notFound(id);
      this.log.info(`config: pending change ${id} (${removed.key}) rejected by ${origin.kind}`);
      return this.publicPending(removed);
    });
  }

  /** Listen to effective value changes (values of secret keys arrive masked). Returns the unsubscribe. */
  onChange(listener: ConfigChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Re-read the file (and the pending list) and announce every effective value that changed, with
   * origin 'file'. A file that no longer parses throws and the last good configuration stays.
   */
  async reload(): Promise<{ changed: string[] }> {
    return this.serial(async () => {
      const content = await readConfigFile(this.path);
      const before = this.snapshot();
      this.layers.setFile(content.values);
      await this.pendingStore.load();
      this.warnUnknownKeys();
      return { changed: this.announce(before, { kind: 'file' }) };
    });
  }

  // ------------------------------------------------------------ internals

  private async applyChange(key: string, value: unknown, origin: ConfigOrigin): Promise<AppliedChange> {
    const before = this.snapshot();
    const values = await writeConfigKey(this.path, key, value);
    this.layers.setFile(values);
    const secret = this.registry.get(key)?.spec.secret === true;
    const shown = secret ? mask(value) : value;
    const outcome: AppliedChange = { status: 'applied', key, value: shown };
    const r = this.layers.resolve(key);
    if (r && (r.layer === 'env' || r.layer === 'override')) {
      outcome.shadowedBy =
        r.layer === 'env' ? { layer: 'env', ...(r.envName !== undefined ? { name: r.envName } : {}) } : { layer: 'override' };
      outcome.message =
        r.layer === 'env'
          ? `${key} was saved to ${this.path}, but the environment variable ${r.envName} overrides it while it is set`
          : `${key} was saved to ${this.path}, but a command-line flag overrides it for this run`;
      this.log.warn(`config: ${outcome.message}`);
    }
    // Logs also mask keys whose name looks secret: a manifest that forgot `secret: true` must not leak.
    const logged = secret || looksSecret(key) ? String(mask(value)) : JSON.stringify(value);
    this.log.info(`config: ${key} set to ${logged} by ${origin.kind}`);
    this.announce(before, origin);
    return outcome;
  }

  private async requestApproval(entry: RegisteredKey, value: unknown, origin: ConfigOrigin): Promise<ConfigChangeOutcome> {
    const item = await this.pendingStore.add({
      key: entry.key,
      value,
      ...(origin.reason !== undefined ? { reason: origin.reason } : {}),
      ...(origin.actor !== undefined ? { requestedBy: origin.actor } : {}),
    });
    const message = `${entry.key} needs approval: pending change ${item.id} waits for a human (\`manage_config\` approve, or \`keel config approve ${item.id}\`)`;
    this.log.info(`config: ${message}`);
    return { status: 'pending', key: entry.key, id: item.id, message };
  }

  private known(key: string): RegisteredKey {
    const entry = this.registry.get(key);
    if (entry) return entry;
    const suggestions = this.registry.nearest(key);
    throw new KeelError(ErrorCodes.CONFIG_UNKNOWN_KEY, `Unknown configuration key "${key}"${suggestionText(suggestions)}`, {
      key,
      suggestions,
    });
  }

  private invalid(key: string, problem: string): KeelError {
    return new KeelError(ErrorCodes.CONFIG_INVALID_VALUE, `Invalid value for ${key}: ${problem}`, {
      key,
      expected: this.registry.expected(key),
    });
  }

  private assertApprover(origin: ConfigOrigin, verb: string): void {
    const problem = approverProblem(origin, this);
    if (problem === undefined) return;
    this.log.warn(`config: refused to ${verb} a pending change for ${origin.kind}: ${problem}`);
    throw new KeelError(ErrorCodes.APPROVAL_FORBIDDEN, `Cannot ${verb}: ${problem}`, { origin: origin.kind });
  }

  private maskFor(key: string, value: unknown): unknown {
    const entry = this.registry.get(key);
    if (entry) return entry.spec.secret ? mask(value) : value;
    return maskByName(key, value);
  }

  private publicPending(c: StoredPendingChange): PendingConfigChange {
    return { ...c, value: this.maskFor(c.key, c.value) };
  }

  /** Writers queue behind each other so two saves never interleave their read-edit-write. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.writing.then(fn, fn);
    this.writing = run.catch(() => {});
    return run;
  }

  private snapshot(): Map<string, string> {
    const m = new Map<string, string>();
    for (const key of this.keys()) m.set(key, JSON.stringify(this.get(key)) ?? 'undefined');
    return m;
  }

  private announce(before: Map<string, string>, origin: ConfigStoreChange['origin']): string[] {
    const changed: string[] = [];
    const keys = new Set([...before.keys(), ...this.keys()]);
    for (const key of keys) {
      if ((JSON.stringify(this.get(key)) ?? 'undefined') !== before.get(key)) changed.push(key);
    }
    for (const key of changed) {
      const event: ConfigStoreChange = { key, value: this.maskFor(key, this.get(key)), origin };
      for (const listener of [...this.listeners]) {
        try {
          listener(event);
        } catch (e) {
          this.log.error(`config: a change listener failed for ${key}: ${errorMessage(e)}`);
        }
      }
    }
    return changed;
  }

  private reportProblem(p: ConfigProblem): void {
    const id = `${p.layer}\u0000${p.message}`;
    if (this.reported.has(id)) return;
    this.reported.add(id);
    this.log.error(`config: ${p.message}; using the next layer down instead`);
  }

  /** Warns once per key about file keys that no registered owner declares (with the nearest known key). */
  warnUnknownKeys(): void {
    for (const key of this.unknownFileKeys()) {
      const id = `unknown\u0000${key}`;
      if (this.reported.has(id)) continue;
      this.reported.add(id);
      this.log.warn(
        `config: ${this.path} has key "${key}" that no loaded plugin declares; it is kept${suggestionText(this.registry.nearest(key))}`,
      );
    }
  }
}

function notFound(id: string): KeelError {
  return new KeelError(ErrorCodes.APPROVAL_NOT_FOUND, `No pending configuration change with id ${id}`, { id });
}
