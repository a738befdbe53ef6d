/**
 * Skill dispatch: the only path to a skill. Unknown skill, invalid arguments, policy refusal, a hook veto and
 * a failing handler are distinct outcomes, each with its own code; dispatch never throws.
 */
import { performance } from 'node:perf_hooks';
import { describeActor } from '../../sdk/actor.js';
import type { ApprovalsCapability } from '../../sdk/approvals.js';
import type { HookCatalogue, SkillCall } from '../../sdk/hooks.js';
import type { SkillCallContext } from '../../sdk/plugin.js';
import type { Action, Actor, ConfigView, Logger, SkillResult } from '../../sdk/types.js';
import { errorCodeOf, errorPluginOf } from '../../sdk/errors.js';
import { ErrorCodes, errorCode, errorMessage } from '../errors.js';
import { authorize } from '../policy/index.js';
import { nearestNames } from './nearest.js';
import type { Registry } from './registry.js';

export interface DispatchDeps {
  registry: Registry;
  hooks: Readonly<HookCatalogue>;
  config: ConfigView;
  log: Logger;
}

export interface ExecuteOptions {
  action?: Action;
  signal?: AbortSignal;
}

const NEVER = new AbortController().signal;

function failure(code: string, message: string, started: number): SkillResult {
  return { success: false, result: message, code, executionTime: round(performance.now() - started) };
}

/** SPEC: executionTime is a whole number of milliseconds. */
function round(ms: number): number {
  return Math.round(ms);
}

/**
 * The code a failing handler's error carries to the caller: a kernel code, or any `KEEL_E_*` code a plugin set on
 * what it threw (so the REST and WebSocket clients can tell a blocked URL from a timeout); else SKILL_FAILED.
 */
export function failureCode(e: unknown): string {
  return errorCode(e) ?? errorCodeOf(e) ?? ErrorCodes.SKILL_FAILED;
}

/** Turns whatever a handler returned into the text result. */
export function stringifyResult(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

export function createDispatcher(deps: DispatchDeps) {
  const { registry, hooks, config, log } = deps;

  /** The words added to the refusal: the request sent to the chat's admins, or why none was. Never throws. */
  const askApproval = async (name: string, args: Record<string, unknown>, actor: Actor, action?: Action): Promise<string> => {
    const approvals = registry.use<ApprovalsCapability>('approvals');
    if (typeof approvals?.requestSkill !== 'function') return '';
    try {
      const out = await approvals.requestSkill({ skill: name, args, actor, ...(action ? { action } : {}) });
      return out.message ? ` ${out.message}` : '';
    } catch (e) {
      log.warn(`Approval request for "${name}" failed: ${errorMessage(e)}`);
      return ' No approval request could be sent, so it stays refused.';
    }
  };

  return async function execute(name: string, rawArgs: unknown, actor: Actor, opts: ExecuteOptions = {}): Promise<SkillResult> {
    const started = performance.now();
    const entry = registry.skills.get(name);
    if (!entry) {
      const near = nearestNames(name, [...registry.skills.keys()]);
      return failure(
        ErrorCodes.SKILL_UNKNOWN,
        `Unknown skill "${name}".${near.length ? ` Did you mean ${near.join(', ')}?` : ''}`,
        started,
      );
    }
    if (rawArgs === undefined || rawArgs === null) rawArgs = {};
    if (typeof rawArgs !== 'object' || Array.isArray(rawArgs)) {
      return failure(ErrorCodes.SKILL_INVALID_ARGS, `Invalid arguments for "${name}": parameters must be a JSON object.`, started);
    }
    // Validate a copy: ajv fills defaults in place and the caller's object must not change.
    const args = { ...(rawArgs as Record<string, unknown>) };
    const invalid = entry.validate?.(args);
    if (invalid) return failure(ErrorCodes.SKILL_INVALID_ARGS, `Invalid arguments for "${name}": ${invalid}.`, started);

    const decision = authorize({
      actor,
      skill: { ...entry.manifest, plugin: entry.plugin },
      config,
      args,
      ...(opts.action ? { action: opts.action } : {}),
    });
    if (!decision.allowed) {
      log.warn(`Blocked skill "${name}" for ${describeActor(actor)}: ${decision.reason}`);
      // Still refused now; an admin of the chat the work came from may approve this one call (docs/approvals.md).
      const more = decision.approvable ? await askApproval(name, args, actor, opts.action) : '';
      return failure(decision.code, `${decision.reason}${more}`, started);
    }
    if (!entry.handler) {
      return failure(
        ErrorCodes.SKILL_NO_HANDLER,
        `Skill "${name}" is declared by plugin "${entry.plugin}" but has no handler (the plugin is not running).`,
        started,
      );
    }

    const call: SkillCall = { name, args, actor, ...(opts.action ? { actionId: opts.action.id } : {}) };
    if (hooks.beforeSkill.isUsed()) {
      const veto = await hooks.beforeSkill.promise(call).catch((e: unknown) => ({ reason: errorMessage(e) }));
      if (veto) {
        log.warn(`Skill "${name}" refused by a hook: ${veto.reason}`);
        return failure(ErrorCodes.SKILL_VETOED, veto.reason, started);
      }
    }

    let result: SkillResult;
    try {
      const value = await entry.handler(args, {
        actor,
        ...(opts.action ? { action: opts.action } : {}),
        signal: opts.signal ?? NEVER,
        log,
        // The registry holds whatever was provided; the capability map types it for the skill.
        use: ((capability: string) => registry.use(capability)) as SkillCallContext['use'],
      });
      result = { success: true, result: stringifyResult(value), executionTime: round(performance.now() - started) };
    } catch (e) {
      const code = failureCode(e);
      // Whose error it is: the plugin the error names (a channel's, when a send through it failed), else the skill's.
      result = { ...failure(code, `Skill "${name}" failed: ${errorMessage(e)}`, started), plugin: errorPluginOf(e) ?? entry.plugin };
    }
    if (hooks.afterSkill.isUsed()) {
      await hooks.afterSkill.promise(call, result).catch((e: unknown) => log.warn(`afterSkill hook failed: ${errorMessage(e)}`));
    }
    return result;
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
