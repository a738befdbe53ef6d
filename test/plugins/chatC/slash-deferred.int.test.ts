/**
 * Slash commands are acknowledged at once with a deferred response and answered by editing it, so an answer that
 * is slow (here: the command waits in its channel behind a message whose attachment download the loopback Discord
 * holds) still meets Discord's 3-second acknowledgement window.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  if (h) h.dc.cdnGate = undefined;
  await h?.close();
  h = undefined;
});

describe('chatC deferred slash command answers', () => {
  it('a slow command gets the deferred acknowledgement first and its answer by an edit of @original; a replay is not answered twice', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    let release = () => undefined as void;
    h.dc.cdnGate = new Promise<void>((r) => {
      release = r;
    });
    h.dc.pushMessage('look', { userId: USER, attachment: { filename: 'big.bin', data: Buffer.from('BYTES') } });
    await waitFor(() => h!.dc.cdnRequests.length === 1, 'the attachment download started');
    const { id, token } = h.dc.pushCommand('status', { userId: USER });

    // Acknowledged while the channel is still busy with the download: Discord's window is met.
    const ack = await waitFor(() => h!.dc.interactionReplies.get(id), 'the deferred acknowledgement');
    expect(ack).toEqual({ type: 5 });
    expect(h.dc.interactionEdits.has(id)).toBe(false);
    const callback = h.dc.callsOf('POST /interactions/:id/:token/callback')[0]!;
    expect(callback.path).toBe(`/interactions/${id}/${token}/callback`);
    expect(callback.auth).toBeUndefined();

    release();
    const edit = await waitFor(() => h!.dc.interactionEdits.get(id), 'the answer');
    expect(edit.content).toMatch(/^Discord: connected as keel-test, 1 server\(s\)\.\nQueue: 1 pending/);
    expect(edit.allowed_mentions).toEqual({ parse: [] });
    const patch = h.dc.callsOf('PATCH /webhooks/:id/:token/messages/@original')[0]!;
    expect(patch.path).toBe(`/webhooks/${h.dc.applicationId}/${token}/messages/@original`);
    expect(h.dc.interactionLog.filter((e) => e.id === id).map((e) => e.kind)).toEqual(['callback', 'edit']);
    // The message ahead of it was handled first (per-channel order kept).
    expect(h.actions().map((a) => a.task)).toEqual([expect.stringMatching(/^look\n\[attachment: big\.bin/)]);

    // The same interaction dispatched again (a replay): recognised by the ingress, neither acknowledged nor answered again.
    h.dc.redeliverCommand(id);
    h.dc.pushCommand('help', { userId: USER });
    await waitFor(() => h!.dc.interactionEdits.size === 2, 'the next command answered');
    expect(h.dc.interactionLog.filter((e) => e.id === id)).toHaveLength(2);
    expect(h.dc.callsOf('POST /interactions/:id/:token/callback').filter((c) => c.path.includes(id))).toHaveLength(1);
  });

  it('a command acknowledged before a stop is answered after the restart (the second acknowledgement is refused and counts as done)', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    let release = () => undefined as void;
    h.dc.cdnGate = new Promise<void>((r) => {
      release = r;
    });
    h.dc.pushMessage('first', { userId: USER, attachment: { filename: 'a.bin', data: Buffer.from('A') } });
    await waitFor(() => h!.dc.cdnRequests.length === 1, 'the attachment download started');
    const { id } = h.dc.pushCommand('status', { userId: USER });
    await waitFor(() => h!.dc.interactionReplies.get(id), 'the deferred acknowledgement');
    // Stopped while the command still waits behind the download: both stay recorded for the next start.
    await h.restart();
    h.dc.cdnGate = undefined;
    release();
    const edit = await waitFor(() => h!.dc.interactionEdits.get(id), 'the answer after the restart', 20_000);
    // Recovered entries may be handled before the new session is READY: the status then says so.
    expect(edit.content).toMatch(/^Discord: (connecting|connected) as keel-test/);
    const acks = h.dc.callsOf('POST /interactions/:id/:token/callback').filter((c) => c.path.includes(id));
    expect(acks).toHaveLength(2);
    expect(h.dc.interactionLog.filter((e) => e.id === id).map((e) => e.kind)).toEqual(['callback', 'edit']);
    expect(h.actions().map((a) => a.task)).toEqual([expect.stringMatching(/^first\n\[attachment: a\.bin/)]);
  });

  it('the fake refuses an edit for an unknown token and a second acknowledgement, as Discord does', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const { id, token } = h.dc.pushCommand('help', { userId: USER });
    await waitFor(() => h!.dc.interactionEdits.get(id), 'the answer');
    const api = `${h.dc.apiUrl}/v10`;
    const patch = await fetch(`${api}/webhooks/${h.dc.applicationId}/itok-unknown/messages/@original`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'x' }),
    });
    expect(patch.status).toBe(404);
    expect(await patch.json()).toMatchObject({ code: 10015 });
    const again = await fetch(`${api}/interactions/${id}/${token}/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 5 }),
    });
    expect(await again.json()).toMatchObject({ code: 40060 });
  });
});
