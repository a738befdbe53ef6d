import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import type { Actor, ConfigOrigin } from '../../../sdk/types.js';
import { cleanupFixtures, fixture } from './fixtures.js';

afterEach(cleanupFixtures);

const OPERATOR: ConfigOrigin = { kind: 'operator' };
const alice: Actor = { kind: 'user', channel: 'chatA', userId: '111' };
const AGENT: ConfigOrigin = { kind: 'agent', actor: { kind: 'agent', channel: 'autonomy' }, reason: 'faster model' };
const ADMIN_ALICE: ConfigOrigin = { kind: 'admin', actor: alice };

async function withAdmin() {
  const f = fixture();
  const c = await f.load();
  await c.set('adminUsers', { chatA: ['111'] }, OPERATOR);
  return { f, c };
}

describe('configuration change policy (SAFE / APPROVAL / LOCKED)', () => {
  it('applies an agent change to a SAFE key', async () => {
    const f = fixture();
    const c = await f.load();
    await expect(c.set('testPort', 4321, AGENT)).resolves.toMatchObject({ status: 'applied', value: 4321 });
    expect(c.get('testPort')).toBe(4321);
    expect(readFileSync(f.file, 'utf8')).toContain('testPort: 4321');
  });

  it('queues an agent change to an APPROVAL key; a human approves it, the agent cannot', async () => {
    const { f, c } = await withAdmin();
    const secret = 'sk-proposed-0123456789';
    const out = await c.set('testApiKey', secret, AGENT);
    expect(out.status).toBe('pending');
    if (out.status !== 'pending') return;
    expect(out.id).toMatch(/^cfg_/);
    expect(out.message).toContain('approval');
    expect(c.has('testApiKey')).toBe(false);
    expect(readFileSync(f.file, 'utf8')).not.toContain(secret);

    const listed = c.pending();
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      id: out.id,
      key: 'testApiKey',
      value: 'sk-p****',
      reason: 'faster model',
      requestedAt: '2023-11-14T22:13:20.000Z',
    });
    expect(listed[0]?.requestedBy).toEqual(AGENT.actor);

    // The same request again does not pile up a second copy.
    const again = await c.set('testApiKey', secret, AGENT);
    expect(again).toMatchObject({ status: 'pending', id: out.id });

    await expect(c.approve(out.id, AGENT)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_FORBIDDEN });
    expect(c.has('testApiKey')).toBe(false);

    await expect(c.approve(out.id, OPERATOR)).resolves.toMatchObject({ status: 'applied', key: 'testApiKey', value: 'sk-p****' });
    expect(c.get('testApiKey')).toBe(secret);
    expect(c.pending()).toEqual([]);
    await expect(c.approve(out.id, OPERATOR)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_NOT_FOUND });
    expect(f.log.text()).not.toContain(secret);
  });

  it('lets a channel admin approve and reject, but not a non-admin or an untrusted request', async () => {
    const { c } = await withAdmin();
    const p1 = await c.set('sessionScope', 'per-peer', AGENT);
    const p2 = await c.set('sessionScope', 'main', AGENT);
    if (p1.status !== 'pending' || p2.status !== 'pending') throw new Error('expected pending');

    const bob: ConfigOrigin = { kind: 'admin', actor: { kind: 'user', channel: 'chatA', userId: '222' } };
    await expect(c.approve(p1.id, bob)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_FORBIDDEN });
    await expect(c.approve(p1.id, { kind: 'admin' })).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_FORBIDDEN });
    const tainted: ConfigOrigin = { kind: 'admin', actor: { kind: 'agent', channel: 'email', untrusted: true, onBehalfOf: alice } };
    await expect(c.approve(p1.id, tainted)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_FORBIDDEN });
    await expect(c.reject(p1.id, AGENT)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_FORBIDDEN });

    await expect(c.approve(p1.id, ADMIN_ALICE)).resolves.toMatchObject({ status: 'applied' });
    expect(c.get('sessionScope')).toBe('per-peer');
    // The agent working for an admin relays the admin's own approval.
    const viaAgent: ConfigOrigin = { kind: 'admin', actor: { kind: 'agent', channel: 'chatA', onBehalfOf: alice } };
    await expect(c.reject(p2.id, viaAgent)).resolves.toMatchObject({ id: p2.id, key: 'sessionScope' });
    expect(c.pending()).toEqual([]);
    expect(c.get('sessionScope')).toBe('per-peer');
    await expect(c.reject('cfg_nope', OPERATOR)).rejects.toMatchObject({ code: ErrorCodes.APPROVAL_NOT_FOUND });
  });

  it('refuses an agent (or an admin through the agent) on a LOCKED key with a clear message, and logs it', async () => {
    const { f, c } = await withAdmin();
    const before = readFileSync(f.file, 'utf8');
    for (const origin of [AGENT, ADMIN_ALICE]) {
      await expect(c.set('safeMode', true, origin)).rejects.toMatchObject({
        code: ErrorCodes.CONFIG_LOCKED,
        message: 'safeMode is LOCKED: the agent cannot change it; an operator can with `keel config set`',
      });
    }
    await expect(c.set('testToken', 'tok-0123456789abc', AGENT)).rejects.toMatchObject({ code: ErrorCodes.CONFIG_LOCKED });
    expect(readFileSync(f.file, 'utf8')).toBe(before);
    expect(c.get('safeMode')).toBe(false);
    expect(c.pending()).toEqual([]);
    expect(f.log.lines.filter((l) => l.level === 'warn' && l.text.includes('LOCKED'))).toHaveLength(3);
    expect(f.log.text()).not.toContain('tok-0123456789abc');
    // The operator may change LOCKED keys.
    await expect(c.set('safeMode', true, OPERATOR)).resolves.toMatchObject({ status: 'applied' });
  });

  it('validates before the policy: a bad value from the agent is an invalid value, not a pending change', async () => {
    const c = await fixture().load();
    await expect(c.set('sessionScope', 'everyone', AGENT)).rejects.toMatchObject({ code: ErrorCodes.CONFIG_INVALID_VALUE });
    expect(c.pending()).toEqual([]);
  });

  it('keeps pending changes across restarts, in a 0600 file', async () => {
    const f = fixture();
    const c = await f.load();
    const out = await c.set('testApiKey', 'sk-persisted-0123456789', AGENT);
    if (out.status !== 'pending') throw new Error('expected pending');
    const path = join(f.home, 'config-pending.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(c.pendingPath).toBe(path);

    const restarted = await f.load();
    expect(restarted.pending().map((p) => p.id)).toEqual([out.id]);
    await restarted.approve(out.id, OPERATOR);
    expect(restarted.get('testApiKey')).toBe('sk-persisted-0123456789');
    // The first process sees the decision on its next reload.
    await c.reload();
    expect(c.pending()).toEqual([]);
    expect(c.get('testApiKey')).toBe('sk-persisted-0123456789');
  });

  it('keeps every request the agent makes at once, and what another process decides meanwhile', async () => {
    const { f, c } = await withAdmin();
    // A second store on the same home: `keel config approve` in another process.
    const other = await f.load();
    const asked = await Promise.all([
      c.set('testApiKey', 'sk-one-0123456789', AGENT),
      c.set('sessionScope', 'per-peer', AGENT),
      c.set('sessionScope', 'main', AGENT),
      other.set('testApiKey', 'sk-two-0123456789', AGENT),
    ]);
    const ids = asked.map((a) => (a.status === 'pending' ? a.id : 'not pending'));
    const stored = async () => (await f.load()).pending().map((p) => p.id);
    expect((await stored()).sort()).toEqual([...ids].sort());

    // Approved and rejected in one process while the other adds requests: nothing comes back, nothing is lost.
    const more = await Promise.all([
      other.approve(ids[0]!, OPERATOR),
      c.set('testApiKey', 'sk-three-0123456789', AGENT),
      other.reject(ids[2]!, OPERATOR),
      c.set('sessionScope', 'per-channel-peer', AGENT),
    ]);
    const added = [more[1], more[3]].map((a) => (a.status === 'pending' ? a.id : 'not pending'));
    expect((await stored()).sort()).toEqual([ids[1]!, ids[3]!, ...added].sort());
    expect((await f.load()).get('testApiKey')).toBe('sk-one-0123456789');

    // An approval here and a rejection there of the same request: one of them decides it, the other is told so.
    const both = await Promise.allSettled([c.approve(added[0]!, OPERATOR), other.reject(added[0]!, OPERATOR)]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(both.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: ErrorCodes.APPROVAL_NOT_FOUND } });
    const applied = both[0]!.status === 'fulfilled';
    expect((await f.load()).get('testApiKey')).toBe(applied ? 'sk-three-0123456789' : 'sk-one-0123456789');
    expect(await stored()).not.toContain(added[0]);
  });

  it('keeps both of two changes written to the file at once from two processes', async () => {
    const f = fixture();
    const [a, b] = [await f.load(), await f.load()];
    for (let i = 0; i < 8; i++) {
      await Promise.all([a.set('testPort', 4000 + i, OPERATOR), b.set('testEnabled', i % 2 === 0, OPERATOR)]);
      const after = await f.load();
      expect([after.get('testPort'), after.get('testEnabled')]).toEqual([4000 + i, i % 2 === 0]);
    }
  });

  it('keeps a request whose value no longer passes its schema when someone approves it', async () => {
    const f = fixture();
    const { writeFileSync } = await import('node:fs');
    const bad = { id: 'cfg_1_abcdef', key: 'sessionScope', value: 'everyone', requestedAt: '2023-11-14T22:13:20.000Z' };
    writeFileSync(join(f.home, 'config-pending.json'), JSON.stringify({ changes: [bad] }));
    const c = await f.load();
    await expect(c.approve(bad.id, OPERATOR)).rejects.toMatchObject({
      code: ErrorCodes.CONFIG_INVALID_VALUE,
      message: expect.stringContaining('the pending change cfg_1_abcdef stays until rejected'),
    });
    expect((await f.load()).pending().map((p) => p.id)).toEqual([bad.id]);
    expect(c.get('sessionScope')).not.toBe('everyone');
    await expect(c.reject(bad.id, OPERATOR)).resolves.toMatchObject({ id: bad.id });
    expect((await f.load()).pending()).toEqual([]);
  });

  it('moves a corrupt pending file aside instead of failing to start', async () => {
    const f = fixture();
    const { writeFileSync, readdirSync } = await import('node:fs');
    writeFileSync(join(f.home, 'config-pending.json'), '{ not json');
    const c = await f.load();
    expect(c.pending()).toEqual([]);
    expect(readdirSync(f.home).some((n) => n.startsWith('config-pending.json.corrupt-'))).toBe(true);
    expect(existsSync(join(f.home, 'config-pending.json'))).toBe(false);
  });
});
