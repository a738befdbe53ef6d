/**
 * chatC: edits (MESSAGE_UPDATE) and deletions (MESSAGE_DELETE) of people's messages, through the real discord.js
 * against the loopback Discord: the message as it reads now is what counts (docs/channels.md, "Edits and
 * deletions").
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { editKey } from '../../../sdk/channel-kit/index.js';
import { waitFor } from '../../helpers.js';
import { completed, heldAnswer } from '../channel-harness.js';
import { ADMIN, bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const connected = () => waitFor(() => h!.channel().status().connected, 'connected');
const pending = () => h!.kernel.queue.list().pending;

describe('chatC edits and deletions', () => {
  it('an edit of a waiting message amends it in place (answered at the same message); an unfurl or a repeat changes nothing; a deletion withdraws it', async () => {
    h = await bootChatC({ runAgent: false, config: { chatCAutoReplyEnabled: false } });
    await connected();
    const m = h.dc.pushMessage('deploy to stagng', { userId: USER, mention: true });
    const first = await waitFor(() => pending().find((a) => a.task === 'deploy to stagng'), 'the first action');

    // Discord unfurls a link in it (MESSAGE_UPDATE without an edited_timestamp): nothing was edited.
    h.dc.editMessage(m.id, '', { embedOnly: true });
    const at = Date.now() + 1000;
    const edited = h.dc.editMessage(m.id, 'deploy to staging', { mention: true, at });
    const key = editKey(m.id, String(edited.edited_timestamp));
    await waitFor(() => h!.outcome(key), 'the edit to be handled');
    expect(h.outcome(key)).toBe(`amended:${first.id}`);
    expect(pending()).toHaveLength(1);
    const now = pending()[0]!;
    expect(now.id).toBe(first.id);
    expect(now.task).toBe('deploy to staging');
    expect(now.metadata.edit).toEqual({ of: m.id, at: String(edited.edited_timestamp) });
    expect(now.metadata.replyTo).toMatchObject({ chatId: h.dc.channelId, messageId: m.id });
    expect(h.outcome(editKey(m.id, 'null'))).toBeUndefined();

    // The same edit delivered again: recorded once.
    h.dc.editMessage(m.id, 'deploy to staging', { mention: true, at });
    // A later edit is the marker that everything before it was handled.
    const later = h.dc.editMessage(m.id, 'deploy to staging now', { mention: true, at: at + 1000 });
    await waitFor(() => h!.outcome(editKey(m.id, String(later.edited_timestamp))), 'the later edit');
    expect(pending().map((a) => a.task)).toEqual(['deploy to staging now']);
    expect(h.outcome(editKey(m.id, String(later.edited_timestamp)))).toBe(`amended:${first.id}`);

    h.dc.deleteMessage(m.id);
    await waitFor(() => h!.outcome(`${m.id}:deleted`), 'the deletion');
    expect(h.outcome(`${m.id}:deleted`)).toMatch(/^cancelled:act_\w+ removed$/);
    expect(pending()).toEqual([]);
  });

  it('auto-reply off: a message edited to mention the bot becomes an action; an edit of an old message changes nothing', async () => {
    h = await bootChatC({ runAgent: false, config: { chatCAutoReplyEnabled: false } });
    await connected();
    const chatter = h.dc.pushMessage('what time is it', { userId: ADMIN });
    const old = h.dc.pushMessage('an old remark', { userId: ADMIN, at: Date.now() - 20 * 60_000 });
    const e1 = h.dc.editMessage(chatter.id, 'what time is it?', { mention: true });
    await waitFor(() => h!.outcome(editKey(chatter.id, String(e1.edited_timestamp))), 'the edit');
    expect(h.outcome(editKey(chatter.id, String(e1.edited_timestamp)))).toBe('queued');
    const e2 = h.dc.editMessage(old.id, 'an old remark, now asking you', { mention: true });
    await waitFor(() => h!.outcome(editKey(old.id, String(e2.edited_timestamp))), 'the old edit');
    expect(h.outcome(editKey(old.id, String(e2.edited_timestamp)))).toBe('ignored:edit-too-old');
    const tasks = pending().map((a) => a.task);
    expect(tasks).toEqual(['what time is it?']);
    const a = pending()[0]!;
    expect(a.metadata.edit).toMatchObject({ of: chatter.id });
    expect(a.metadata.actor).toMatchObject({ userId: ADMIN });
    expect(a.metadata.actor).not.toHaveProperty('untrusted');
  });

  it("an edit's files are saved under names of their own: the earlier version's stay as its action has them", async () => {
    h = await bootChatC({ runAgent: false });
    await connected();
    const m = h.dc.pushMessage('look at this', {
      userId: USER,
      attachment: { filename: 'photo.png', data: Buffer.from('PNGDATA'), contentType: 'image/png' },
    });
    const first = await waitFor(() => pending()[0], 'the first action');
    const e = h.dc.editMessage(m.id, 'look at this photo');
    await waitFor(() => h!.outcome(editKey(m.id, String(e.edited_timestamp))), 'the edit');
    const now = pending()[0]!;
    const pathOf = (task: string) => /\[attachment: photo\.png \(photo\) at (\S+)\]/.exec(task)?.[1];
    expect(now.task.startsWith('look at this photo\n')).toBe(true);
    expect(pathOf(now.task)).toBeDefined();
    expect(pathOf(now.task)).not.toBe(pathOf(first.task));
    expect(readFileSync(pathOf(first.task)!, 'utf8')).toBe('PNGDATA');
    expect(readFileSync(pathOf(now.task)!, 'utf8')).toBe('PNGDATA');
  });

  it('an edit while the action runs reaches it: the model reads the new text before its next step, no second action', async () => {
    h = await bootChatC();
    await connected();
    const held = heldAnswer(h.model, 'Summary of the report.', 'Summary of the Q3 report.');
    const m = h.dc.pushMessage('summarise the report', { userId: USER, mention: true });
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'executing'), 'the action to run');
    const e = h.dc.editMessage(m.id, 'summarise the Q3 report', { mention: true });
    const key = editKey(m.id, String(e.edited_timestamp));
    await waitFor(() => h!.outcome(key), 'the edit to be handed');
    expect(h.outcome(key)).toBe(`to-action:${action.id}`);
    held.release();
    const done = await completed(() => h!.kernel, action.id);
    expect(done.result).toBe('Summary of the Q3 report.');
    const told = held.second().filter((x) => x.role === 'user' && x.content.includes('edited the message this task came from'));
    expect(told).toHaveLength(1);
    expect(told[0]!.content).toMatch(
      /<channel_input untrusted="true" from="chatC:\d+">\n\[user\w+ \(\d+\) edited the message this task came from; it now reads:\]\nsummarise the Q3 report\n<\/channel_input>/,
    );
    expect(h.actions()).toHaveLength(1);
    await waitFor(() => h!.dc.sentTo(h!.dc.channelId).find((x) => x.content === 'Summary of the Q3 report.'), 'the reply');
  });
});
