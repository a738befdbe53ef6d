/**
 * The approvals service on its own (sdk/approvals.ts): expiry on an injected clock (told in the chat, the waiting
 * thing dropped, a late tap told), one decision across two processes' worth of services on one KEEL_HOME, the
 * operator deciding anywhere, an admin of another channel not, and a corrupt file running nothing.
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ApprovalService, type ApprovalRequest, parseApprovalButton, approvalButtonData } from '../../sdk/approvals.js';
import type { Actor } from '../../sdk/types.js';
import { rm, tmp } from '../helpers.js';

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rm(h);
});

const QUIET = { debug() {}, info() {}, warn() {}, error() {} };
const ADMIN: Actor = { kind: 'user', channel: 'chatA', userId: '42' };

function service(home: string, clock: { now: number }) {
  const sent: Array<{ id: string; text: string; buttons: boolean; key: string }> = [];
  const events: string[] = [];
  const ran: string[] = [];
  const expired: string[] = [];
  const svc = new ApprovalService({
    home,
    log: QUIET,
    clock: () => clock.now,
    isAdmin: (a) => a.channel === 'chatA' && a.userId === '42',
    executors: {
      command: {
        approve: async (r) => {
          ran.push(r.id);
          await new Promise((res) => setTimeout(res, 20));
          return 'ran';
        },
        refuse: async () => {},
        expire: async (r) => void expired.push(r.id),
      },
    },
    delivery: {
      send: async (r, text, buttons, key) => void sent.push({ id: r.id, text, buttons, key }),
      event: (name, r) => void events.push(`${name}:${r.id}:${r.state}`),
    },
  });
  return { svc, sent, events, ran, expired };
}

const input = (id: string): Omit<ApprovalRequest, 'state' | 'requestedAt' | 'expiresAt'> => ({
  id,
  kind: 'command',
  ask: 'run the command: ls (in /srv)',
  requestedBy: ADMIN,
  origin: { channel: 'chatA', chatId: '42' },
});

describe('approvals service', () => {
  it('an unanswered request expires after approvalExpiryMinutes with a message; the thing waiting is dropped; a late tap is told', async () => {
    const home = tmp('keel-approvals-');
    homes.push(home);
    const clock = { now: Date.parse('2026-01-01T10:00:00Z') };
    const s = service(home, clock);
    await s.svc.request(input('cmd_1'), 10);
    expect(s.sent).toEqual([expect.objectContaining({ id: 'cmd_1', buttons: true, key: 'approval:cmd_1:ask' })]);
    clock.now += 9 * 60_000;
    expect(await s.svc.sweep()).toEqual([]);
    clock.now += 60_000;
    const [gone] = await s.svc.sweep();
    expect(gone?.state).toBe('expired');
    expect(s.expired).toEqual(['cmd_1']);
    expect(s.sent[1]).toMatchObject({
      buttons: false,
      text: 'Expired after 10 minutes, nobody answered: run the command: ls (in /srv). It was not done.',
    });
    expect(s.events).toEqual(['approval.requested:cmd_1:pending', 'approval.decided:cmd_1:expired']);
    // Told once: the next sweep finds nothing.
    expect(await s.svc.sweep()).toEqual([]);
    const late = await s.svc.decide('cmd_1', 'approve', ADMIN);
    expect(late.status).toBe('expired');
    expect(s.ran).toEqual([]);
  });

  it('decides once: two services on one KEEL_HOME (daemon and gateway) tapped at the same moment run it once; state survives a new service', async () => {
    const home = tmp('keel-approvals-');
    homes.push(home);
    const clock = { now: Date.now() };
    const a = service(home, clock);
    const b = service(home, clock);
    await a.svc.request(input('cmd_2'), 10);
    const [x, y] = await Promise.all([a.svc.decide('cmd_2', 'approve', ADMIN), b.svc.decide('cmd_2', 'approve', ADMIN)]);
    expect([x.status, y.status].sort()).toEqual(['already-decided', 'decided']);
    expect([...a.ran, ...b.ran]).toEqual(['cmd_2']);
    const c = service(home, clock);
    expect(c.svc.get('cmd_2')).toMatchObject({ state: 'approved', decidedBy: 'user 42 on chatA', outcome: expect.stringContaining('ran') });
  });

  it('only an admin of the channel it came from, or the operator, decides; everyone else changes nothing', async () => {
    const home = tmp('keel-approvals-');
    homes.push(home);
    const s = service(home, { now: Date.now() });
    await s.svc.request(input('cmd_3'), 10);
    for (const who of [
      { kind: 'user', channel: 'chatA', userId: '7' },
      { kind: 'user', channel: 'chatC', userId: '42' },
      { kind: 'agent', channel: 'chatA' },
      { kind: 'user', channel: 'chatA', userId: '42', untrusted: true },
      { kind: 'agent', channel: 'chatA', onBehalfOf: { kind: 'user', channel: 'chatA', userId: '42' } },
    ] as Actor[]) {
      const out = await s.svc.decide('cmd_3', 'approve', who);
      expect(out.status, JSON.stringify(who)).toBe('not-admin');
    }
    expect(s.ran).toEqual([]);
    const op = await s.svc.decide('cmd_3', 'refuse', { kind: 'operator', channel: 'gateway' });
    expect(op).toMatchObject({ status: 'decided', request: { state: 'refused', decidedBy: expect.stringContaining('operator') } });
    expect(s.ran).toEqual([]);
  });

  it('a corrupt file decides nothing; button data round-trips and anything else is not an approval button', async () => {
    const home = tmp('keel-approvals-');
    homes.push(home);
    writeFileSync(`${home}/approvals.json`, '{not json');
    const s = service(home, { now: Date.now() });
    expect((await s.svc.decide('cmd_4', 'approve', ADMIN)).status).toBe('unknown');
    expect(parseApprovalButton(approvalButtonData('cmd_1_ab', 'refuse'))).toEqual({ id: 'cmd_1_ab', decision: 'refuse' });
    expect(parseApprovalButton('yes')).toBeUndefined();
    expect(parseApprovalButton('apr:y:../../etc')).toBeUndefined();
  });
});
