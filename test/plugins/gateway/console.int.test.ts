/**
 * The console endpoints the dashboard uses (keys with metadata, approvals, cancel, one skill's schema, plugins),
 * against a real kernel and gateway on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gw } from './harness.js';

let g: Gw;
beforeAll(async () => {
  g = await startGateway({ fakeAgent: true });
});
afterAll(async () => {
  await g?.close();
});
const json = async (r: Response | Promise<Response>) => (await r).json() as Promise<any>;

describe('console endpoints', () => {
  it('GET /api/config/keys gives every key with type, default, source and policy class; secrets masked, no secret default', async () => {
    await g.kernel.config.set('fakeAgentApiKey', 'sk-secret-value-123456', { kind: 'operator' });
    const { keys } = await json(g.req('/api/config/keys'));
    const port = keys.find((k: any) => k.key === 'gatewayPort');
    expect(port).toMatchObject({ owner: 'gateway', policy: 'APPROVAL', secret: false, default: 3100, source: 'override', value: 0 });
    expect(port.type).toMatch(/integer/);
    const safe = keys.find((k: any) => k.key === 'safeMode');
    expect(safe).toMatchObject({ policy: 'LOCKED', default: false, source: 'default' });
    const secret = keys.find((k: any) => k.key === 'fakeAgentApiKey');
    expect(secret.secret).toBe(true);
    expect(secret.default).toBeUndefined();
    expect(JSON.stringify(keys)).not.toContain('sk-secret-value-123456');
    expect(secret.value).toMatch(/\*\*\*\*$/);
    expect(secret.source).toBe('file');
  });

  it('pending approvals are listed, approved and rejected; an unknown id is 404', async () => {
    // gatewayPort is an APPROVAL key: the agent's changes wait for a human.
    const p1 = await g.kernel.config.set('gatewayPort', 4001, { kind: 'agent', reason: 'test' });
    const p2 = await g.kernel.config.set('gatewayPort', 4002, { kind: 'agent', reason: 'test' });
    expect(p1.status).toBe('pending');
    const { pending } = await json(g.req('/api/config/pending'));
    expect(pending.map((p: any) => p.value)).toEqual(expect.arrayContaining([4001, 4002]));
    const id1 = (p1 as { id: string }).id;
    const id2 = (p2 as { id: string }).id;
    const ok = await g.req(`/api/config/pending/${id1}/approve`, { method: 'POST' });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { success: boolean }).success).toBe(true);
    expect(g.kernel.config.get('gatewayPort')).toBe(0); // the command-line override still wins; the file has 4001
    const rej = await g.req(`/api/config/pending/${id2}/reject`, { method: 'POST' });
    expect(rej.status).toBe(200);
    expect((await json(g.req('/api/config/pending'))).pending).toEqual([]);
    expect((await g.req('/api/config/pending/nope/approve', { method: 'POST' })).status).toBe(404);
  });

  it('POST /api/tasks/:id/cancel removes a pending task; unknown is 404', async () => {
    const a = await g.kernel.queue.push({ task: 'wait for me', source: 'cli' });
    const r = await json(g.req(`/api/tasks/${a.id}/cancel`, { method: 'POST' }));
    expect(r).toMatchObject({ success: true, outcome: 'removed' });
    expect(g.kernel.queue.get(a.id)?.status ?? 'gone').not.toBe('pending');
    expect((await g.req('/api/tasks/act_0_nope/cancel', { method: 'POST' })).status).toBe(404);
  });

  it('GET /api/skills/:name has the schema and the flags; GET /api/plugins lists states; enable an unknown plugin is 404', async () => {
    const s = await json(g.req('/api/skills/echo'));
    expect(s).toMatchObject({
      name: 'echo',
      isDangerous: false,
      adminOnly: false,
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
    });
    expect((await g.req('/api/skills/nope')).status).toBe(404);
    const { plugins } = await json(g.req('/api/plugins'));
    expect(plugins.find((p: any) => p.id === 'gateway')).toMatchObject({ state: 'loaded' });
    expect(plugins.find((p: any) => p.id === 'agent')).toMatchObject({ state: 'disabled' });
    expect((await g.req('/api/plugins/nope/enable', { method: 'POST' })).status).toBe(404);
  });

  it('GET /api/agent/readiness says why actions wait', async () => {
    const r = await json(g.req('/api/agent/readiness'));
    // The harness runs no agent loop: that is the reason.
    expect(r).toMatchObject({ running: false, ready: false, reason: expect.stringMatching(/keel run/) });
  });
});
