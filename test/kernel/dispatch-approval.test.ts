/**
 * Dispatch and approvals (docs/approvals.md, "A privileged skill on untrusted work"): only the untrusted-work
 * refusal of a privileged skill (policy rule 3) asks the `approvals` capability; the call is refused either way,
 * the answer is added to the refusal, and a failing capability leaves the plain refusal.
 */
import { Type } from '../../sdk/index.js';
import { describe, expect, it } from 'vitest';
import { createDispatcher } from '../../kernel/registry/dispatch.js';
import type { SkillApprovalInput } from '../../sdk/approvals.js';
import type { Action, Actor, ConfigView } from '../../sdk/types.js';

function setup(requestSkill?: (i: SkillApprovalInput) => Promise<{ sent: boolean; message: string }>) {
  const ran: unknown[] = [];
  const asked: SkillApprovalInput[] = [];
  const values: Record<string, unknown> = { adminUsers: { chatA: ['42'] } };
  const config: ConfigView = { get: <T>(k: string) => values[k] as T, has: (k) => values[k] !== undefined, all: () => ({ ...values }) };
  const manifest = {
    name: 'wipe_disk',
    description: 'wipes',
    category: 'test',
    adminOnly: true,
    parameters: Type.Object({ target: Type.String() }),
  };
  const registry = {
    skills: new Map([['wipe_disk', { plugin: 'trap', manifest, handler: (a: unknown) => void ran.push(a) }]]),
    use: (name: string) =>
      name === 'approvals' && requestSkill
        ? {
            requestSkill: (i: SkillApprovalInput) => {
              asked.push(i);
              return requestSkill(i);
            },
          }
        : undefined,
  };
  const off = { isUsed: () => false };
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const execute = createDispatcher({ registry, hooks: { beforeSkill: off, afterSkill: off }, config, log } as never);
  return { execute, ran, asked };
}

const admin: Actor = { kind: 'user', channel: 'chatA', userId: '42' };
const untrustedAgent: Actor = { kind: 'agent', channel: 'chatA', onBehalfOf: admin, untrusted: true };
const action = { id: 'a1', source: 'chatA', task: 't', metadata: { replyTo: { chatId: '42' } } } as unknown as Action;

describe('dispatch: a privileged skill on untrusted work', () => {
  it('is refused and asks approvals once, with the exact validated arguments, the actor and the action; the answer is told', async () => {
    const s = setup(async () => ({ sent: true, message: 'It was sent for approval (skl_x).' }));
    const r = await s.execute('wipe_disk', { target: '/srv' }, untrustedAgent, { action });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(r.result).toMatch(/wipe_disk is refused: this work was started by untrusted content.* It was sent for approval \(skl_x\)\.$/);
    expect(s.ran).toEqual([]);
    expect(s.asked).toEqual([{ skill: 'wipe_disk', args: { target: '/srv' }, actor: untrustedAgent, action }]);
  });

  it("does not ask for a non-admin's work (refused as admin-only) nor for trusted work (it runs)", async () => {
    const s = setup(async () => ({ sent: true, message: 'sent' }));
    const stranger: Actor = {
      kind: 'agent',
      channel: 'chatA',
      onBehalfOf: { kind: 'user', channel: 'chatA', userId: '77' },
      untrusted: true,
    };
    const r = await s.execute('wipe_disk', { target: '/srv' }, stranger, { action });
    expect(r.result).toMatch(/is admin-only/);
    expect(r.result).not.toContain('sent');
    expect((await s.execute('wipe_disk', { target: '/srv' }, admin, { action })).success).toBe(true);
    expect(s.asked).toEqual([]);
    expect(s.ran).toEqual([{ target: '/srv' }]);
  });

  it('a failing approvals capability, or none, leaves the refusal', async () => {
    const failing = setup(async () => {
      throw new Error('disk full');
    });
    const r = await failing.execute('wipe_disk', { target: '/srv' }, untrustedAgent, { action });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(r.result).toMatch(/No approval request could be sent, so it stays refused\.$/);
    const none = setup();
    const plain = await none.execute('wipe_disk', { target: '/srv' }, untrustedAgent, { action });
    expect(plain.result).toMatch(/only when the local operator asks\.$/);
    expect([...failing.ran, ...none.ran]).toEqual([]);
  });
});
