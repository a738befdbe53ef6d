/**
 * Coder plugin entry: create_custom_skill, execute_typescript, self_repair_skill. Agent-written code runs only in
 * the sandbox (src/sandbox.ts); what that does and does not stop: docs/sandbox.md.
 */
import { definePlugin } from '../../sdk/index.js';
import manifest from './manifest.js';
import { CoderService } from './src/service.js';
import { SANDBOX_SLOT } from './src/skill-file.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const svc = new CoderService(ctx);
    ctx.skills.register('create_custom_skill', (args, c) => svc.create(args, c.signal));
    ctx.skills.register('execute_typescript', (args, c) => svc.execute(args, c.signal));
    ctx.skills.register('self_repair_skill', (args, c) => svc.repair(args, c.signal));
    // Skills the agent created reach the sandbox through this slot (their files never import Keel internals).
    const slot = Symbol.for(SANDBOX_SLOT);
    const runner = svc.runSkill.bind(svc);
    const g = globalThis as Record<symbol, unknown>;
    g[slot] = runner;
    return {
      stop() {
        if (g[slot] === runner) delete g[slot];
      },
    };
  },
});
