/**
 * Which skills need an admin, and which safe mode switches off: the lists live in the SDK (sdk/admin-skills.ts) so
 * that plugins offering Keel's skills elsewhere (the MCP server) list for a caller exactly what policy would let run.
 */
export { ADMIN_ONLY_SKILLS, isPrivilegedSkill, SAFE_MODE_BLOCKED_SKILLS } from '../../sdk/admin-skills.js';
