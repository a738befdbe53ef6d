/**
 * Custom skills: every `*.ts|.mts|.js|.mjs` file directly in `$KEEL_HOME/skills/` is one skill, loaded as its own
 * plugin (`skill-<file name>`) so allow/deny lists, manifest checks, duplicate names and quarantine apply as for
 * any other plugin. A save replaces the running version; a broken save keeps the last good one and reports why.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, unlink } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { CustomSkillDefinition } from '../../sdk/index.js';
import type { PluginDefinition } from '../../sdk/plugin.js';
import type { Logger, PluginManifest, SkillFlags, SkillManifest } from '../../sdk/types.js';
import { ErrorCodes, KeelError, errorMessage } from '../errors.js';
import { compileModule } from './compile.js';
import type { PluginCandidate } from './discover.js';
import type { PluginHost } from './host.js';
import { validateManifest } from './manifest-schema.js';

export interface CustomSkillsOptions {
  home: string;
  host: PluginHost;
  log: Logger;
  /**
   * Quiet time per file before a reload. Editors often write a file twice (truncate, then write);
   * a short wait folds both into one reload while staying far inside the 300 ms save-to-callable budget.
   */
  debounceMs?: number;
}

const SKILL_FILE = /\.(?:ts|mts|js|mjs)$/;
const FLAG_KEYS = ['isDeep', 'isResearch', 'isParallelSafe', 'isDangerous', 'adminOnly', 'isOutbound'] as const;
/** compileModule names its output `<base>-<16 hex>.mjs`. */
const COMPILED = /^(.*)-[0-9a-f]{16}\.mjs$/;

/** Whether a directory entry is a custom skill source: declarations, dotfiles and editor leftovers are not. */
export function isSkillFile(name: string): boolean {
  return SKILL_FILE.test(name) && !name.endsWith('.d.ts') && !name.startsWith('.') && !name.startsWith('#');
}

function baseOf(file: string): string {
  return basename(file, extname(file));
}

/** Plugin id of a skill file: `skill-<base>`, lowercased and fitted to the manifest's id pattern. */
export function customSkillId(file: string): string {
  const base = baseOf(file)
    .toLowerCase()
    .replace(/[^a-z0-9_.:-]+/g, '-');
  return `skill-${base}`.slice(0, 64);
}

/** Checks a skill module's default export and builds the manifest the host validates. Throws naming the file. */
export function manifestFor(file: string, value: unknown): { manifest: PluginManifest; def: CustomSkillDefinition } {
  const fail = (why: string): never => {
    throw new KeelError(
      ErrorCodes.MANIFEST_INVALID,
      `Custom skill ${file}: ${why}. Export default defineSkill({ name, description, parameters: Type.Object({...}), run }) from 'keel/sdk'.`,
      { file },
    );
  };
  if (!value || typeof value !== 'object') fail('it has no default export object');
  const def = value as Partial<CustomSkillDefinition> & { version?: unknown };
  if (typeof def.name !== 'string' || !def.name) fail('"name" must be a non-empty string');
  if (typeof def.description !== 'string' || !def.description) fail('"description" must be a non-empty string');
  if (def.category !== undefined && (typeof def.category !== 'string' || !def.category)) fail('"category" must be a non-empty string');
  if (!def.parameters || typeof def.parameters !== 'object' || (def.parameters as { type?: unknown }).type !== 'object') {
    fail('"parameters" must be an object schema (Type.Object({...}))');
  }
  if (typeof def.run !== 'function') fail('"run" must be a function (args, ctx) => result');
  if (def.version !== undefined && typeof def.version !== 'string') fail('"version" must be a string like "1.2.0"');
  const flags: SkillFlags = {};
  for (const k of FLAG_KEYS) {
    const v = def[k];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') fail(`"${k}" must be true or false`);
    flags[k] = v;
  }
  const skill: SkillManifest = {
    name: def.name!,
    description: def.description!,
    category: def.category ?? 'custom',
    parameters: def.parameters!,
    ...flags,
  };
  const manifest: PluginManifest = {
    id: customSkillId(file),
    version: (def.version as string | undefined) ?? '1.0.0',
    kind: 'skill',
    description: def.description!,
    skills: [skill],
  };
  // Same check the host runs, done here so a bad name or version is refused while the old version still runs.
  validateManifest(manifest, file);
  return { manifest, def: def as CustomSkillDefinition };
}

function candidateFor(file: string, manifest: PluginManifest, def: CustomSkillDefinition): PluginCandidate {
  const skillName = manifest.skills![0]!.name;
  const plugin: PluginDefinition = {
    manifest,
    setup(ctx) {
      ctx.skills.register(skillName, (args, callCtx) => def.run(args as never, callCtx));
    },
  };
  return { id: manifest.id, origin: 'custom-skill', dir: file, manifest, load: async () => plugin };
}

interface Current {
  /** Compiled file of the running version. */
  compiled: string;
  candidate: PluginCandidate;
}

export class CustomSkills {
  readonly dir: string;
  private readonly cacheDir: string;
  private readonly debounceMs: number;
  private watcher: FSWatcher | undefined;
  private stopped = false;
  private readonly errs = new Map<string, string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Per-file tail of the reload chain: reloads of one file never overlap. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Running version per source file. */
  private readonly current = new Map<string, Current>();
  /** Which file owns a plugin id (`a.ts` and `a.js` would share one). */
  private readonly owners = new Map<string, string>();

  constructor(private readonly o: CustomSkillsOptions) {
    this.dir = resolve(o.home, 'skills');
    this.cacheDir = join(o.home, '.cache', 'skills');
    this.debounceMs = o.debounceMs ?? 15;
  }

  /** Loads every skill file, then watches the folder. Resolves once the watcher is ready. */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await mkdir(this.cacheDir, { recursive: true });
    // Watch first, scan second: a file written between the two is seen at least once (a second sync is harmless).
    const watcher = watch(this.dir, { ignoreInitial: true, depth: 0, persistent: true });
    this.watcher = watcher;
    const onEvent = (path: string) => {
      if (isSkillFile(basename(path)) && resolve(path, '..') === this.dir) this.schedule(resolve(path));
    };
    watcher.on('add', onEvent).on('change', onEvent).on('unlink', onEvent);
    watcher.on('error', (e) => this.o.log.error(`Watching ${this.dir} failed: ${errorMessage(e)}`));
    await new Promise<void>((res) => watcher.once('ready', () => res()));
    const files = (await readdir(this.dir)).filter(isSkillFile).sort();
    await this.sweepCache(new Set(files.map(baseOf)));
    // One at a time, in name order, so which of two clashing files wins never depends on timing.
    for (const f of files) await this.enqueue(join(this.dir, f), true);
    // Each health round tries broken skills again; a skill still broken counts towards quarantine and repair.
    this.o.host.addHealthProbe(() => this.recheck());
  }

  /**
   * Loads again every skill file that has no running version because it failed (compile, import, manifest);
   * each failure counts for the host, which quarantines the skill and queues its repair at the threshold.
   */
  async recheck(): Promise<void> {
    for (const name of [...this.errs.keys()]) {
      if (this.stopped) return;
      const file = join(this.dir, name);
      const id = customSkillId(file);
      if (this.o.host.isRunning(id) || this.o.host.status(id)?.state === 'quarantined') continue;
      await this.enqueue(file, true);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await this.watcher?.close();
    this.watcher = undefined;
    await Promise.all([...this.chains.values()]);
    // The host stops the skill plugins themselves with every other plugin.
  }

  /** Last error per skill file name (e.g. `word-count.ts`); a file disappears from here once it loads. */
  errors(): Record<string, string> {
    return Object.fromEntries(this.errs);
  }

  /** Resolves when no reload is pending or in flight. */
  async whenIdle(): Promise<void> {
    while (this.timers.size > 0 || this.chains.size > 0) {
      if (this.chains.size > 0) await Promise.all([...this.chains.values()]);
      else await new Promise((r) => setTimeout(r, this.debounceMs));
    }
  }

  private schedule(file: string): void {
    if (this.stopped) return;
    clearTimeout(this.timers.get(file));
    this.timers.set(
      file,
      setTimeout(() => {
        this.timers.delete(file);
        void this.enqueue(file);
      }, this.debounceMs),
    );
  }

  /** `count`: a failure counts towards quarantine (at start and in health rounds; not on an interactive save). */
  private enqueue(file: string, count = false): Promise<void> {
    const prev = this.chains.get(file) ?? Promise.resolve();
    const next = prev
      .then(() => this.sync(file, count))
      .catch((e: unknown) => this.o.log.error(`Custom skill ${file}: ${errorMessage(e)}`))
      .finally(() => {
        if (this.chains.get(file) === next) this.chains.delete(file);
      });
    this.chains.set(file, next);
    return next;
  }

  /** Brings the running state in line with the file on disk, whatever event got us here. */
  private async sync(file: string, count = false): Promise<void> {
    if (this.stopped) return;
    if (existsSync(file)) await this.reload(file, count);
    else await this.remove(file);
  }

  private record(file: string, message: string): void {
    this.errs.set(basename(file), message);
    this.o.log.error(message);
  }

  private async reload(file: string, count = false): Promise<void> {
    const id = customSkillId(file);
    const owner = this.owners.get(id);
    if (owner && owner !== file && existsSync(owner)) {
      this.record(file, `Custom skill ${file}: plugin id "${id}" is already taken by ${owner}; rename one of the files.`);
      return;
    }
    // A skill file is code: when the lists exclude its plugin id (known from the file name), it is not compiled.
    const gate = this.o.host.permitted(id);
    if (!gate.ok) {
      const disabled = `${basename(file)}: ${gate.reason}; the file was not run`;
      this.current.delete(file);
      this.errs.delete(basename(file));
      await this.o.host.load({
        id,
        origin: 'custom-skill',
        dir: file,
        disabled,
        load: () => Promise.reject(new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, disabled)),
      });
      return;
    }
    let compiled: string;
    let candidate: PluginCandidate;
    try {
      const out = await compileModule(file, this.cacheDir);
      compiled = out.file;
      const prev = this.current.get(file);
      // A touch, a second identical write, or a revert to the running version: nothing to swap.
      if (prev?.compiled === compiled && this.o.host.isRunning(id)) {
        this.errs.delete(basename(file));
        return;
      }
      let mod: { default?: unknown };
      // ESM has no unload: each version stays in the module cache. compileModule names files by content hash,
      // so only genuinely new versions cost memory, and a revert reuses the cached module.
      try {
        mod = (await import(out.url)) as { default?: unknown };
      } catch (e) {
        throw new KeelError(
          ErrorCodes.PLUGIN_LOAD_FAILED,
          `Custom skill ${file} threw while loading: ${errorMessage(e)}`,
          { file },
          { cause: e },
        );
      }
      const { manifest, def } = manifestFor(file, mod.default);
      this.refuseTakenName(file, id, manifest.skills![0]!.name);
      candidate = candidateFor(file, manifest, def);
    } catch (e) {
      // Nothing was swapped: the last good version (if any) keeps running.
      this.record(file, errorMessage(e));
      if (count && !this.o.host.isRunning(id)) await this.o.host.reportBroken({ id, origin: 'custom-skill', dir: file }, errorMessage(e));
      return;
    }
    if (this.stopped) return;
    this.owners.set(id, file);
    const status = await this.o.host.load(candidate);
    if (status.state === 'loaded') {
      this.current.set(file, { compiled, candidate });
      this.errs.delete(basename(file));
      this.o.log.info(`Custom skill ${manifestSkill(candidate)} loaded from ${basename(file)}`);
      await this.pruneCache(file, compiled);
      return;
    }
    if (status.state === 'disabled') {
      this.current.delete(file);
      this.errs.delete(basename(file));
      return;
    }
    this.record(file, `Custom skill ${file} did not start: ${status.reason ?? status.state}`);
    await this.restore(file, status.state);
  }

  /**
   * The host unloads the old version before starting the new one; when the new one then fails to start,
   * put the last good version back so a bad save never leaves the skill missing.
   */
  private async restore(file: string, state: string): Promise<void> {
    const prev = this.current.get(file);
    if (!prev || state === 'quarantined') return;
    const again = await this.o.host.load(prev.candidate);
    if (again.state === 'loaded') this.o.log.warn(`Custom skill ${basename(file)}: kept the last good version running`);
    else this.current.delete(file);
  }

  /** A skill name another running plugin owns would make the host refuse the swap after unloading ours. */
  private refuseTakenName(file: string, id: string, name: string): void {
    const other = this.o.host.statuses().find((s) => s.id !== id && s.state === 'loaded' && s.skills.includes(name));
    if (other) {
      throw new KeelError(
        ErrorCodes.SKILL_DUPLICATE,
        `Custom skill ${file}: skill "${name}" is already provided by plugin "${other.id}"; choose another name.`,
        { file, skill: name, owner: other.id },
      );
    }
  }

  private async remove(file: string): Promise<void> {
    const id = customSkillId(file);
    this.errs.delete(basename(file));
    this.current.delete(file);
    // A skill that never loaded is listed by the host as failed: it goes with its file.
    if (!this.owners.has(id) && !this.o.host.isRunning(id)) this.o.host.forget(id);
    if (this.owners.get(id) !== file) return;
    this.owners.delete(id);
    await this.o.host.unload(id);
    this.o.log.info(`Custom skill ${basename(file)} removed`);
    await this.pruneCache(file, undefined);
    // A same-named sibling (`a.js` beside a removed `a.ts`) may take the id now.
    const siblings = (await readdir(this.dir)).filter((f) => isSkillFile(f) && customSkillId(f) === id);
    for (const s of siblings) this.schedule(join(this.dir, s));
  }

  /** Drops compiled versions of this skill other than `keep`: each save leaves one behind. */
  private async pruneCache(file: string, keep: string | undefined): Promise<void> {
    const base = baseOf(file);
    const names = await readdir(this.cacheDir).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((n) => COMPILED.exec(n)?.[1] === base && join(this.cacheDir, n) !== keep)
        .map((n) => unlink(join(this.cacheDir, n)).catch(() => undefined)),
    );
  }

  /** Compiled files of skills whose source is gone (deleted while Keel was not running). */
  private async sweepCache(bases: Set<string>): Promise<void> {
    const names = await readdir(this.cacheDir).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((n) => {
          const m = COMPILED.exec(n);
          return m !== null && !bases.has(m[1]!);
        })
        .map((n) => unlink(join(this.cacheDir, n)).catch(() => undefined)),
    );
  }
}

function manifestSkill(c: PluginCandidate): string {
  return (c.manifest as PluginManifest).skills?.[0]?.name ?? c.id;
}
