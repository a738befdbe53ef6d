/**
 * Child process of crash.e2e.test.ts: a kernel with the email channel receiving on the home at argv[2] with the
 * configuration JSON at argv[3]. Prints `ready` once IMAP is connected and `count <n>` (email actions in the queue,
 * whoever queued them) at start and after each new one, until it is killed.
 */
import { startKernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { ChannelCapability } from '../../../sdk/index.js';

const [home, config] = [process.argv[2]!, JSON.parse(process.argv[3]!) as Record<string, unknown>];
const kernel = await startKernel({
  home,
  builtinDir: process.argv[4]!,
  extraPlugins: [
    {
      id: 'email',
      origin: 'builtin',
      dir: new URL('../../../plugins/email', import.meta.url).pathname,
      manifest: (await import('../../../plugins/email/manifest.js')).default,
      load: async () => (await import('../../../plugins/email/index.js')).default,
    },
  ],
  env: {},
  overrides: config,
  watchSkills: false,
  logs: new LogSink({ quiet: true }),
});
const count = () => {
  const l = kernel.queue.list();
  return [...l.pending, ...l.completed, ...l.failed].filter((a) => a.source === 'email').length;
};
kernel.hooks.actionQueued.tap('crash-child', () => {
  process.stdout.write(`count ${count()}\n`);
});
const timer = setInterval(() => {
  if (kernel.registry.use<ChannelCapability>('channel:email')?.status().state === 'connected') {
    clearInterval(timer);
    process.stdout.write(`ready\ncount ${count()}\n`);
  }
}, 20);
process.on('SIGTERM', () => void kernel.stop().then(() => process.exit(0)));
