/**
 * Which skills need an admin, and which safe mode switches off.
 */
import type { SkillManifest } from './types.js';

/** SPEC "Admin permissions" 2: admin-only whatever their manifest says. */
export const ADMIN_ONLY_SKILLS: ReadonlySet<string> = new Set([
  'run_command',
  'create_custom_skill',
  'manage_config',
  'spawn_agent',
  'delegate_task',
  'system_check',
  'self_repair_skill',
  'execute_typescript',
  'browser_run_script',
]);

/** SPEC "Modes": blocked for everyone, the operator included, while `safeMode` is on. */
export const SAFE_MODE_BLOCKED_SKILLS: ReadonlySet<string> = new Set(['run_command', 'create_custom_skill']);

/**
 * A skill is privileged when the spec lists it as admin-only, or its manifest marks it
 * `adminOnly` or `isDangerous`. Matching by name as well as by flag means a plugin cannot
 * unprivilege `run_command` by shipping a manifest that forgets the flag.
 */
export function isPrivilegedSkill(skill: Pick<SkillManifest, 'name' | 'adminOnly' | 'isDangerous'>): boolean {
  return ADMIN_ONLY_SKILLS.has(skill.name) || skill.adminOnly === true || skill.isDangerous === true;
}
