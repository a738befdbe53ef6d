/**
 * Approvals in the chat on Discord (docs/approvals.md): a command waiting for confirmation is sent to the channel
 * it came from with Approve / Refuse button components; a tap (INTERACTION_CREATE, MESSAGE_COMPONENT) is
 * acknowledged with a deferred update, decided by an admin of chatC only, once; the message is edited to the outcome
 * with its buttons removed, and anyone else gets an ephemeral answer. The real kernel, agent loop, system plugin and
 * discord.js against the loopback Discord; the model is the scripted fake provider.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalsCapability } from '../../../sdk/approvals.js';
import type { DcMessage } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Button = { type: number; style: number; label: string; custom_id: string };
const buttonsOf = (m: DcMessage) =>
  ((m.components as Array<{ type: number; components: Button[] }> | undefined) ?? [])[0]?.components ?? [];
const approvals = () => h!.kernel.registry.use<ApprovalsCapability>('approvals')!;
const stdoutMessages = () => h!.dc.sent.filter((m) => m.content.includes('--- stdout ---'));
const current = (m: DcMessage) => h!.dc.sent.find((x) => x.id === m.id)!;
const followup = (id: string) => waitFor(() => h!.dc.interactionFollowups.find((f) => f.id === id), `the answer to tap ${id}`);

async function boot() {
  h = await bootChatC({ plugins: ['system'], config: { commandIsolation: 'off' } });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

/** The agent calls run_command on a message of `userId`; returns the approval message the channel received. */
async function commandWaiting(o: { dm?: boolean } = {}): Promise<DcMessage> {
  h!.model.replies.push(
    { toolCalls: [{ name: 'run_command', arguments: { command: 'echo', args: ['tap', 'ran'] } }] },
    { text: 'It waits for an admin.' },
  );
  h!.dc.pushMessage('run echo tap ran', { userId: ADMIN, ...(o.dm ? { dm: true } : {}) });
  const msg = await waitFor(() => h!.dc.sent.find((m) => JSON.stringify(m.components ?? '').includes('apr:y:')), 'the approval request');
  expect(msg.content).toMatch(/run the command: echo tap ran \(in .+\)\nRequested by user \d+ on chatC; expires /);
  return msg;
}

describe('chatC approvals', () => {
  it("an admin's tap approves the waiting command: it runs once, the message shows the outcome without buttons; a stranger's tap changes nothing", async () => {
    await boot();
    const msg = await commandWaiting();
    expect(msg.channel_id).toBe(h!.dc.channelId);
    const [approve, refuse] = buttonsOf(msg);
    expect(msg.components).toHaveLength(1);
    expect([approve!.label, refuse!.label]).toEqual(['Approve', 'Refuse']);
    // Green and red buttons (ButtonStyle Success, Danger) whose custom id carries the request id.
    expect([approve!.type, approve!.style, refuse!.style]).toEqual([2, 3, 4]);
    const id = approve!.custom_id.slice('apr:y:'.length);
    expect(refuse!.custom_id).toBe(`apr:n:${id}`);
    expect(approvals().get(id)?.state).toBe('pending');

    // USER is no admin of chatC: an ephemeral answer only they see, nothing runs, the buttons stay.
    const stranger = h!.dc.pushButton(msg, approve!.custom_id, { userId: USER });
    expect(await followup(stranger.id)).toEqual({ id: stranger.id, content: 'Only an admin can approve or refuse this.', flags: 64 });
    expect(h!.dc.interactionReplies.get(stranger.id)).toEqual({ type: 6 });
    expect(approvals().get(id)?.state).toBe('pending');
    expect(stdoutMessages()).toHaveLength(0);
    expect(buttonsOf(current(msg))).toHaveLength(2);
    expect(h!.dc.interactionEdits.has(stranger.id)).toBe(false);

    const admin = h!.dc.pushButton(msg, approve!.custom_id, { userId: ADMIN });
    const result = await waitFor(() => stdoutMessages()[0], 'the command result in the channel');
    expect(result.content).toContain(`Approved by user ${ADMIN} on chatC`);
    expect(result.content).toMatch(/--- stdout ---\ntap ran/);
    await waitFor(() => h!.dc.interactionEdits.get(admin.id), 'the request message edited');
    expect(current(msg).content).toBe(
      `Approval ${id}: run the command: echo tap ran (in ${approvals().get(id)!.ask.split('(in ')[1]}\nApproved by user ${ADMIN} on chatC.`,
    );
    expect(current(msg).components).toBeUndefined();
    expect(h!.dc.interactionReplies.get(admin.id)).toEqual({ type: 6 });
    expect(h!.dc.callsOf('PATCH /webhooks/:id/:token/messages/@original').at(-1)!.auth).toBeUndefined();
    expect(approvals().get(id)).toMatchObject({ state: 'approved', decidedBy: `user ${ADMIN} on chatC` });
    expect(h!.dc.interactionFollowups.filter((f) => f.id === admin.id)).toHaveLength(0);

    // A later tap on Refuse (a client that still shows the buttons) is told what happened and changes nothing.
    const late = h!.dc.pushButton(msg, refuse!.custom_id, { userId: ADMIN });
    expect((await followup(late.id)).content).toMatch(new RegExp(`^Already approved by user ${ADMIN} on chatC`));

    // The admin's tap dispatched again (a replay after a resume): recorded once, neither acknowledged nor run again.
    h!.dc.redeliverCommand(admin.id);
    const after = h!.dc.pushButton(msg, refuse!.custom_id, { userId: USER });
    await followup(after.id);
    expect(h!.dc.callsOf('POST /interactions/:id/:token/callback').filter((c) => c.path.includes(admin.id))).toHaveLength(1);
    expect(stdoutMessages()).toHaveLength(1);
  });

  it('a refusal in a direct message: the tap of a user (no member) decides, the command does not run, the chat is told', async () => {
    await boot();
    const msg = await commandWaiting({ dm: true });
    expect(msg.channel_id).toBe(`5${ADMIN.slice(1)}`);
    const [, refuse] = buttonsOf(msg);
    const tap = h!.dc.pushButton(msg, refuse!.custom_id, { userId: ADMIN });
    const told = await waitFor(() => h!.dc.sent.find((m) => m.content.startsWith(`Refused by user ${ADMIN} on chatC`)), 'the refusal');
    expect(told.content).toContain('It was not done.');
    await waitFor(() => current(msg).components === undefined, 'the buttons removed');
    expect(current(msg).content).toMatch(new RegExp(`\\nRefused by user ${ADMIN} on chatC\\.$`));
    expect(h!.dc.interactionFollowups.filter((f) => f.id === tap.id)).toHaveLength(0);
    expect(stdoutMessages()).toHaveLength(0);
    expect(
      await h!.kernel.execute(
        'approve_command',
        { id: refuse!.custom_id.slice(6), decision: 'approve' },
        { kind: 'operator', channel: 'cli' },
      ),
    ).toMatchObject({ success: false });
  });

  it('a restart keeps the pending request: the tap after it runs the command once', async () => {
    await boot();
    const msg = await commandWaiting();
    const [approve] = buttonsOf(msg);
    await h!.restart();
    await waitFor(() => h!.channel().status().connected, 'connected again');
    const id = approve!.custom_id.slice(6);
    expect(approvals().get(id)?.state).toBe('pending');
    const tap = h!.dc.pushButton(msg, approve!.custom_id, { userId: ADMIN });
    await waitFor(() => stdoutMessages()[0], 'the command result');
    await waitFor(() => h!.dc.interactionEdits.get(tap.id), 'the request message edited');
    expect(current(msg).components).toBeUndefined();
    expect(approvals().get(id)?.state).toBe('approved');
  });

  it('the loopback Discord refuses a button without a custom id and a label longer than 80, as Discord does', async () => {
    await boot();
    const api = `${h!.dc.apiUrl}/v10/channels/${h!.dc.channelId}/messages`;
    const post = (components: unknown) =>
      fetch(api, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bot ${h!.dc.token}` },
        body: JSON.stringify({ content: 'x', components }),
      });
    for (const b of [
      { type: 2, style: 1, label: 'no id' },
      { type: 2, style: 1, label: 'x'.repeat(81), custom_id: 'a' },
    ]) {
      const r = await post([{ type: 1, components: [b] }]);
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ code: 50035 });
    }
  });
});
