/**
 * The configuration change policy (SPEC "Configuration change policy"), as two small decisions.
 */
import type { ConfigOrigin, ConfigView, PolicyClass } from '../../sdk/types.js';
import { isAdmin } from '../policy/is-admin.js';
import { isUntrusted } from '../../sdk/actor.js';

export type ChangeDecision = 'apply' | 'pending' | 'locked';

/**
 * What happens to a set request. The operator may set anything. Every other origin, including a
 * channel admin speaking through the agent, is bound by the key's class: the classes restrict the
 * agent's tool, whoever prompted it. An unknown class (a manifest bug) is treated as LOCKED.
 */
export function decideChange(policy: PolicyClass | undefined, origin: ConfigOrigin): ChangeDecision {
  if (origin.kind === 'operator') return 'apply';
  if (policy === 'SAFE') return 'apply';
  if (policy === 'APPROVAL') return 'pending';
  return 'locked';
}

/**
 * Why `origin` may not approve or reject a pending change, or undefined when it may.
 * Approval is for humans: the operator, or a channel admin. An 'admin' origin must carry the
 * actor, that actor must really be an admin, and no part of the request may come from untrusted
 * content: otherwise a web page could talk the agent into approving its own request.
 */
export function approverProblem(origin: ConfigOrigin, config: ConfigView): string | undefined {
  if (origin.kind === 'operator') return undefined;
  if (origin.kind !== 'admin')
    return 'only a human (the operator or a channel admin) can approve or reject configuration changes, not the agent';
  if (!origin.actor) return 'an admin approval must say which admin is approving';
  if (isUntrusted(origin.actor)) return 'this request was started by untrusted content, so it cannot approve configuration changes';
  if (!isAdmin(origin.actor, config)) return 'the approving user is not an admin on their channel';
  return undefined;
}
