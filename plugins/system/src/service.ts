/**
 * run_command and approve_command: argv, policy, working folder, confirmation, execution.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { strictIsolationSupport } from '../../../sdk/command-isolation.js';
import { type Action, type Actor, namespaceSupport, type PluginContext, type SkillArgs } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { PluginError } from '../../../sdk/errors.js';
import { describeActor } from '../../../sdk/actor.js';
import { approverOf } from './admin.js';
import { analyze, type PolicyDecision } from './command-policy.js';
import { DENIED_EXIT, DENIED_TEXT, DenyJail, type IsolationMode, type Jail, SETUP_EXIT, SETUP_TEXT } from './deny-jail.js';
import { childEnv, formatResult, notFound, type RunResult, runArgv, startable } from './exec.js';
import { PendingCommands, type PendingCommand } from './pending.js';
import { originOf } from './approvals.js';
import type { ApprovalService } from '../../../sdk/approvals.js';
import { Refusal, toArgv } from './tokenize.js';

const coded = errorsFor('system');

export type RunCommandArgs = SkillArgs<typeof manifest, 'run_command'>;

/** An error whose message is meant for the agent as it is. */
/** A refusal: dispatch reports it as KEEL_E_FORBIDDEN (the gateway as 403). */
export class CommandError extends PluginError<'KEEL_E_FORBIDDEN'> {
  constructor(message: string) {
    super('KEEL_E_FORBIDDEN', message);
    this.name = 'CommandError';
  }
}

type Config = PluginContext['config'];

function read<T>(config: Config, key: string): T | undefined {
  try {
    return config.get<T>(key);
  } catch {
    return undefined;
  }
}

/** What the stubs alone leave open (said where `auto` cannot be strict). */
const WEAKER =
  'only the stubs apply, so a copy of a denied program that reaches a writable folder another way (downloaded, extracted from a package, copied before the command) can run (docs/security.md).';

/** What the result says about the operating system's part. */
function isolationLines(jail: Jail, r: RunResult): string[] {
  if (!jail.isolated) {
    return [
      `Isolation: none (${jail.reason}). Only the argv check kept this command from the programs on commandDenyList; a script or an interpreter it ran could start them (docs/security.md).`,
    ];
  }
  const lines = [
    `Isolation: on${jail.strict ? ', strict' : ''} (private mount and pid namespace${jail.userNamespace ? ' in a user namespace' : ''}; ${jail.targets.length} path${jail.targets.length === 1 ? '' : 's'} of denied programs replaced by stubs${jail.strict ? '; nothing runs from a writable place' : ''}${jail.notes.length ? `; ${jail.notes.length} not replaced (listed in Keel's log; docs/security.md)` : ''})`,
  ];
  if (jail.notStrict !== undefined) lines.push(`Strict isolation could not be set up here (${jail.notStrict}): ${WEAKER}`);
  if (r.exitCode === SETUP_EXIT && r.stderr.includes(SETUP_TEXT))
    lines.push('The isolation could not be set up, so the command did not run.');
  else if (r.stderr.includes(DENIED_TEXT))
    lines.push(`A program on commandDenyList was refused inside the command (its stub exits with ${DENIED_EXIT}).`);
  return lines;
}

export class CommandService {
  readonly pending: PendingCommands;
  private readonly jail = new DenyJail();
  private jailNotesLogged = '';
  /** `opts.unshare`: another `unshare` (tests simulate a system that refuses part of the isolation). */
  constructor(
    private readonly ctx: Pick<PluginContext<typeof manifest>, 'config' | 'log' | 'home' | 'signal' | 'use'>,
    private readonly opts: { unshare?: string } = {},
  ) {
    this.pending = new PendingCommands(ctx.home, ctx.log);
  }

  /** Removes the deny-list stubs from the temp folder. */
  close(): void {
    this.jail.close();
  }

  /** The operating system's enforcement of the deny list for the next command (docs/security.md). */
  async isolation(env: NodeJS.ProcessEnv = childEnv()): Promise<Jail> {
    const mode = (read<IsolationMode>(this.ctx.config, 'commandIsolation') ?? 'auto') as IsolationMode;
    const deny = read<unknown>(this.ctx.config, 'commandDenyList');
    const allow = read<unknown>(this.ctx.config, 'commandAllowList');
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
    const jail = await this.jail.prepare({ deny: strings(deny), allow: strings(allow) }, mode, env, this.opts);
    if (jail.isolated && jail.notes.join('\n') !== this.jailNotesLogged) {
      this.jailNotesLogged = jail.notes.join('\n');
      for (const n of jail.notes) this.ctx.log.warn(`commands: deny list, not replaced: ${n}`);
    }
    return jail;
  }

  /**
   * Said once at start: which isolation commands will get. `auto` where strict cannot be set up, or where there is
   * no jail at all, is a warning (the same as `keel doctor` says); so is `off`, and a `required`/`strict` that
   * will refuse every command.
   */
  async reportIsolation(): Promise<void> {
    const mode = (read<IsolationMode>(this.ctx.config, 'commandIsolation') ?? 'auto') as IsolationMode;
    if (mode === 'off') {
      this.ctx.log.warn('commands: commandIsolation is off: the operating system does not enforce commandDenyList (docs/security.md)');
      return;
    }
    const ns = await namespaceSupport(['mount', 'pid'], this.opts);
    if (!ns.available) {
      if (mode === 'auto')
        this.ctx.log.warn(
          `commands: no isolation here (${ns.reason}): only the argv check keeps commands from the programs on commandDenyList (docs/security.md)`,
        );
      else
        this.ctx.log.warn(
          `commands: commandIsolation is ${mode} and this system cannot isolate commands (${ns.reason}): every command is refused`,
        );
      return;
    }
    if (mode !== 'auto') return;
    const strict = await strictIsolationSupport(this.opts);
    if (strict.available)
      this.ctx.log.info('commands: isolation strict (commandIsolation auto): nothing a command runs can start from a writable place');
    else
      this.ctx.log.warn(
        `commands: strict isolation cannot be set up here (${strict.reason}), so commandIsolation auto uses the weaker jail: ${WEAKER}`,
      );
  }

  /** The policy as the configuration says now. Unreadable lists fail closed. */
  check(argv: string[]): PolicyDecision {
    const allow = read<unknown>(this.ctx.config, 'commandAllowList');
    const deny = read<unknown>(this.ctx.config, 'commandDenyList');
    if (!Array.isArray(deny) || !deny.every((d) => typeof d === 'string')) {
      return { allowed: false, programs: [], reason: 'commandDenyList cannot be read, so no command runs' };
    }
    const sudo = read<unknown>(this.ctx.config, 'sudoMode') === true;
    return analyze(argv, { allow: Array.isArray(allow) ? allow.filter((a): a is string => typeof a === 'string') : [], deny, sudo });
  }

  private safeModeOn(): boolean {
    const v = read<unknown>(this.ctx.config, 'safeMode');
    return v !== false && v !== undefined;
  }

  private refuse(argv: string[] | undefined, who: Actor | undefined, reason: string): never {
    this.ctx.log.warn(`commands: refused ${argv ? JSON.stringify(argv) : 'a command'} for ${describeActor(who)}: ${reason}`);
    throw new CommandError(`Command refused: ${reason}`);
  }

  /** The folder a command runs in: commandWorkingDir, or `cwd` inside it (anywhere in sudo mode). */
  async workingDir(cwd: string | undefined, requested?: string): Promise<string> {
    const configured = this.ctx.config.get('commandWorkingDir');
    // Unset, it is the current directory of the process that checked the request; at approval (maybe in another
    // process, `keel commands approve`) that folder is the one the request was checked against.
    const base = resolve(configured ?? requested ?? process.cwd());
    const dir = cwd ? resolve(base, cwd) : base;
    const rel = relative(base, dir);
    const inside = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    if (!inside && read<unknown>(this.ctx.config, 'sudoMode') !== true) {
      throw new CommandError(`Command refused: cwd ${dir} is outside commandWorkingDir (${base}); only sudoMode allows that`);
    }
    const s = await stat(dir).catch(() => undefined);
    if (!s?.isDirectory()) throw new CommandError(`Command refused: the working folder ${dir} does not exist or is not a folder`);
    return dir;
  }

  /** Set by the plugin: where a command from a chat with buttons is sent for approval (docs/approvals.md). */
  approvals: ApprovalService | undefined;

  async request(a: RunCommandArgs, actor: Actor, signal?: AbortSignal, action?: Action): Promise<string> {
    let argv: string[];
    try {
      argv = a.args !== undefined ? [a.command, ...a.args] : toArgv(a.command);
    } catch (e) {
      if (e instanceof Refusal) this.refuse(undefined, actor, e.message);
      throw e;
    }
    if (argv.length === 0) this.refuse(argv, actor, 'the command is empty');
    if (this.safeModeOn()) this.refuse(argv, actor, 'safe mode is on');
    const decision = this.check(argv);
    if (!decision.allowed) this.refuse(argv, actor, decision.reason);
    const cwd = await this.workingDir(a.cwd);
    if (!this.ctx.config.get('autoExecuteCommands')) {
      const ttl = this.ctx.config.get('commandConfirmationTtlMinutes');
      const item = await this.pending.add({ argv, cwd, requestedBy: actor }, ttl);
      this.ctx.log.info(
        `commands: ${item.id} ${JSON.stringify(argv)} waits for confirmation (requested by ${describeActor(actor)}, expires ${item.expiresAt})`,
      );
      const origin = originOf(actor, action);
      if (origin && this.approvals) {
        const r = await this.approvals.request(
          { id: item.id, kind: 'command', ask: `run the command: ${argv.join(' ')} (in ${cwd})`, requestedBy: actor, origin },
          this.ctx.config.get('approvalExpiryMinutes'),
        );
        return (
          `Command ${item.id} (${argv.join(' ')} in ${cwd}) waits for an admin's approval (autoExecuteCommands is off): ` +
          `the request was sent to this chat with Approve and Refuse buttons. When an admin taps one, the command runs (or not) ` +
          `and the result is posted in this chat. It expires at ${r.expiresAt}. Tell the user it is waiting; do not ask again.`
        );
      }
      return (
        `Command ${item.id} is waiting for a human to confirm it (autoExecuteCommands is off): ${argv.join(' ')} in ${cwd}. ` +
        `An admin can approve it with approve_command {"id":"${item.id}","decision":"approve"} (or refuse it), ` +
        `or the operator with \`keel commands approve ${item.id}\`. It expires at ${item.expiresAt}.`
      );
    }
    return this.execute(argv, cwd, actor, signal);
  }

  async execute(argv: string[], cwd: string, actor: Actor | undefined, signal?: AbortSignal): Promise<string> {
    const timeoutMs = this.ctx.config.get('commandTimeoutMs');
    const maxBytes = this.ctx.config.get('commandOutputMaxBytes');
    const retries = this.ctx.config.get('commandRetries');
    const env = childEnv();
    const jail = await this.isolation(env);
    const mode = read<unknown>(this.ctx.config, 'commandIsolation');
    if (!jail.isolated && (mode === 'required' || mode === 'strict')) {
      this.refuse(argv, actor, `commandIsolation is ${mode} and the operating system cannot enforce commandDenyList here: ${jail.reason}`);
    }
    this.ctx.log.info(
      `commands: running ${JSON.stringify(argv)} in ${cwd} for ${describeActor(actor)} (${jail.isolated ? 'isolated' : `not isolated: ${jail.reason}`})`,
    );
    const r =
      jail.isolated && !startable(argv[0] as string, cwd, env)
        ? notFound(argv[0] as string)
        : await runArgv(jail.isolated ? jail.wrap(argv) : argv, { cwd, timeoutMs, retries, maxBytes, env, ...(signal ? { signal } : {}) });
    this.ctx.log.info(
      `commands: ${argv[0]} ${r.started ? `ended with exit code ${r.exitCode}${r.signal ? ` (signal ${r.signal})` : ''}${r.timedOut ? ' after a timeout' : ''}` : `did not start: ${r.error}`} in ${r.durationMs} ms`,
    );
    return formatResult(argv, r, maxBytes, timeoutMs, isolationLines(jail, r));
  }

  /** approve_command and `keel commands approve|refuse`. */
  async decide(id: string, decision: 'approve' | 'refuse', actor: Actor, signal?: AbortSignal): Promise<string> {
    const who = approverOf(actor, this.ctx);
    if (!who.ok) {
      this.ctx.log.warn(`commands: ${describeActor(actor)} tried to ${decision} pending command ${id}: ${who.reason}`);
      throw new CommandError(`Cannot ${decision} command ${id}: ${who.reason}`);
    }
    const item = await this.pending.take(id);
    if (!item) throw coded('KEEL_E_NOT_FOUND', `No pending command with id ${id} (it may have expired or been decided already)`);
    if (decision === 'refuse') {
      this.ctx.log.info(`commands: ${id} ${JSON.stringify(item.argv)} refused by ${describeActor(who.human)}`);
      return `Command ${id} (${item.argv.join(' ')}) was refused by ${describeActor(who.human)} and will not run.`;
    }
    return this.runApproved(item, who.human, signal);
  }

  private async runApproved(item: PendingCommand, human: Actor, signal?: AbortSignal): Promise<string> {
    // The configuration may have changed since the request: check everything again.
    if (this.safeModeOn()) this.refuse(item.argv, human, 'safe mode is on');
    const decision = this.check(item.argv);
    if (!decision.allowed) this.refuse(item.argv, human, `${decision.reason} (checked again at approval)`);
    const cwd = await this.workingDir(item.cwd, item.cwd);
    this.ctx.log.info(`commands: ${item.id} approved by ${describeActor(human)}`);
    return `Approved by ${describeActor(human)}.\n${await this.execute(item.argv, cwd, human, signal)}`;
  }
}
