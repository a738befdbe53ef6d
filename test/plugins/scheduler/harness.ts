/** Scheduler tests: a real kernel with the scheduler plugin (plus user plugins written into the home). */
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Action } from '../../../sdk/index.js';
import { rm, tmp } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export interface Harness {
  home: string;
  kernel: Kernel;
  logs: LogSink;
  start(opts?: { runAgent?: boolean; overrides?: Record<string, unknown> }): Promise<Kernel>;
  stop(): Promise<void>;
  close(): Promise<void>;
  actions(): Action[];
}

export async function harness(
  opts: { runAgent?: boolean; overrides?: Record<string, unknown>; home?: string; plugins?: string[] } = {},
): Promise<Harness> {
  const home = opts.home ?? tmp('keel-scheduler-');
  const empty = tmp('keel-scheduler-builtins-');
  const builtins = await discoverBuiltins(join(ROOT, 'plugins'));
  const wanted = new Set(['scheduler', ...(opts.plugins ?? [])]);
  const extra = builtins.filter((c) => wanted.has(c.id));
  let kernel: Kernel | undefined;
  const h: Harness = {
    home,
    logs: new LogSink({ quiet: true }),
    get kernel() {
      return kernel!;
    },
    async start(o = {}) {
      h.logs = new LogSink({ quiet: true });
      kernel = await startKernel({
        home,
        builtinDir: empty,
        extraPlugins: extra,
        env: {},
        watchSkills: false,
        watchConfig: false,
        runAgent: o.runAgent ?? opts.runAgent ?? true,
        logs: h.logs,
        overrides: { ...opts.overrides, ...o.overrides },
      });
      return kernel;
    },
    async stop() {
      await kernel?.stop();
      kernel = undefined;
    },
    async close() {
      await h.stop();
      rm(empty);
      if (!opts.home) rm(home);
    },
    actions() {
      const l = kernel!.queue.list();
      return [...l.pending, ...l.completed, ...l.failed];
    },
  };
  await h.start();
  return h;
}
