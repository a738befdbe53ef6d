/**
 * Merging the four layers into one effective value per key:
 * defaults < keel.config.yaml < environment < command-line overrides.
 *
 * Resolution is lazy and cached, because plugins register their keys after the file was read:
 * a file value for a key nobody has declared yet is kept raw and becomes typed the moment its
 * owner registers. An invalid value in any layer is reported once and skipped, so the next
 * layer down (ultimately the default) applies: a typo in one key never stops the service.
 */
import { ErrorCodes, type ErrorCode } from '../errors.js';
import type { KeyRegistry } from './key-registry.js';
import { kindOf } from './schema-text.js';

export type Layer = 'default' | 'file' | 'env' | 'override';

export interface Resolved {
  value: unknown;
  layer: Layer;
  /** The environment variable that supplied the value, when layer is 'env'. */
  envName?: string;
}

/** A value that was present but could not be used. */
export interface ConfigProblem {
  key: string;
  layer: Exclude<Layer, 'default'>;
  /** The file path, the environment variable name, or "command line". */
  source: string;
  /** CONFIG_FILE_INVALID for the file, CONFIG_INVALID_VALUE for the environment and flags. */
  code: ErrorCode;
  /** A full sentence naming the key, where the value came from and what was expected. */
  message: string;
}

export class Layers {
  #file = new Map<string, unknown>();
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #overrides: ReadonlyMap<string, unknown>;
  readonly #cache = new Map<string, Resolved | undefined>();
  readonly #problems = new Map<string, ConfigProblem>();
  #cacheVersion = -1;

  constructor(
    private readonly registry: KeyRegistry,
    private readonly filePath: string,
    env: Record<string, string | undefined>,
    overrides: Record<string, unknown>,
    private readonly onProblem: (p: ConfigProblem) => void,
  ) {
    // Snapshots: the process environment is fixed for the life of the store, and nobody
    // changing the caller's objects afterwards can change the configuration behind our back.
    this.#env = { ...env };
    this.#overrides = new Map(
      Object.entries(overrides)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, structuredClone(v)]),
    );
  }

  /** Replace the file layer (after a load, a save or a reload). */
  setFile(values: Map<string, unknown>): void {
    this.#file = new Map(values);
    this.#invalidate();
  }

  fileHas(key: string): boolean {
    return this.#file.has(key);
  }

  fileKeys(): string[] {
    return [...this.#file.keys()];
  }

  /** The effective value of a key, or undefined when no layer gives one. */
  resolve(key: string): Resolved | undefined {
    if (this.#cacheVersion !== this.registry.version) this.#invalidate();
    if (this.#cache.has(key)) return this.#cache.get(key);
    const r = this.#compute(key);
    this.#cache.set(key, r);
    return r;
  }

  /** Every problem in every layer, for every key declared so far. */
  problems(): ConfigProblem[] {
    for (const key of this.registry.keys()) this.resolve(key);
    return [...this.#problems.values()];
  }

  #invalidate(): void {
    this.#cache.clear();
    this.#problems.clear();
    this.#cacheVersion = this.registry.version;
  }

  #compute(key: string): Resolved | undefined {
    const entry = this.registry.get(key);
    if (!entry) {
      // Undeclared keys (a plugin not loaded) are kept as written, unchecked.
      if (this.#overrides.has(key)) return freeze({ value: this.#overrides.get(key), layer: 'override' });
      if (this.#file.has(key)) return freeze({ value: this.#file.get(key), layer: 'file' });
      return undefined;
    }
    const wantsString = kindOf(entry.spec.schema) === 'string';

    if (this.#overrides.has(key)) {
      const raw = this.#overrides.get(key);
      const check = typeof raw === 'string' && !wantsString ? this.registry.parseString(key, raw) : this.registry.validate(key, raw);
      if (check.ok) return freeze({ value: check.value, layer: 'override' });
      this.#report(key, 'override', 'command line', check.message);
    }

    for (const name of entry.spec.env ?? []) {
      const raw = this.#env[name];
      // An empty variable (`FOO=` in a compose file) means "not set", not "set to nothing".
      if (raw === undefined || raw === '') continue;
      const check = this.registry.parseString(key, raw);
      if (check.ok) return freeze({ value: check.value, layer: 'env', envName: name });
      this.#report(key, 'env', name, check.message);
      break;
    }

    // `key:` with nothing after it is how example files leave a setting blank: treat as unset.
    if (this.#file.has(key) && this.#file.get(key) !== null) {
      const raw = this.#file.get(key);
      let check = this.registry.validate(key, raw);
      // YAML 1.2 reads `safeMode: yes` as a string; read such strings the way the environment is read.
      if (!check.ok && typeof raw === 'string' && !wantsString) {
        const parsed = this.registry.parseString(key, raw);
        if (parsed.ok) check = parsed;
      }
      if (check.ok) return freeze({ value: check.value, layer: 'file' });
      this.#report(key, 'file', this.filePath, check.message);
    }

    if (entry.spec.default === undefined) return undefined;
    // Cloned so that freezing never touches the manifest's own default object.
    return freeze({ value: structuredClone(entry.spec.default), layer: 'default' });
  }

  #report(key: string, layer: ConfigProblem['layer'], source: string, detail: string): void {
    const id = `${key}\u0000${layer}`;
    if (this.#problems.has(id)) return;
    const where = layer === 'file' ? `in ${source}` : layer === 'env' ? `in environment variable ${source}` : 'on the command line';
    const p: ConfigProblem = {
      key,
      layer,
      source,
      code: layer === 'file' ? ErrorCodes.CONFIG_FILE_INVALID : ErrorCodes.CONFIG_INVALID_VALUE,
      message: `Invalid value for ${key} ${where}: ${detail}`,
    };
    this.#problems.set(id, p);
    this.onProblem(p);
  }
}

/** Effective values are shared with every reader: frozen so no reader can change them for the others. */
function freeze(r: Resolved): Resolved {
  deepFreeze(r.value);
  return Object.freeze(r);
}

function deepFreeze(v: unknown): void {
  // Typed arrays (a YAML !!binary value) cannot be frozen; they are left as they are.
  if (v === null || typeof v !== 'object' || Object.isFrozen(v) || ArrayBuffer.isView(v)) return;
  Object.freeze(v);
  for (const child of Object.values(v)) deepFreeze(child);
}
