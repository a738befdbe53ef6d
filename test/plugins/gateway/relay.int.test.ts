/**
 * Live events across machines (a queue shared through Redis): a runner on one machine, with its gateway idle, and a
 * gateway serving on another; what the runner does (action started, skill calls, completed) reaches the serving
 * gateway's WebSocket clients, marked with the host it came from, once; the serving gateway's cancel stops an
 * action the other machine runs.
 */
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { bootKernel, installFakeAgent, type TestKernel } from '../../../testing/index.js';
import { waitFor } from '../../helpers.js';
import { sharedRedis, redisProblem } from '../../redis-server.js';
import { type Client, open } from './ws-helpers.js';

const problem = redisProblem();
const redis = sharedRedis();
const kernels: TestKernel[] = [];
let client: Client | undefined;
let n = 0;

afterEach(async () => {
  client?.ws.close();
  client = undefined;
  for (const k of kernels.splice(0)) await k.close();
});

/** Two machines sharing a queue: one serving the gateway without a runner, one running actions (its gateway idle). */
async function twoMachines(): Promise<{ viewer: TestKernel; runner: TestKernel; port: number }> {
  const shared = { queueRedisUrl: redis().url, queueRedisPrefix: `relay${++n}-${redis().prefix}` };
  const viewer = await bootKernel({
    builtins: ['gateway'],
    runAgent: false,
    config: { ...shared, gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' },
  });
  kernels.push(viewer);
  const runner = await bootKernel({ builtins: ['gateway'], runAgent: true, before: (h) => installFakeAgent(h), config: shared });
  kernels.push(runner);
  const port = await waitFor(() => {
    const cap = viewer.kernel.registry.use<unknown>('gateway:address');
    const v = (typeof cap === 'function' ? (cap as () => unknown)() : cap) as { port?: number } | undefined;
    return v?.port;
  }, 'the gateway address');
  return { viewer, runner, port };
}

describe.skipIf(problem)('gateway: live events of other machines', () => {
  it('a serving gateway streams what a runner on another machine does, marked with its host, once', async () => {
    const { viewer, runner, port } = await twoMachines();
    expect(runner.kernel.host.status('gateway')?.state).toBe('loaded');
    client = await open(`ws://127.0.0.1:${port}/`);
    await client.next((m) => m.type === 'status', 'the initial status');
    // pushed where no runner runs; carried out on the other machine
    const pushed = await viewer.kernel.queue.push({ task: 'relay me' });
    const started = await client.next(
      (m) => m.type === 'event' && m.event === 'action.started' && m.data.actionId === pushed.id,
      'action.started',
    );
    expect(started.data.host).toBe(hostname());
    const skill = await client.next((m) => m.type === 'event' && m.event === 'action' && m.data.skill === 'echo', 'the skill call');
    expect(skill.data.host).toBe(hostname());
    const done = await client.next(
      (m) => m.type === 'event' && m.event === 'action.completed' && m.data.actionId === pushed.id,
      'action.completed',
    );
    expect(done.data.result).toBe('done: relay me');
    // once each: the viewer's own events are not echoed back to it, the runner's not doubled
    await new Promise((r) => setTimeout(r, 300));
    expect(client.messages.filter((m) => m.type === 'event' && m.event === 'action.completed' && m.data.actionId === pushed.id)).toEqual(
      [],
    );
    const queued = client.messages.filter((m) => m.type === 'event' && m.event === 'action.queued' && m.data.actionId === pushed.id);
    expect(queued.length).toBeLessThanOrEqual(1);
    expect(queued.every((m) => m.data.host === undefined)).toBe(true);
  });

  it("the serving gateway's cancel stops an action running on the other machine: failed with the reason, not retried", async () => {
    const { viewer, runner, port } = await twoMachines();
    client = await open(`ws://127.0.0.1:${port}/`);
    const pushed = await viewer.kernel.queue.push({ task: 'sleep:30000 long' });
    await client.next((m) => m.type === 'event' && m.event === 'action.started' && m.data.actionId === pushed.id, 'action.started');
    const res = await fetch(`http://127.0.0.1:${port}/api/tasks/${pushed.id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ success: true, outcome: 'stopping' });
    const failed = await client.next(
      (m) => m.type === 'event' && m.event === 'action.failed' && m.data.actionId === pushed.id,
      'action.failed from the other machine',
    );
    expect(failed.data.host).toBe(hostname());
    await waitFor(() => runner.kernel.queue.get(pushed.id)?.status === 'failed', 'the runner to settle it');
    expect(runner.kernel.queue.get(pushed.id)).toMatchObject({ error: 'cancelled by the operator (gateway)', metadata: { retries: 0 } });
  });
});
