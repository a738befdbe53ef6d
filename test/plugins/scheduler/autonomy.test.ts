/**
 * Autonomy mode (one review action per interval, never two waiting) and the autonomy cross-channel rule
 * (SPEC Admin permissions 5) against a real kernel.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installFakeAgent } from '../../../testing/index.js';
import type { Actor } from '../../../sdk/index.js';
import { rm, skillEntry, tmp, waitFor, writePlugin } from '../../helpers.js';
import { harness, type Harness } from './harness.js';

const open: Harness[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const d of homes.splice(0)) rm(d);
});
function home(): string {
  const d = tmp('keel-autonomy-');
  homes.push(d);
  return d;
}
async function start(opts: Parameters<typeof harness>[0] = {}): Promise<Harness> {
  const h = await harness(opts);
  open.push(h);
  return h;
}

const AUTONOMY: Actor = { kind: 'agent', channel: 'autonomy' };
/** What the agent loop passes while it works on an autonomy action. */
const AUTONOMY_AT_WORK: Actor = { kind: 'agent', channel: 'autonomy', onBehalfOf: { kind: 'agent', channel: 'autonomy' } };

describe('autonomy', () => {
  it('queues one review per interval that lists the schedule, and never a second while one waits', async () => {
    const h = await start({ overrides: { autonomyEnabled: true, autonomyInterval: 1000 } });
    const s = JSON.parse(
      (await h.kernel.execute('schedule_task', { task: 'the weekly report', cron: '0 9 * * 1' }, h.kernel.operator)).result,
    ).scheduled;
    const review = await waitFor(() => h.actions().find((a) => a.source === 'autonomy'), 'the first autonomy review');
    expect(review.metadata.actor).toEqual(AUTONOMY);
    expect(review.task).toMatch(/review your goals, your memory and your schedule/i);
    expect(review.task).toContain(s.id);
    expect(review.task).toContain('the weekly report');
    // No agent runs it, so it stays pending: the next two intervals skip instead of piling up.
    const skips = () => h.logs.recent().filter((e) => /this review is skipped/.test(e.message)).length;
    await waitFor(() => skips() >= 2, 'two skipped reviews', 15_000);
    expect(h.actions().filter((a) => a.source === 'autonomy')).toHaveLength(1);
  });

  it('queues the next review once the previous one is done', async () => {
    const d = home();
    installFakeAgent(d);
    const h = await start({ home: d, overrides: { autonomyEnabled: true, autonomyInterval: 1000 } });
    await waitFor(
      () => h.kernel.queue.list().completed.filter((a) => a.source === 'autonomy').length >= 2,
      'two completed reviews',
      15_000,
    );
    const ran = readFileSync(join(d, 'fake-agent.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    expect(new Set(ran.map((r) => r.id)).size).toBe(ran.length);
    expect(h.kernel.queue.list().pending.filter((a) => a.source === 'autonomy').length).toBeLessThanOrEqual(1);
  });

  it('stays off by default and in a process without the agent', async () => {
    const off = await start();
    const gw = await start({ runAgent: false, overrides: { autonomyEnabled: true, autonomyInterval: 1000 } });
    // Bounded: well past two intervals, neither queued a review.
    await new Promise((r) => setTimeout(r, 2500));
    expect(off.actions().filter((a) => a.source === 'autonomy')).toHaveLength(0);
    expect(gw.actions().filter((a) => a.source === 'autonomy')).toHaveLength(0);
  });
});

describe('autonomy cross-channel rule', () => {
  function withSenders(d: string): void {
    writePlugin(join(d, 'plugins'), {
      id: 'senders',
      manifest: {
        skills: [
          skillEntry('send_chatA'),
          skillEntry('send_chatB'),
          skillEntry('send_email'),
          skillEntry('chatC_send_photo'),
          skillEntry('send_message', {
            parameters: {
              type: 'object',
              properties: { text: { type: 'string' }, channel: { type: 'string' } },
              required: ['text'],
              additionalProperties: false,
            },
          }),
        ],
      },
      setup: `
        const calls = (globalThis.__senderCalls ??= []);
        for (const n of ['send_chatA', 'send_chatB', 'send_email', 'chatC_send_photo', 'send_message']) ctx.skills.register(n, (a) => { calls.push(n); return 'sent ' + a.text; });
      `,
    });
  }
  const calls = () => ((globalThis as { __senderCalls?: string[] }).__senderCalls ??= []);

  it('refuses autonomy sends outside autonomyAllowedChannels, exempts send_email, and lets admins and normal work through', async () => {
    const d = home();
    withSenders(d);
    const h = await start({ home: d, overrides: { autonomyAllowedChannels: ['chatB'], adminUsers: { chatA: ['1'] } } });
    calls().length = 0;
    const run = (skill: string, actor: Actor, extra: Record<string, unknown> = {}) =>
      h.kernel.execute(skill, { text: 'hi', ...extra }, actor);

    for (const actor of [AUTONOMY, AUTONOMY_AT_WORK]) {
      const r = await run('send_chatA', actor);
      expect(r.success).toBe(false);
      expect(r.result).toMatch(/autonomy mode.*autonomyAllowedChannels.*channel chatA/);
      expect(r.result).toContain(`keel config set autonomyAllowedChannels '["chatB","chatA"]'`);
      expect((await run('chatC_send_photo', actor)).success).toBe(false);
      expect((await run('send_message', actor, { channel: 'chatD' })).success).toBe(false);
      // A send whose channel cannot be told is refused (fail closed).
      expect((await run('send_message', actor)).success).toBe(false);
      expect((await run('send_message', actor, { channel: 'chatB' })).success).toBe(true);
      expect((await run('send_chatB', actor)).success).toBe(true);
      expect((await run('send_email', actor)).success).toBe(true);
    }
    // An admin behind the autonomy work may send anywhere.
    expect(
      (await run('send_chatA', { kind: 'agent', channel: 'autonomy', onBehalfOf: { kind: 'user', channel: 'chatA', userId: '1' } }))
        .success,
    ).toBe(true);
    // A non-admin behind it may not.
    expect(
      (await run('send_chatA', { kind: 'agent', channel: 'autonomy', onBehalfOf: { kind: 'user', channel: 'chatA', userId: '2' } }))
        .success,
    ).toBe(false);
    // Work someone asked for is not autonomy: the rule does not apply.
    expect(
      (await run('send_chatA', { kind: 'agent', channel: 'chatC', onBehalfOf: { kind: 'user', channel: 'chatC', userId: '9' } })).success,
    ).toBe(true);
    expect((await run('send_chatA', h.kernel.operator)).success).toBe(true);
    expect(calls().filter((c) => c === 'send_chatA')).toHaveLength(3);
    expect(calls().filter((c) => c === 'chatC_send_photo')).toHaveLength(0);
  });

  it("applies to a running user channel's own skills (send_<name>, <name>_*) as to SPEC's", async () => {
    const d = home();
    writePlugin(join(d, 'plugins'), {
      id: 'echo-chan',
      manifest: { kind: 'channel', provides: ['channel:echo'], skills: [skillEntry('echo_post'), skillEntry('send_echo')] },
      setup: `
        ctx.provide('channel:echo', { name: 'echo', status: () => ({ enabled: true, connected: true }), send: async () => ({ messageId: '1', messageIds: ['1'] }), reply: async () => ({ messageId: '1', messageIds: ['1'] }) });
        for (const n of ['echo_post', 'send_echo']) ctx.skills.register(n, (a) => 'posted ' + a.text);
      `,
    });
    const h = await start({ home: d, overrides: { autonomyAllowedChannels: ['chatB'] } });
    for (const skill of ['echo_post', 'send_echo']) {
      const r = await h.kernel.execute(skill, { text: 'hi' }, AUTONOMY);
      expect(r.success, skill).toBe(false);
      expect(r.result).toMatch(/autonomy mode.*channel echo/);
    }
    expect((await h.kernel.execute('echo_post', { text: 'hi' }, h.kernel.operator)).success).toBe(true);
  });
});
