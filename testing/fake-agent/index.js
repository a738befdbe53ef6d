// A plain-JS user plugin (no imports) that provides the `agent` capability for tests of the queue, runner and
// CLI. It records every action it runs in $KEEL_HOME/fake-agent.log (one JSON line each) so tests can check
// that nothing ran twice.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

export default {
  setup(ctx) {
    const log = join(ctx.home, 'fake-agent.log');
    ctx.skills.register('echo', ({ text }) => text);
    ctx.provide('agent', {
      ready() {
        return process.env.FAKE_AGENT_NOT_READY ? { ready: false, reason: 'no model is configured (fake agent)' } : { ready: true };
      },
      async execute(action, { signal }) {
        appendFileSync(log, `${JSON.stringify({ id: action.id, task: action.task, pid: process.pid, at: Date.now() })}\n`);
        const sleep = /sleep:(\d+)/.exec(action.task);
        if (sleep) {
          await new Promise((resolve, reject) => {
            const t = setTimeout(resolve, Number(sleep[1]));
            signal.addEventListener('abort', () => {
              clearTimeout(t);
              reject(new Error('aborted'));
            });
          });
        }
        if (action.task.includes('fail')) throw new Error(`fake failure of "${action.task}"`);
        const echo = await ctx.skills.execute('echo', { text: action.task }, { kind: 'operator', channel: 'cli' });
        return { result: `done: ${echo.result}` };
      },
    });
  },
};
