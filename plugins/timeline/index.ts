/**
 * Timeline plugin entry: records action timelines from the kernel's hooks into `$KEEL_HOME/timeline/` and adds
 * `GET /api/tasks/:id` to the gateway; `keel trace` reads the same store without starting anything.
 */
import { definePlugin, errorMessage, type PluginContext } from '../../sdk/index.js';
import manifest from './manifest.js';
import { record } from './src/recorder.js';
import { taskRoute } from './src/routes.js';
import { DEFAULT_MAX_ACTIONS, DEFAULT_MAX_EVENTS, TimelineStore } from './src/store.js';
import { traceCommand } from './src/trace.js';

function bound(ctx: PluginContext, key: string, fallback: number): number {
  try {
    const v = ctx.config.get<number>(key);
    return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
  } catch {
    return fallback;
  }
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const store = TimelineStore.open(ctx.home, () => ({
      maxEvents: bound(ctx, 'timelineMaxEvents', DEFAULT_MAX_EVENTS),
      maxActions: bound(ctx, 'timelineMaxActions', DEFAULT_MAX_ACTIONS),
    }));
    let open = true;
    const recorder = record(ctx, store, (e) => ctx.log.warn(`Could not write action timelines: ${errorMessage(e)}`));
    const current = () => {
      if (!open) return undefined;
      recorder.flush();
      return store;
    };
    ctx.provide('gateway:routes:timeline', { routes: [taskRoute(ctx, current)] });
    return {
      stop() {
        recorder.flush();
        open = false;
        store.close();
      },
      health() {
        const n = store.counts();
        return { ok: true, message: `${n.actions} action timelines, ${n.events} events, ${n.ignored} ignored messages` };
      },
    };
  },
  commands: { trace: traceCommand },
});
