/**
 * schedule_task, list_scheduled_tasks, cancel_scheduled_task against a real kernel: validation, firing into the
 * queue, cron, persistence across a restart, only the agent's process fires, cancel and ownership.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cron } from 'croner';
import { afterEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { harness, type Harness } from './harness.js';

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});
async function start(opts: Parameters<typeof harness>[0] = {}): Promise<Harness> {
  const h = await harness(opts);
  open.push(h);
  return h;
}
const json = (r: { result: string }) => JSON.parse(r.result) as Record<string, any>;
const user = (userId: string): Actor => ({ kind: 'user', channel: 'chatA', userId });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('schedule_task validation', () => {
  it('refuses missing, doubled, past and malformed times with a clear message and stores nothing', async () => {
    const h = await start();
    const run = (args: Record<string, unknown>) => h.kernel.execute('schedule_task', { task: 'say hi', ...args }, h.kernel.operator);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /Say when: give exactly one of at \(ISO 8601 time\), delayMs/],
      [{ at: new Date(Date.now() + 60_000).toISOString(), cron: '* * * * *' }, /exactly one of at, delayMs or cron; got at and cron/],
      [{ delayMs: 10, at: '2099-01-01T00:00:00Z' }, /got at and delayMs/],
      [{ at: '2001-01-01T00:00:00Z' }, /in the past/],
      [{ at: 'next tuesday' }, /not a valid ISO 8601 time/],
      [{ cron: 'every minute' }, /not a valid cron expression/],
      [{ cron: '* * * * * * *' }, /not a valid cron expression/],
      [{ cron: '61 * * * *' }, /not a valid cron expression/],
      [{ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, /not a valid IANA timezone/],
      [{ delayMs: 1000, timezone: 'Europe/Berlin' }, /timezone applies only to cron/],
    ];
    for (const [args, why] of cases) {
      const r = await run(args);
      expect(r.success, JSON.stringify(args)).toBe(false);
      expect(r.result, JSON.stringify(args)).toMatch(why);
    }
    // Schema: a negative delay and an unknown parameter are refused before the skill runs.
    expect((await run({ delayMs: -5 })).success).toBe(false);
    expect((await run({ delayMs: 5, when: 'now' })).success).toBe(false);
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).count).toBe(0);
  });
});

describe('firing', () => {
  it('queues a one-shot as source scheduler with the actor who scheduled it and the schedule id', async () => {
    const h = await start({ overrides: { adminUsers: { chatA: ['42'] } } });
    const admin = user('42');
    const agentForAdmin: Actor = { kind: 'agent', channel: 'chatA', onBehalfOf: admin };
    const r = await h.kernel.execute('schedule_task', { task: 'water the plants', priority: 7, delayMs: 50 }, agentForAdmin);
    expect(r.success, r.result).toBe(true);
    const id = json(r).scheduled.id as string;
    const action = await waitFor(() => h.actions().find((a) => a.metadata.scheduleId === id), 'the scheduled action');
    expect(action.source).toBe('scheduler');
    expect(action.task).toBe('water the plants');
    expect(action.priority).toBe(7);
    // The person behind the call (so admin rights carry), not the agent that relayed it.
    expect(action.metadata.actor).toEqual(admin);
    await waitFor(
      async () => json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).count === 0,
      'the one-shot to be gone',
    );
    expect(h.actions().filter((a) => a.metadata.scheduleId === id)).toHaveLength(1);
  });

  it('keeps untrusted work untrusted when it is scheduled', async () => {
    const h = await start();
    const tainted: Actor = { kind: 'agent', channel: 'email', untrusted: true, onBehalfOf: { kind: 'operator', channel: 'cli' } };
    const r = await h.kernel.execute('schedule_task', { task: 'from a mail', delayMs: 0 }, tainted);
    const id = json(r).scheduled.id as string;
    const action = await waitFor(() => h.actions().find((a) => a.metadata.scheduleId === id), 'the scheduled action');
    expect(action.metadata.actor).toEqual({ kind: 'operator', channel: 'cli', untrusted: true });
  });

  it('computes the next cron run with croner and fires it repeatedly', async () => {
    const h = await start();
    const before = new Date();
    const r = await h.kernel.execute('schedule_task', { task: 'tick', cron: '*/1 * * * * *' }, h.kernel.operator);
    expect(r.success, r.result).toBe(true);
    const s = json(r).scheduled;
    expect(s.kind).toBe('cron');
    const expected = new Cron('*/1 * * * * *', { paused: true }).nextRun(before)!;
    expect(Date.parse(s.nextRunAt)).toBeGreaterThanOrEqual(expected.getTime());
    const weekly = json(
      await h.kernel.execute('schedule_task', { task: 'weekly', cron: '0 9 * * 1', timezone: 'Europe/Berlin' }, h.kernel.operator),
    ).scheduled;
    expect(weekly.nextRunAt).toBe(new Cron('0 9 * * 1', { paused: true, timezone: 'Europe/Berlin' }).nextRun()!.toISOString());
    await waitFor(() => h.actions().filter((a) => a.metadata.scheduleId === s.id).length >= 2, 'two runs of the cron schedule');
    const listed = json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).schedules.find(
      (x: { id: string }) => x.id === s.id,
    );
    expect(listed.runs).toBeGreaterThanOrEqual(2);
    expect(Date.parse(listed.lastRunAt)).toBeLessThanOrEqual(Date.parse(listed.nextRunAt));
  });
});

describe('persistence', () => {
  it('survives a restart: a process without the agent never fires; the agent process fires a missed one-shot once and resumes cron', async () => {
    // First process: like `keel gateway` alone (no runner), it stores but does not fire.
    const h = await start({ runAgent: false });
    const once = json(await h.kernel.execute('schedule_task', { task: 'missed while down', delayMs: 100 }, h.kernel.operator)).scheduled;
    const cron = json(await h.kernel.execute('schedule_task', { task: 'new year', cron: '0 0 1 1 *' }, h.kernel.operator)).scheduled;
    await waitFor(() => Date.now() > Date.parse(once.nextRunAt) + 1500, 'the one-shot to be overdue for over a poll');
    expect(h.actions().filter((a) => a.metadata.scheduleId === once.id)).toHaveLength(0);
    await h.stop();

    const file = join(h.home, 'schedules.json');
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored.schedules.map((s: { id: string }) => s.id).sort()).toEqual([once.id, cron.id].sort());
    // A recurring run that was missed while Keel was down: it must resume, not fire.
    const missed = stored.schedules.find((s: { id: string }) => s.id === cron.id);
    missed.nextRunAt = '2001-01-01T00:00:00.000Z';
    writeFileSync(file, JSON.stringify(stored));

    await h.start({ runAgent: true });
    const fired = await waitFor(() => h.actions().find((a) => a.metadata.scheduleId === once.id), 'the missed one-shot to fire at start');
    expect(fired.task).toBe('missed while down');
    const list = await waitFor(async () => {
      const l = json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator));
      return l.count === 1 && Date.parse(l.schedules[0].nextRunAt) > Date.now() ? l : undefined;
    }, 'the cron schedule to resume at its next run');
    expect(list.schedules[0].id).toBe(cron.id);
    expect(list.schedules[0].nextRunAt).toBe(new Cron('0 0 1 1 *', { paused: true }).nextRun()!.toISOString());
    expect(h.actions().filter((a) => a.metadata.scheduleId === cron.id)).toHaveLength(0);

    // And a restart after that fires nothing again.
    await h.stop();
    await h.start({ runAgent: true });
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).schedules.map((s: { id: string }) => s.id)).toEqual([
      cron.id,
    ]);
    expect(h.actions().filter((a) => a.metadata.scheduleId === once.id)).toHaveLength(1);
  });

  it('fires a schedule that another process added to schedules.json', async () => {
    const h = await start();
    const other = await harness({ home: h.home, runAgent: false });
    try {
      const s = json(
        await other.kernel.execute('schedule_task', { task: 'from the gateway', delayMs: 0 }, other.kernel.operator),
      ).scheduled;
      await waitFor(() => h.actions().find((a) => a.metadata.scheduleId === s.id), 'the agent process to fire it');
    } finally {
      await other.stop();
    }
  });
});

describe('list and cancel', () => {
  it('cancels by id, and others see and cancel only their own', async () => {
    const h = await start({ runAgent: false });
    const mine = json(await h.kernel.execute('schedule_task', { task: 'operator task', delayMs: 3_600_000 }, h.kernel.operator)).scheduled;
    const theirs = json(await h.kernel.execute('schedule_task', { task: 'user task', delayMs: 3_600_000 }, user('7'))).scheduled;
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).count).toBe(2);
    const seen = json(await h.kernel.execute('list_scheduled_tasks', {}, user('7')));
    expect(seen.schedules.map((s: { id: string }) => s.id)).toEqual([theirs.id]);
    const refused = await h.kernel.execute('cancel_scheduled_task', { id: mine.id }, user('7'));
    expect(refused.success).toBe(false);
    expect(refused.result).toMatch(/belongs to someone else/);
    const ok = await h.kernel.execute('cancel_scheduled_task', { id: theirs.id }, user('7'));
    expect(ok.success, ok.result).toBe(true);
    const again = await h.kernel.execute('cancel_scheduled_task', { id: theirs.id }, h.kernel.operator);
    expect(again.success).toBe(false);
    expect(again.result).toMatch(/No scheduled task has id/);
    expect((await h.kernel.execute('cancel_scheduled_task', { id: mine.id }, h.kernel.operator)).success).toBe(true);
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, h.kernel.operator)).count).toBe(0);
    expect(JSON.parse(readFileSync(join(h.home, 'schedules.json'), 'utf8')).schedules).toEqual([]);
  });

  it('admins, as the kernel decides them (kernel:policy, identityLinks included), see and cancel every schedule', async () => {
    const h = await start({ runAgent: false, overrides: { adminUsers: { chatA: ['42'] }, identityLinks: { 'chatD:U9': 'chatA:42' } } });
    const theirs = json(await h.kernel.execute('schedule_task', { task: 'user task', delayMs: 3_600_000 }, user('7'))).scheduled;
    const linked: Actor = { kind: 'user', channel: 'chatD', userId: 'U9' };
    const viaAgent: Actor = { kind: 'agent', channel: 'autonomy', onBehalfOf: linked };
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, viaAgent)).schedules.map((s: { id: string }) => s.id)).toEqual([
      theirs.id,
    ]);
    // The same id on a channel nobody linked is nobody's admin.
    expect(json(await h.kernel.execute('list_scheduled_tasks', {}, { kind: 'user', channel: 'chatC', userId: 'U9' })).count).toBe(0);
    const ok = await h.kernel.execute('cancel_scheduled_task', { id: theirs.id }, linked);
    expect(ok.success, ok.result).toBe(true);
  });

  it('a cancelled schedule never fires', async () => {
    const h = await start();
    const s = json(await h.kernel.execute('schedule_task', { task: 'never', delayMs: 800 }, h.kernel.operator)).scheduled;
    expect((await h.kernel.execute('cancel_scheduled_task', { id: s.id }, h.kernel.operator)).success).toBe(true);
    // A later schedule fires: by then the cancelled one would have fired too.
    const later = json(await h.kernel.execute('schedule_task', { task: 'marker', delayMs: 1200 }, h.kernel.operator)).scheduled;
    await waitFor(() => h.actions().find((a) => a.metadata.scheduleId === later.id), 'the marker schedule');
    expect(h.actions().filter((a) => a.metadata.scheduleId === s.id)).toHaveLength(0);
    await sleep(0);
  });
});
