/**
 * A retried push is one action: `POST /api/tasks` with an Idempotency-Key header, and `keel push --key`, answer a
 * retry with the first push's action instead of queueing a second one; a malformed key is a clear 400 that queues
 * nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { keelCli, rm, tmp } from '../../helpers.js';
import { type Gw, startGateway } from './harness.js';

let g: Gw;
beforeAll(async () => {
  g = await startGateway({ fakeAgent: true, overrides: { gatewayAutoStart: true } });
  // No runner: what is queued stays queued, so the test can count it.
});
afterAll(async () => g?.close());

const post = (key: string | undefined, task = 'write the report') =>
  g.req('/api/tasks', { method: 'POST', json: { task }, ...(key !== undefined ? { headers: { 'idempotency-key': key } } : {}) });

describe('idempotent pushes', () => {
  it('POST /api/tasks retried with the same Idempotency-Key is the same action, marked as a replay', async () => {
    const first = await post('7c6f1a52-report');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const id = ((await first.json()) as { taskId: string }).taskId;
    const again = await post('7c6f1a52-report');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { taskId: string }).taskId).toBe(id);
    const other = await post('another-key');
    expect(((await other.json()) as { taskId: string }).taskId).not.toBe(id);
    const none = await post(undefined);
    expect(none.status).toBe(201);
    const tasks = (await (await g.req('/api/tasks')).json()) as { pending: Array<{ id: string; metadata: Record<string, unknown> }> };
    expect(tasks.pending.filter((a) => a.id === id)).toHaveLength(1);
    expect(tasks.pending).toHaveLength(3);
  });

  it('a malformed Idempotency-Key is a 400 saying what is expected, and queues nothing', async () => {
    const before = (await readQueueList(g.home)).pending.length;
    for (const bad of ['has space', 'x'.repeat(201)]) {
      const r = await post(bad);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { message: string }).message).toMatch(/Idempotency-Key header must be 1 to 200 visible ASCII characters/);
    }
    expect(((await g.req('/api/tasks').then((r) => r.json())) as { pending: unknown[] }).pending).toHaveLength(before);
  });

  it('keel push --key twice queues one action (file queue)', async () => {
    const home = tmp('keel-idem-');
    try {
      const one = await keelCli(home, ['push', '--key', 'nightly-2026-12-06', '--json', 'rotate the logs']);
      expect(one.code).toBe(0);
      const two = await keelCli(home, ['push', '--key', 'nightly-2026-12-06', '--json', 'rotate the logs']);
      expect(two.code).toBe(0);
      const a = JSON.parse(one.stdout) as { id: string };
      expect((JSON.parse(two.stdout) as { id: string }).id).toBe(a.id);
      const list = await readQueueList(home);
      expect(list.pending.map((x) => x.id)).toEqual([a.id]);
      expect((await keelCli(home, ['push', '--help'])).stdout).toMatch(/--key <idempotency-key>/);
    } finally {
      rm(home);
    }
  });
});
