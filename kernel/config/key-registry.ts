/**
 * Which configuration keys exist, who owns each one, and what values each accepts.
 *
 * The kernel knows no vendor keys: each plugin's manifest declares its own, and the kernel's
 * own keys (kernel-keys.ts) are registered under the owner `kernel`. Two owners can never claim
 * the same key: the second registration is refused rather than silently taking it over.
 */
import type { ChannelManifestInfo } from '../../sdk/channel.js';
import type { ConfigKeySpec } from '../../sdk/types.js';
import { adminUsersProblem, type ChannelIdForm } from './admin-users.js';
import { ErrorCodes, KeelError } from '../errors.js';
import { nearest } from './nearest.js';
import { parseStringValue } from './parse-value.js';
import { describeSchema } from './schema-text.js';
import { checkValue } from './validator.js';

export interface RegisteredKey {
  key: string;
  owner: string;
  spec: ConfigKeySpec;
}

export type ValueCheck = { ok: true; value: unknown } | { ok: false; message: string };

export class KeyRegistry {
  readonly #keys = new Map<string, RegisteredKey>();
  /** Channel name -> user-id form declared by a manifest (`channel` field), with its owner. */
  readonly #channels = new Map<string, ChannelIdForm & { owner: string }>();
  #version = 0;

  /** Bumped on every register/unregister, so caches built on the key set know when to rebuild. */
  get version(): number {
    return this.#version;
  }

  /**
   * Declare `owner`'s keys. All or nothing: if any key belongs to another owner, nothing is registered.
   * Registering again under the same owner replaces that owner's earlier specs (plugin reload).
   */
  register(owner: string, specs: Record<string, ConfigKeySpec>, channel?: ChannelManifestInfo): void {
    const declared = channel ? this.#channels.get(channel.name) : undefined;
    if (channel && declared && declared.owner !== owner) {
      throw new KeelError(
        ErrorCodes.CONFIG_DUPLICATE_KEY,
        `Channel "${channel.name}" is declared by both "${declared.owner}" and "${owner}"; a channel name has exactly one plugin`,
        { channel: channel.name, owners: [declared.owner, owner] },
      );
    }
    for (const key of Object.keys(specs)) {
      const existing = this.#keys.get(key);
      if (existing && existing.owner !== owner) {
        throw new KeelError(
          ErrorCodes.CONFIG_DUPLICATE_KEY,
          `Configuration key "${key}" is declared by both "${existing.owner}" and "${owner}"; a key has exactly one owner`,
          { key, owners: [existing.owner, owner] },
        );
      }
    }
    for (const [key, spec] of Object.entries(specs)) this.#keys.set(key, { key, owner, spec });
    if (channel) this.#channels.set(channel.name, { ...channel, owner });
    this.#version++;
  }

  /** User-id forms of channels whose manifest is known (the SPEC table covers the others). */
  channelForms(): ChannelIdForm[] {
    return [...this.#channels.values()].map(({ owner: _owner, ...form }) => form);
  }

  /** Forget every key `owner` declared (plugin unloaded). */
  unregister(owner: string): void {
    for (const [key, entry] of this.#keys) if (entry.owner === owner) this.#keys.delete(key);
    for (const [name, c] of this.#channels) if (c.owner === owner) this.#channels.delete(name);
    this.#version++;
  }

  get(key: string): RegisteredKey | undefined {
    return this.#keys.get(key);
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  keys(): string[] {
    return [...this.#keys.keys()];
  }

  entries(): RegisteredKey[] {
    return [...this.#keys.values()];
  }

  /** Known keys closest to a mistyped one, case-insensitively. */
  nearest(key: string, n = 3): string[] {
    return nearest(key, this.#keys.keys(), n);
  }

  /** "a number", "one of: main, per-peer" ... for the key's schema. */
  expected(key: string): string {
    const entry = this.#keys.get(key);
    return entry ? describeSchema(entry.spec.schema) : 'any value';
  }

  /**
   * Check a value against the key's schema (and, for `adminUsers`, each id against its channel's user-id form).
   * An unknown key is never valid. `strict` is for changes: an `adminUsers` channel nobody declares is then an
   * error; a value read from the file keeps it, since the plugin that declares it may simply load later.
   */
  validate(key: string, value: unknown, opts: { strict?: boolean } = {}): ValueCheck {
    const entry = this.#keys.get(key);
    if (!entry) return { ok: false, message: `unknown key "${key}"` };
    const problem =
      checkValue(entry.spec.schema, value, { showValue: entry.spec.secret !== true }) ??
      (key === 'adminUsers' && entry.owner === 'kernel' ? adminUsersProblem(value, this.channelForms(), opts.strict === true) : undefined);
    return problem === undefined ? { ok: true, value } : { ok: false, message: problem };
  }

  /** Read a string (environment variable, CLI argument) as the key's type, then validate it. */
  parseString(key: string, raw: string, opts: { strict?: boolean } = {}): ValueCheck {
    const entry = this.#keys.get(key);
    if (!entry) return { ok: false, message: `unknown key "${key}"` };
    const parsed = parseStringValue(entry.spec.schema, raw);
    if (!parsed.ok) {
      // A secret must not reach a log line through the "not a number" message.
      return { ok: false, message: entry.spec.secret ? `expected ${describeSchema(entry.spec.schema)}` : parsed.message };
    }
    return this.validate(key, parsed.value, opts);
  }
}
