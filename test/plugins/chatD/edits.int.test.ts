/**
 * chatD: edits (`message_changed` with `message.edited`) and deletions (`message_deleted`, or a thread's first
 * message turned into a tombstone) of people's messages, through the real Bolt / Socket Mode client against the
 * loopback Slack: the message as it reads now is what counts (docs/slack.md, "Edits and deletions").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editKey } from '../../../sdk/channel-kit/index.js';
import { waitFor } from '../../helpers.js';
import { completed, heldAnswer } from '../channel-harness.js';
import { ADMIN, bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const C = 'C0GENERAL1';
const USER = 'U0ANN0001';

const outcome = (key: string) => h!.outcome(key);
const recorded = () => h!.recorded();
const pending = () => h!.kernel.queue.list().pending;
const acked = (envelopeId: string, times = 1) =>
  waitFor(() => h!.slack.acked.filter((id) => id === envelopeId).length >= times, `envelope ${envelopeId} acknowledged`);

async function ready(o: Parameters<typeof bootChatD>[0] = {}) {
  h = await bootChatD(o);
  await waitFor(() => h!.channel().status().connected, 'connected');
  return h;
}

describe('chatD edits and deletions', () => {
  it('an edit of a waiting message takes its place (answered in the same thread, acknowledged once recorded); an unfurl or the same edit again changes nothing; a deletion withdraws it', async () => {
    await ready({ runAgent: false, config: { chatDAutoReplyEnabled: false } });
    const bot = `<@${h!.slack.botUserId}>`;
    const root = h!.slack.pushMessage('release notes for 2.4', { user: ADMIN });
    const m = h!.slack.pushMessage(`${bot} deploy to stagng`, { user: USER, threadTs: root.ts });
    const original = `${C}:${m.ts}`;
    const first = await waitFor(() => pending().find((a) => a.task === 'deploy to stagng'), 'the first action');

    // At the moment Slack gets the edit's ack, the edit is already in the ingress store.
    const seenAtAck = new Map<string, boolean>();
    h!.slack.onAck = (id) =>
      seenAtAck.set(
        id,
        recorded().some((k) => k.startsWith(`${original}:edit:`)),
      );
    const e1 = h!.slack.editMessage(C, m.ts, `${bot} deploy to staging`);
    const key1 = editKey(original, e1.editedTs);
    await waitFor(() => outcome(key1), 'the edit to be handled');
    expect(seenAtAck.get(e1.envelopeId)).toBe(true);
    expect(outcome(key1)).toBe(`amended:${first.id}`);
    expect(pending()).toHaveLength(1);
    const now = pending()[0]!;
    expect(now.id).toBe(first.id);
    expect(now.task).toBe('deploy to staging');
    expect(now.metadata.edit).toEqual({ of: original, at: e1.editedTs });
    expect(now.metadata.inbound).toMatchObject({ messageId: key1, userId: USER });
    // The answer goes where the first version's would have: the message's thread, at the message's ts.
    expect(now.metadata.replyTo).toMatchObject({ chatId: C, messageId: m.ts, threadTs: root.ts });
    expect(now.metadata.actor).toMatchObject({ userId: USER, untrusted: true });

    // Slack unfurls a link in it (message_changed without a new `edited`): dropped before it is recorded.
    const before = recorded();
    const unfurl = h!.slack.unfurlMessage(C, m.ts);
    await acked(unfurl.envelopeId);
    // The same edit delivered again: acknowledged, recorded once.
    h!.slack.redeliver(e1.envelopeId);
    await acked(e1.envelopeId, 2);
    expect(recorded()).toEqual(before);
    expect(pending().map((a) => a.id)).toEqual([now.id]);

    // A later edit amends it again.
    const e2 = h!.slack.editMessage(C, m.ts, `${bot} deploy to staging now`);
    await waitFor(() => outcome(editKey(original, e2.editedTs)), 'the later edit');
    expect(outcome(editKey(original, e2.editedTs))).toBe(`amended:${first.id}`);
    expect(pending().map((a) => a.task)).toEqual(['deploy to staging now']);
    const latest = pending()[0]!;

    // Deleted: the action made of it (from its edit) goes with it.
    const d = h!.slack.deleteMessage(C, m.ts);
    await waitFor(() => outcome(`${original}:deleted`), 'the deletion');
    expect(outcome(`${original}:deleted`)).toBe(`cancelled:${latest.id} removed`);
    expect(pending()).toEqual([]);
    // Delivered again: handled once.
    h!.slack.redeliver(d.envelopeId);
    await acked(d.envelopeId, 2);
    expect(recorded().filter((k) => k === `${original}:deleted`)).toHaveLength(1);
  });

  it('auto-reply off: a channel message edited to mention the bot becomes an action (sender named); an unfurl of a message never edited, or an edit of an old one, changes nothing', async () => {
    await ready({ runAgent: false, config: { chatDAutoReplyEnabled: false } });
    h!.slack.displayNames.set(USER, 'Ann B.');
    const bot = `<@${h!.slack.botUserId}>`;
    const chatter = h!.slack.pushMessage('what time is it', { user: USER });
    await waitFor(() => outcome(`${C}:${chatter.ts}`), 'the message');
    expect(outcome(`${C}:${chatter.ts}`)).toBe('ignored:auto-reply-off');
    const unfurl = h!.slack.unfurlMessage(C, chatter.ts);
    await acked(unfurl.envelopeId);
    expect(recorded()).toEqual([`${C}:${chatter.ts}`]);

    const e = h!.slack.editMessage(C, chatter.ts, `${bot} what time is it?`);
    const key = editKey(`${C}:${chatter.ts}`, e.editedTs);
    await waitFor(() => outcome(key), 'the edit');
    expect(outcome(key)).toBe('queued');
    expect(pending()).toHaveLength(1);
    const a = pending()[0]!;
    expect(a.task).toBe('what time is it?');
    expect(a.metadata.edit).toEqual({ of: `${C}:${chatter.ts}`, at: e.editedTs });
    expect(a.metadata.inbound).toMatchObject({ userId: USER, userName: 'Ann B.' });
    expect(a.metadata.replyTo).toMatchObject({ chatId: C, messageId: chatter.ts });

    // A message written 20 minutes ago (a mention, still waiting), edited now: too late to count.
    const ts = (Date.now() / 1000 - 20 * 60).toFixed(6);
    h!.slack.pushMessage(`${bot} an old request`, { user: USER, ts });
    await waitFor(() => pending().some((x) => x.task === 'an old request'), 'the old request');
    const old = h!.slack.editMessage(C, ts, `${bot} an old request, changed`);
    const oldKey = editKey(`${C}:${ts}`, old.editedTs);
    await waitFor(() => outcome(oldKey), 'the old edit');
    expect(outcome(oldKey)).toBe('ignored:edit-too-old');
    expect(
      pending()
        .map((x) => x.task)
        .sort(),
    ).toEqual(['an old request', 'what time is it?']);
  });

  it("edits and deletions of the bot's own messages and other bots' are acknowledged and never recorded", async () => {
    await ready({ runAgent: false, config: { chatDAutoReplyEnabled: true } });
    const bot = `<@${h!.slack.botUserId}>`;
    await h!.channel().send(C, 'Deploying now.');
    const mine = h!.slack.posted.find((p) => p.channel === C)!;
    const other = h!.slack.pushMessage('build 42 passed', { botId: 'B0OTHER01' });
    // The bot's message as its user, without bot_id or subtype.
    const echo = h!.slack.pushMessage('Deploying soon.', { user: h!.slack.botUserId });
    const before = recorded();
    const envelopes = [
      h!.slack.editMessage(C, mine.ts, `${bot} deploy to production`).envelopeId,
      h!.slack.editMessage(C, other.ts, `${bot} build 42 failed, fix it`).envelopeId,
      h!.slack.editMessage(C, echo.ts, 'Deploying now, please wait.').envelopeId,
      h!.slack.deleteMessage(C, mine.ts).envelopeId,
      h!.slack.deleteMessage(C, other.ts).envelopeId,
      h!.slack.deleteMessage(C, echo.ts).envelopeId,
    ];
    for (const id of envelopes) await acked(id);
    expect(recorded()).toEqual(before);
    expect(h!.actions()).toEqual([]);
  });

  it("a thread's first message deleted with replies under it (Slack's tombstone) takes its waiting action with it; the replies' stay", async () => {
    await ready({ runAgent: false, config: { chatDAutoReplyEnabled: false } });
    const bot = `<@${h!.slack.botUserId}>`;
    const root = h!.slack.pushMessage(`${bot} plan the offsite`, { user: USER });
    h!.slack.pushMessage(`${bot} and book the rooms`, { user: ADMIN, threadTs: root.ts });
    await waitFor(() => pending().length === 2, 'two actions');
    const rootAction = pending().find((a) => a.task === 'plan the offsite')!;
    h!.slack.deleteMessage(C, root.ts);
    await waitFor(() => outcome(`${C}:${root.ts}:deleted`), 'the deletion');
    expect(outcome(`${C}:${root.ts}:deleted`)).toBe(`cancelled:${rootAction.id} removed`);
    expect(pending().map((a) => a.task)).toEqual(['and book the rooms']);
  });

  it("an edited message's files are downloaded again under names of their own: the first version's file stays as it was", async () => {
    await ready({ runAgent: false, config: { chatDAutoReplyEnabled: true } });
    const data = Buffer.from('quarterly figures');
    const m = h!.slack.pushMessage('summarise this', { user: USER, files: [{ name: 'q3.txt', data, mimetype: 'text/plain' }] });
    const first = await waitFor(() => pending()[0], 'the first action');
    const e = h!.slack.editMessage(C, m.ts, 'summarise this, briefly');
    const key = editKey(`${C}:${m.ts}`, e.editedTs);
    await waitFor(() => outcome(key), 'the edit');
    expect(outcome(key)).toBe(`amended:${first.id}`);
    const dir = join(h!.home, 'downloads', 'chatD');
    const path = (task: string) => /\[attachment: q3\.txt \(document\) at (\S+)\]/.exec(task)?.[1];
    const now = pending()[0]!;
    expect(now.task.startsWith('summarise this, briefly\n')).toBe(true);
    expect(path(now.task)).toBe(join(dir, `${C}_${m.ts}_e${e.editedTs}_q3.txt`));
    expect(path(first.task)).toBe(join(dir, `${C}_${m.ts}_q3.txt`));
    expect(readFileSync(path(now.task)!)).toEqual(data);
    expect(readFileSync(path(first.task)!)).toEqual(data);
  });

  it('an edit while the action runs reaches it: the model reads the new text before its next step, no second action', async () => {
    await ready({ config: { chatDAutoReplyEnabled: false } });
    const held = heldAnswer(h!.model, 'Summary of the report.', 'Summary of the Q3 report.');
    const bot = `<@${h!.slack.botUserId}>`;
    const m = h!.slack.pushMessage(`${bot} summarise the report`, { user: USER });
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'executing'), 'the action to run');
    const e = h!.slack.editMessage(C, m.ts, `${bot} summarise the Q3 report`);
    const key = editKey(`${C}:${m.ts}`, e.editedTs);
    await waitFor(() => outcome(key), 'the edit to be handed');
    expect(outcome(key)).toBe(`to-action:${action.id}`);
    held.release();
    const done = await completed(() => h!.kernel, action.id);
    expect(done.result).toBe('Summary of the Q3 report.');
    const told = held.second().filter((x) => x.role === 'user' && x.content.includes('edited the message this task came from'));
    expect(told).toHaveLength(1);
    expect(told[0]!.content).toContain('summarise the Q3 report');
    expect(h!.actions()).toHaveLength(1);
    await waitFor(() => h!.slack.posted.find((p) => p.channel === C && p.text === 'Summary of the Q3 report.'), 'the reply');
  });
});
