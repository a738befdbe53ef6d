/**
 * Approvals in the chat on Slack (docs/approvals.md): a command waiting for confirmation is sent to the
 * conversation it came from as Block Kit with Approve / Refuse buttons (action_id and value: the approval data); a
 * tap (`block_actions` down Socket Mode) is acknowledged once recorded, decided by an admin of chatD only, once; the
 * message is replaced by the outcome without buttons (chat.update, `blocks: []`), anyone else gets an ephemeral
 * answer. The real kernel, agent loop, system plugin, Bolt / web-api / socket-mode against the loopback Slack.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalsCapability } from '../../../sdk/approvals.js';
import type { SlackPosted } from '../../fakes/slack-server.js';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const STRANGER = 'U0ALICE01';
type Button = { type: string; text: { type: string; text: string }; style?: string; action_id: string; value?: string };
const buttonsOf = (m: SlackPosted) => (m.blocks?.find((b) => b.type === 'actions')?.elements as Button[] | undefined) ?? [];
const approvals = () => h!.kernel.registry.use<ApprovalsCapability>('approvals')!;
const stdoutMessages = () => h!.slack.posted.filter((m) => m.text.includes('--- stdout ---'));
const ephemeralFor = (user: string, n: number) =>
  waitFor(() => h!.slack.ephemerals.filter((e) => e.user === user)[n - 1], `ephemeral answer ${n} to ${user}`);

async function boot() {
  h = await bootChatD({ plugins: ['system'], config: { commandIsolation: 'off' } });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

async function commandWaiting(o: { channel?: string } = {}): Promise<SlackPosted> {
  h!.model.replies.push(
    { toolCalls: [{ name: 'run_command', arguments: { command: 'echo', args: ['tap', 'ran'] } }] },
    { text: 'It waits for an admin.' },
  );
  h!.slack.pushMessage('run echo tap ran', { user: ADMIN, ...(o.channel ? { channel: o.channel, channelType: 'im' as const } : {}) });
  const msg = await waitFor(() => h!.slack.posted.find((m) => JSON.stringify(m.blocks ?? '').includes('apr:y:')), 'the approval request');
  expect(msg.text).toMatch(/run the command: echo tap ran \(in .+\)\nRequested by user U0ADMIN01 on chatD; expires /);
  return msg;
}

describe('chatD approvals', () => {
  it("an admin's tap approves the waiting command: it runs once, the message shows the outcome without buttons; a stranger's tap changes nothing", async () => {
    await boot();
    const msg = await commandWaiting();
    const asSent = structuredClone(msg);
    // The text as a section, then the two buttons; the text stays as the notification's fallback.
    expect(msg.blocks![0]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: msg.text } });
    const [approve, refuse] = buttonsOf(msg);
    expect([approve!.text.text, refuse!.text.text]).toEqual(['Approve', 'Refuse']);
    expect([approve!.style, refuse!.style]).toEqual(['primary', 'danger']);
    const id = approve!.action_id.slice('apr:y:'.length);
    expect([approve!.value, refuse!.action_id, refuse!.value]).toEqual([`apr:y:${id}`, `apr:n:${id}`, `apr:n:${id}`]);
    expect(approvals().get(id)?.state).toBe('pending');

    // STRANGER is no admin of chatD: an ephemeral answer, nothing runs, the buttons stay.
    const stranger = h!.slack.pushBlockAction(asSent, approve!.action_id, { user: STRANGER });
    expect(await ephemeralFor(STRANGER, 1)).toEqual({
      channel: msg.channel,
      user: STRANGER,
      text: 'Only an admin can approve or refuse this.',
    });
    await waitFor(() => h!.slack.acked.includes(stranger.envelopeId), 'the envelope acknowledged');
    expect(approvals().get(id)?.state).toBe('pending');
    expect(stdoutMessages()).toHaveLength(0);
    expect(buttonsOf(msg)).toHaveLength(2);
    expect(msg.edits).toBe(0);

    const admin = h!.slack.pushBlockAction(asSent, approve!.action_id, { user: ADMIN });
    const result = await waitFor(() => stdoutMessages()[0], 'the command result in the conversation');
    expect(result.text).toContain('Approved by user U0ADMIN01 on chatD');
    expect(result.text).toMatch(/--- stdout ---\ntap ran/);
    await waitFor(() => msg.edits === 1, 'the request message updated');
    expect(msg.text).toMatch(
      new RegExp(`^Approval ${id}: run the command: echo tap ran \\(in .+\\)\\nApproved by user U0ADMIN01 on chatD\\.$`),
    );
    expect(msg.blocks).toBeUndefined();
    expect(h!.slack.callsOf('chat.update').at(-1)!.params).toMatchObject({ channel: msg.channel, ts: msg.ts });
    expect(approvals().get(id)).toMatchObject({ state: 'approved', decidedBy: 'user U0ADMIN01 on chatD' });
    expect(h!.slack.ephemerals.filter((e) => e.user === ADMIN)).toHaveLength(0);

    // A later tap on Refuse (a client still showing the buttons): told what happened, nothing changes.
    h!.slack.pushBlockAction(asSent, refuse!.action_id, { user: ADMIN });
    expect((await ephemeralFor(ADMIN, 1)).text).toMatch(/^Already approved by user U0ADMIN01 on chatD/);

    // Slack sends the admin's envelope again (a lost ack): recorded once, not run again.
    h!.slack.redeliver(admin.envelopeId);
    await waitFor(() => h!.slack.acked.filter((x) => x === admin.envelopeId).length === 2, 'the redelivery acknowledged');
    h!.slack.pushBlockAction(asSent, refuse!.action_id, { user: STRANGER });
    await ephemeralFor(STRANGER, 2);
    expect(stdoutMessages()).toHaveLength(1);
    expect(h!.slack.ephemerals.filter((e) => e.user === ADMIN)).toHaveLength(1);
  });

  it('a refusal in a direct message: the command does not run, the conversation is told who refused', async () => {
    await boot();
    const msg = await commandWaiting({ channel: 'D0ADMIN01' });
    const [, refuse] = buttonsOf(msg);
    h!.slack.pushBlockAction(structuredClone(msg), refuse!.action_id, { user: ADMIN });
    const told = await waitFor(() => h!.slack.posted.find((m) => m.text.startsWith('Refused by user U0ADMIN01 on chatD')), 'the refusal');
    expect(told.channel).toBe('D0ADMIN01');
    expect(told.text).toContain('It was not done.');
    await waitFor(() => msg.blocks === undefined, 'the buttons removed');
    expect(msg.text).toMatch(/\nRefused by user U0ADMIN01 on chatD\.$/);
    expect(stdoutMessages()).toHaveLength(0);
  });

  it('the loopback Slack refuses blocks Slack refuses (a label over 75, a repeated action_id)', async () => {
    await boot();
    const post = async (blocks: unknown) =>
      (await (
        await fetch(`${h!.slack.apiUrl}chat.postMessage`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${h!.slack.botToken}` },
          body: JSON.stringify({ channel: 'C0GENERAL1', text: 'x', blocks }),
        })
      ).json()) as { ok: boolean; error?: string };
    const button = (label: string, id: string) => ({ type: 'button', text: { type: 'plain_text', text: label }, action_id: id });
    expect(await post([{ type: 'actions', elements: [button('x'.repeat(76), 'a')] }])).toEqual({ ok: false, error: 'invalid_blocks' });
    expect(await post([{ type: 'actions', elements: [button('a', 'same'), button('b', 'same')] }])).toEqual({
      ok: false,
      error: 'invalid_blocks',
    });
    expect((await post([{ type: 'actions', elements: [button('a', 'one')] }])).ok).toBe(true);
  });
});
