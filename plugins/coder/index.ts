/**
 * Coder plugin entry: create_custom_skill, execute_typescript, self_repair_skill. Agent-written code runs only in
 * the sandbox (src/sandbox.ts); what that does and does not stop: docs/sandbox.md.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { definePlugin, errorMessage, type Logger } from '../../sdk/index.js';
import manifest from './manifest.js';
import { CoderService } from './src/service.js';
import { SANDBOX_CAPABILITY, upgradeSkillFile } from './src/skill-file.js';

declare module '../../sdk/capabilities.js' {
  interface Capabilities {
    /** How agent-written skill files reach the sandbox (they have no plugin context of their own). */
    'coder:sandbox': CoderService['runSkill'];
  }
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const svc = new CoderService(ctx);
    ctx.skills.register('create_custom_skill', (args, c) => svc.create(args, c.signal));
    ctx.skills.register('execute_typescript', (args, c) => svc.execute(args, c.signal));
    ctx.skills.register('self_repair_skill', (args, c) => svc.repair(args, c.signal));
    // Skills the agent created reach the sandbox through this capability (their files never import Keel internals).
    ctx.provide(SANDBOX_CAPABILITY, svc.runSkill.bind(svc));
    upgradeSkillFiles(svc.skillsDir, ctx.log);
  },
});

/**
 * Agent-written skills saved by an earlier version reached the sandbox through a global slot, which is gone: they
 * are rewritten (same spec, same code) before the custom skills load, so they keep working.
 */
function upgradeSkillFiles(dir: string, log: Logger): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.ts'));
  } catch {
    return;
  }
  for (const n of names) {
    try {
      const next = upgradeSkillFile(readFileSync(join(dir, n), 'utf8'));
      if (next === undefined) continue;
      writeFileSync(join(dir, n), next);
      log.info(
        `coder: ${n} was written by an older create_custom_skill and is rewritten in the current form (same spec and code; a skill with the network is admin-only and outbound)`,
      );
    } catch (e) {
      log.warn(`coder: could not upgrade ${n}: ${errorMessage(e)}`);
    }
  }
}
