/**
 * Memory plugin entry: opens the store, registers the skills, taps the agent's hooks, offers `memory`.
 * Layers and files: docs/memory.md.
 */
import { definePlugin, type InboundMessage, errorMessage, setting } from '../../sdk/index.js';
import manifest from './manifest.js';
import { updateContact } from './src/contacts.js';
import { resetCommand } from './src/reset.js';
import { MemoryService } from './src/service.js';
import { registerSkills } from './src/skills.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const svc = new MemoryService(ctx);
    svc.open();
    registerSkills(svc);
    svc.tapHooks();
    // chatB contact profiles follow each incoming message (a waterfall: the message passes on unchanged), when the
    // chatB plugin's chatBContextProfilingEnabled is on (off by default; without chatB the key is unknown here).
    ctx.hooks.tap('messageIn', async (m: InboundMessage) => {
      if (m.channel === 'chatB' && m.userId && setting<boolean>(ctx, 'chatBContextProfilingEnabled', true) === true) {
        const meta = m.metadata ?? {};
        const name =
          typeof meta.pushName === 'string' ? meta.pushName : typeof meta.displayName === 'string' ? meta.displayName : undefined;
        const language = typeof meta.language === 'string' ? meta.language : undefined;
        await updateContact(ctx.home, 'chatB', m.userId, (p) => {
          p.messageCount++;
          p.lastSeen = new Date().toISOString();
          if (name) p.displayName = name;
          if (language) p.language = language;
          if (m.text?.trim()) p.lastTopics.push(m.text.trim().slice(0, 120));
        }).catch((e: unknown) => ctx.log.warn(`Contact profile not updated: ${errorMessage(e)}`));
      }
      return m;
    });
    ctx.provide('memory', svc);
    // Sessions that went quiet have their short memories consolidated (memorySessionIdleHours): a minute after the
    // start, then hourly; the stop below ends it.
    svc.startIdleSweep();
    return {
      async stop() {
        svc.stopBackground();
        await svc.settle();
        await svc.store.close();
      },
      health() {
        return svc.store.problems.length ? { ok: true, message: svc.store.problems.join(' ') } : { ok: true };
      },
    };
  },
  commands: { reset: resetCommand },
});
