/**
 * create_custom_skill, execute_typescript and self_repair_skill. Decisions and limits: docs/sandbox.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { forbiddenError, errorMessage } from '../../../sdk/index.js';
import type { KernelInfoCapability, LogEntry, PluginContext, SkillArgs } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { compileBody, CompileError, runSandboxed, type SandboxResult } from './sandbox.js';
import { parseSkillFile, renderSkillFile, SKILL_NAME, type AgentSkillSpec } from './skill-file.js';

const coded = errorsFor('coder');

/** How long create_custom_skill and self_repair_skill wait for the hot reload to load (or refuse) the file. */
const RELOAD_WAIT_MS = 10_000;

export type CreateArgs = SkillArgs<typeof manifest, 'create_custom_skill'>;
export type ExecuteArgs = SkillArgs<typeof manifest, 'execute_typescript'>;
export type RepairArgs = SkillArgs<typeof manifest, 'self_repair_skill'>;

type ReloadOutcome =
  | { state: 'loaded' }
  | { state: 'failed'; reason: string }
  | { state: 'disabled'; reason: string }
  | { state: 'pending' };

/** Same mapping as the kernel's custom skills: file base, lower-cased, fitted to the id pattern. */
function skillPluginId(file: string): string {
  const base = file
    .replace(/\.[^.]+$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9_.:-]+/g, '-');
  return `skill-${base}`.slice(0, 64);
}

const SKILL_FILE = /\.(?:ts|mts|js|mjs)$/;

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function writeAtomic(file: string, text: string): Promise<void> {
  // A dotfile: the skills watcher ignores it, so only the rename is seen.
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now()}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/** The first fenced code block of a reply, or the whole reply. */
export function extractCode(text: string): string {
  const m = /```[a-zA-Z]*\n([\s\S]*?)```/.exec(text);
  return (m ? m[1]! : text).trim();
}

export class CoderService {
  constructor(private readonly ctx: PluginContext<typeof manifest>) {}

  get skillsDir(): string {
    return join(this.ctx.home, 'skills');
  }

  private timeoutMs(): number {
    return this.ctx.config.get('coderTimeoutMs');
  }

  private maxBytes(): number {
    return this.ctx.config.get('coderOutputMaxBytes');
  }

  private requireSelfModification(skill: string): void {
    if (!this.ctx.config.get('enableSelfModification')) {
      throw forbiddenError(`${skill} needs enableSelfModification: true (an operator setting; it is off by default).`);
    }
  }

  private info(): KernelInfoCapability {
    const info = this.ctx.use('kernel:info');
    if (!info) throw coded('KEEL_E_PLUGIN_FAILED', 'The kernel did not provide kernel:info.');
    return info;
  }

  // ------------------------------------------------------------ execute_typescript

  async execute(args: ExecuteArgs, signal: AbortSignal): Promise<SandboxResult> {
    try {
      return await runSandboxed({
        body: args.code,
        args: args.args ?? {},
        timeoutMs: args.timeoutMs ?? this.timeoutMs(),
        maxOutputBytes: this.maxBytes(),
        signal,
      });
    } catch (e) {
      if (e instanceof CompileError) throw coded('KEEL_E_COMPILE_FAILED', e.message);
      throw e;
    }
  }

  /** What a generated skill's run() calls: the result, or an error carrying the snippet's failure. */
  async runSkill(req: { skill: string; body: string; args: unknown; network: boolean; signal: AbortSignal }): Promise<unknown> {
    const r = await runSandboxed({
      body: req.body,
      args: req.args,
      network: req.network,
      timeoutMs: this.timeoutMs(),
      maxOutputBytes: this.maxBytes(),
      signal: req.signal,
    });
    if (r.ok) return r.result;
    const tail = r.stderr.trim().split('\n').slice(-5).join('\n');
    throw coded(
      'KEEL_E_SKILL_FAILED',
      `Skill ${req.skill} failed in the sandbox: ${r.error ?? `exit ${r.exitCode}`}${tail ? `\n${tail}` : ''}`,
    );
  }

  // ------------------------------------------------------------ create_custom_skill

  async create(args: CreateArgs, signal: AbortSignal): Promise<Record<string, unknown>> {
    this.requireSelfModification('create_custom_skill');
    if (!SKILL_NAME.test(args.name))
      throw coded(
        'KEEL_E_INVALID_ARGUMENT',
        `Invalid skill name "${args.name}": use 2-48 lower-case letters, digits or _, starting with a letter.`,
      );
    // The schema admits any object here; whether it is a JSON Schema of type object is checked next.
    const parameters = (args.parameters as Record<string, unknown> | undefined) ?? {
      type: 'object',
      properties: {},
      additionalProperties: true,
    };
    if (parameters.type !== 'object') throw coded('KEEL_E_INVALID_ARGUMENT', '"parameters" must be a JSON Schema of type "object".');
    const plugin = `skill-${args.name}`;
    const owner = this.ctx.skills.list().find((s) => s.name === args.name);
    if (owner && owner.plugin !== plugin)
      throw coded('KEEL_E_SKILL_DUPLICATE', `Skill "${args.name}" is already provided by plugin "${owner.plugin}"; choose another name.`);
    // Refuse code that does not compile before anything is written.
    await compileBody(args.code).catch((e: unknown) => {
      throw coded('KEEL_E_COMPILE_FAILED', errorMessage(e));
    });
    await mkdir(this.skillsDir, { recursive: true });
    const file = join(this.skillsDir, `${args.name}.ts`);
    const others = (await readdir(this.skillsDir)).filter(
      (f) => SKILL_FILE.test(f) && f !== `${args.name}.ts` && skillPluginId(f) === plugin,
    );
    if (others.length > 0)
      throw coded(
        'KEEL_E_PLUGIN_DUPLICATE',
        `Plugin id ${plugin} is already taken by ${others.join(', ')} in ${this.skillsDir}; choose another name.`,
      );
    const previous = existsSync(file) ? await readFile(file, 'utf8') : undefined;
    if (previous !== undefined && !parseSkillFile(previous) && !args.overwrite) {
      throw forbiddenError(`${file} was written by a person, not by create_custom_skill; pass overwrite: true to replace it.`);
    }
    const spec: AgentSkillSpec = {
      name: args.name,
      description: args.description,
      parameters,
      code: args.code,
      ...(args.adminOnly !== undefined ? { adminOnly: args.adminOnly } : {}),
      ...(args.network !== undefined ? { network: args.network } : {}),
    };
    const source = renderSkillFile(spec);
    if (previous === source && this.ctx.skills.list().some((s) => s.name === args.name && s.plugin === plugin)) {
      return { skill: args.name, plugin, file, state: 'loaded', changed: false };
    }
    const outcome = await this.writeAndWait(file, source, args.name, signal);
    if (outcome.state === 'failed') {
      // Keep the disk in line with what runs: the previous version, or nothing.
      if (previous !== undefined) await writeAtomic(file, previous);
      else await unlink(file).catch(() => undefined);
      throw coded('KEEL_E_PLUGIN_LOAD_FAILED', `Skill ${args.name} did not load: ${outcome.reason}`);
    }
    const result: Record<string, unknown> = {
      skill: args.name,
      plugin,
      file,
      state: outcome.state,
      created: previous === undefined,
      sandboxed: true,
    };
    if (outcome.state === 'disabled') result.note = `Written, but not loaded: ${outcome.reason}`;
    if (outcome.state === 'pending')
      result.note = `Written; the hot reload did not report within ${RELOAD_WAIT_MS / 1000} s (is the skills folder watched?).`;
    return result;
  }

  /** Writes a skill file and waits (bounded) for the kernel's hot reload to report on it through the log. */
  private async writeAndWait(file: string, source: string, skillName: string, signal: AbortSignal): Promise<ReloadOutcome> {
    const info = this.info();
    const base = basename(file);
    const plugin = skillPluginId(base);
    const mentions = new RegExp(`(^|[\\s/])${escapeRe(base)}(?![\\w.])`);
    return new Promise<ReloadOutcome>((resolve, reject) => {
      let done = false;
      const finish = (o: ReloadOutcome) => {
        if (done) return;
        done = true;
        off();
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const off = info.onLog((e: LogEntry) => {
        if (e.message.startsWith(`Plugin ${plugin} disabled`)) finish({ state: 'disabled', reason: e.message });
        else if (!mentions.test(e.message)) return;
        else if (e.level === 'error') finish({ state: 'failed', reason: e.message });
        else if (e.level === 'info' && e.message.startsWith(`Custom skill ${skillName} loaded from`)) finish({ state: 'loaded' });
      });
      const timer = setTimeout(() => finish({ state: 'pending' }), RELOAD_WAIT_MS);
      const onAbort = () => finish({ state: 'pending' });
      signal.addEventListener('abort', onAbort, { once: true });
      writeAtomic(file, source).catch((e: unknown) => {
        if (done) return;
        done = true;
        off();
        clearTimeout(timer);
        reject(e as Error);
      });
    });
  }

  // ------------------------------------------------------------ self_repair_skill

  async repair(args: RepairArgs, signal: AbortSignal): Promise<Record<string, unknown>> {
    this.requireSelfModification('self_repair_skill');
    const info = this.info();
    const status = info.plugins().find((p) => p.id === args.plugin);
    const files = existsSync(this.skillsDir)
      ? (await readdir(this.skillsDir)).filter((f) => SKILL_FILE.test(f) && !f.startsWith('.') && skillPluginId(f) === args.plugin)
      : [];
    const base = files[0];
    if (!base) {
      if (!status) throw coded('KEEL_E_NOT_FOUND', `Unknown plugin "${args.plugin}".`);
      // Built-in and user plugins: Keel does not rewrite them.
      const userDir = join(this.ctx.home, 'plugins', args.plugin);
      return {
        repaired: false,
        plugin: args.plugin,
        state: status.state,
        reason: status.reason ?? null,
        source: existsSync(userDir) ? userDir : `plugins/${args.plugin} in the Keel installation (built-in)`,
        guidance: `Keel rewrites only custom skills the agent created. Fix the plugin's source by hand, then run \`keel plugins enable ${args.plugin}\`${status.state === 'quarantined' ? ' to lift the quarantine' : ''}.`,
      };
    }
    const file = join(this.skillsDir, base);
    const source = await readFile(file, 'utf8');
    const reason = status?.reason ?? this.lastError(info, base) ?? 'no failure recorded by the kernel';
    const spec = parseSkillFile(source);
    const llm = this.ctx.use('llm');
    const current = llm?.current();
    if (!llm || !current || 'missing' in current) {
      throw coded(
        'KEEL_E_NOT_CONFIGURED',
        `No model is available to repair ${base}${current && 'missing' in current ? ` (${current.missing})` : ''}; the file was left as it is.`,
      );
    }
    const ask = async (system: string, body: string): Promise<string> => {
      const user = [`Failure: ${reason}`, args.hint ? `Hint from the admin: ${args.hint}` : '', body].filter(Boolean).join('\n\n');
      const reply = await llm.chat({
        purpose: 'main',
        signal,
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
      });
      return extractCode(reply.text);
    };

    if (!spec) {
      // A person wrote this file and it runs inside Keel: a model-written replacement is only suggested.
      const fixed = await ask(
        'You repair a Keel custom skill file (TypeScript, `export default defineSkill({...})` from keel/sdk). Reply with the complete fixed file in one ```ts block.',
        `File ${base}:\n\`\`\`ts\n${source}\n\`\`\``,
      );
      const problem = await this.compileCheck(fixed);
      if (problem)
        throw coded('KEEL_E_COMPILE_FAILED', `The model's fix for ${base} does not compile (${problem}); the file was left as it is.`);
      const suggestion = `${file}.suggested`;
      await writeFile(suggestion, fixed);
      return {
        repaired: false,
        plugin: args.plugin,
        reason,
        suggestion,
        guidance: `${base} was written by a person and runs inside Keel, so Keel does not replace it: review ${suggestion}, copy it over ${base} if it is right${status?.state === 'quarantined' ? `, then run \`keel plugins enable ${args.plugin}\`` : ''}.`,
      };
    }

    const code = await ask(
      'You repair a Keel custom skill written by an agent. Its code is the TypeScript body of `async function run(args)`: it runs in a sandboxed Node process (no access outside its temp folder, no child processes), may use `await import()` for Node modules, and returns a JSON value. Reply with the complete fixed body only, in one ```ts block.',
      `Skill ${spec.name}: ${spec.description}\nArguments schema: ${JSON.stringify(spec.parameters)}\nCurrent body:\n\`\`\`ts\n${spec.code}\n\`\`\``,
    );
    const next = renderSkillFile({ ...spec, code });
    const problem = await this.compileCheck(next, code);
    if (problem)
      throw coded('KEEL_E_COMPILE_FAILED', `The model's fix for ${base} does not compile (${problem}); the last good version stays.`);
    if (next === source) throw coded('KEEL_E_PROVIDER_FAILED', `The model returned the same code for ${base}; nothing was changed.`);
    const backup = `${file}.bak`;
    await copyFile(file, backup);
    const outcome = await this.writeAndWait(file, next, spec.name, signal);
    const quarantined = status?.state === 'quarantined';
    if (outcome.state === 'failed' && quarantined && /quarantin/i.test(outcome.reason)) {
      // The fix compiled and is on disk; the host keeps a quarantined plugin down until a person lifts it.
      return {
        repaired: true,
        plugin: args.plugin,
        file,
        backup,
        state: 'quarantined',
        reason,
        next: `Run \`keel plugins enable ${args.plugin}\` to lift the quarantine and load the fix.`,
      };
    }
    if (outcome.state === 'failed') {
      await writeAtomic(file, source);
      throw coded(
        'KEEL_E_PLUGIN_LOAD_FAILED',
        `The repaired ${base} did not load (${outcome.reason}); the last good version was put back.`,
      );
    }
    return {
      repaired: true,
      plugin: args.plugin,
      file,
      backup,
      state: outcome.state,
      reason,
      ...(quarantined ? { next: `Run \`keel plugins enable ${args.plugin}\` to lift the quarantine.` } : {}),
    };
  }

  /** The kernel's most recent error about a skill file. */
  private lastError(info: KernelInfoCapability, base: string): string | undefined {
    const mentions = new RegExp(`(^|[\\s/])${escapeRe(base)}(?![\\w.])`);
    return info
      .logs({ level: 'error', limit: 500 })
      .filter((e) => mentions.test(e.message))
      .pop()?.message;
  }

  /** Compiles a candidate file (written to a temp path) with esbuild; returns the first error, or undefined. */
  private async compileCheck(fileSource: string, body?: string): Promise<string | undefined> {
    if (body !== undefined) {
      try {
        await compileBody(body);
      } catch (e) {
        return errorMessage(e);
      }
    }
    const dir = await mkdtemp(join(tmpdir(), 'keel-repair-'));
    try {
      const tmp = join(dir, 'candidate.ts');
      await writeFile(tmp, fileSource);
      const { build } = await import('esbuild');
      await build({
        entryPoints: [tmp],
        bundle: true,
        write: false,
        format: 'esm',
        platform: 'node',
        logLevel: 'silent',
        external: ['keel/sdk', '@keel/sdk'],
        packages: 'external',
      });
      return undefined;
    } catch (e) {
      const first = (e as { errors?: Array<{ text: string; location?: { line: number; column: number } }> }).errors?.[0];
      return first ? `${first.location ? `line ${first.location.line}:${first.location.column}: ` : ''}${first.text}` : String(e);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
