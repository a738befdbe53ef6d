/**
 * Who may do what: the one authorization decision, admin checks and session keys.
 */
export { authorize } from './authorize.js';
export type { AuthorizeInput, AuthorizeResult } from './authorize.js';
export { isAdmin } from './is-admin.js';
export { sessionKey, sessionScopeOf } from './session-key.js';
export type { SessionScope } from './session-key.js';
export { ADMIN_ONLY_SKILLS, SAFE_MODE_BLOCKED_SKILLS, isPrivilegedSkill } from './admin-skills.js';
export { OUTBOUND_SKILLS, isOutboundSkill, recipientsOf } from './outbound.js';
export { canonicalIdentity, identityOf, parseIdentity } from './identity.js';
