/**
 * Agent plugin entry: offers `llm` (the router), `agent` (the loop), `agent:inbox` (input for running actions), and the `deep_reason` skill.
 */
import { definePlugin, type AgentCapability } from '../../sdk/index.js';
import manifest from './manifest.js';
import { deepReason } from './src/deep-reason.js';
import { Inboxes } from './src/inbox.js';
import { runAction } from './src/loop.js';
import { Router } from './src/router.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const router = new Router({
      config: ctx.config,
      use: (cap) => ctx.use(cap),
      log: ctx.log,
      home: ctx.home,
      onCall: (call) => ctx.emit('modelCall', call),
    });
    ctx.provide('llm', router.capability());
    ctx.hooks.tap('configChanged', () => router.invalidate());
    ctx.hooks.tap('pluginLoaded', () => router.invalidate());
    ctx.hooks.tap('pluginUnloaded', () => router.invalidate());
    const inbox = new Inboxes();
    const agent: AgentCapability = {
      ready() {
        const c = router.current();
        return 'missing' in c ? { ready: false, reason: c.missing } : { ready: true };
      },
      execute: (action, { signal }) => runAction({ ctx, router, inbox }, action, signal),
    };
    ctx.provide('agent', agent);
    ctx.provide('agent:inbox', inbox.capability());
    ctx.skills.register('deep_reason', (args, call) => deepReason(router, args.topic, call.signal, call.action?.id));
    return {
      stop: () => router.usage.flush(),
    };
  },
});
