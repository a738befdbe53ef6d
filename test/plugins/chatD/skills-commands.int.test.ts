/**
 * chatD skills (send_chatD; send_file and react of the messaging plugin on Slack), the progress status message,
 * the kit's command menu as slash and text commands, and the credential checks at configuration time.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Action, Actor } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };
const run = (name: string, args: unknown, action?: Action) => h!.kernel.execute(name, args, OPERATOR, action ? { action } : {});

async function ready(o: Parameters<typeof bootChatD>[0] = {}) {
  h = await bootChatD({ runAgent: false, ...o });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

describe('chatD skills', () => {
  it('send_chatD sends mrkdwn to C, G and D ids, returns the ts, is delivered once per action, and rejects other ids clearly', async () => {
    await ready();
    const r = await run('send_chatD', { channel_id: 'C0TEAM0001', message: '**hi** _there_' });
    expect(r.success).toBe(true);
    const out = JSON.parse(r.result) as { ts: string };
    expect(h!.slack.posted.find((m) => m.ts === out.ts)).toMatchObject({ channel: 'C0TEAM0001', text: '*hi* _there_' });
    for (const id of ['G0PRIV0001', 'D0DIRECT01']) expect((await run('send_chatD', { channel_id: id, message: 'x' })).success).toBe(true);
    // A name instead of an id takes the conversation of the current message; a re-run of the same call sends nothing.
    const action = await h!.kernel.queue.push({
      task: 't',
      source: 'chatD',
      metadata: { replyTo: { chatId: 'C0FROM0001', messageId: '1700000000.000001' } },
    });
    const r2 = await run('send_chatD', { channel_id: 'this channel', message: 'hello' }, action);
    expect(r2.success).toBe(true);
    expect(h!.slack.posted.at(-1)).toMatchObject({ channel: 'C0FROM0001', text: 'hello' });
    const before = h!.slack.posted.length;
    const r3 = await run('send_chatD', { channel_id: 'this channel', message: 'hello' }, action);
    expect(JSON.parse(r3.result)).toEqual(JSON.parse(r2.result));
    expect(h!.slack.posted.length).toBe(before);
    for (const bad of ['#general', 'U0ALICE01', 'c0lower', '12345']) {
      const b = await run('send_chatD', { channel_id: bad, message: 'x' });
      expect(b.success, bad).toBe(false);
      expect(b.result).toMatch(/not a Slack conversation id: it starts with C \(channel\), G \(private channel\) or D \(direct message\)/);
    }
    expect(h!.slack.posted.length).toBe(before);
    // A Slack error is reported, not swallowed.
    h!.slack.failNext('chat.postMessage', { error: 'channel_not_found' });
    const nf = await run('send_chatD', { channel_id: 'C0GONE0001', message: 'x' });
    expect(nf.success).toBe(false);
    expect(nf.result).toMatch(/channel_not_found/);
  });

  it('send_file with channel chatD uploads through files.uploadV2; from a Slack action the channel is detected', async () => {
    await ready({ plugins: ['messaging'] });
    const file = join(h!.home, 'report.txt');
    writeFileSync(file, 'report body');
    const r = await run('send_file', { jid: 'C0FILES001', path: file, channel: 'chatD' });
    expect(r.success, r.result).toBe(true);
    expect(h!.slack.callsOf('files.getUploadURLExternal')[0]!.params).toMatchObject({ filename: 'report.txt', length: '11' });
    expect(h!.slack.uploads[0]).toMatchObject({ channel: 'C0FILES001', title: 'report.txt', bytes: 11 });
    expect(JSON.parse(r.result)).toMatchObject({ channel: 'chatD', to: 'C0FILES001', messageId: expect.stringMatching(/^F/) });
    // From an action that came from Slack, the channel is detected from the action.
    const action = await h!.kernel.queue.push({
      task: 't',
      source: 'chatD',
      metadata: { replyTo: { chatId: 'C0FILES001', messageId: '1700000000.000009' } },
    });
    const r2 = await run('send_file', { jid: 'C0FILES001', path: file }, action);
    expect(r2.success, r2.result).toBe(true);
    expect(h!.slack.uploads).toHaveLength(2);
  });

  it('react adds a native Slack reaction (reactions.add) to the message of the current action', async () => {
    await ready({ plugins: ['messaging'] });
    const action = await h!.kernel.queue.push({
      task: 't',
      source: 'chatD',
      metadata: { replyTo: { chatId: 'C0REACT001', messageId: '1700000000.000100' } },
    });
    const r = await run('react', { message_id: '1700000000.000100', emoji: 'thumbs_up' }, action);
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ channel: 'chatD', native: true, reaction: 'thumbsup' });
    expect(h!.slack.reactions).toEqual([{ channel: 'C0REACT001', timestamp: '1700000000.000100', name: 'thumbsup' }]);
    // Reacting twice is not an error; a named Slack emoji works too.
    expect((await run('react', { message_id: '1700000000.000100', emoji: 'thumbs_up' }, action)).success).toBe(true);
    expect((await run('react', { message_id: '1700000000.000100', emoji: ':tada:' }, action)).success).toBe(true);
    expect(h!.slack.reactions.map((x) => x.name)).toEqual(['thumbsup', 'tada']);
  });

  it('progress: a status message in the thread, edited in place (chat.update), deleted when the action settles', async () => {
    await ready();
    const action = await h!.kernel.queue.push({
      task: 't',
      source: 'chatD',
      metadata: { replyTo: { chatId: 'C0PROG0001', messageId: '1700000000.000200', threadTs: '1700000000.000200' } },
    });
    await h!.channel().progress!(action, { typingOnly: false, step: 1, thought: 'Reading the files' });
    const status = await waitFor(() => h!.slack.posted.find((m) => m.channel === 'C0PROG0001'), 'status message');
    expect(status).toMatchObject({ text: '\u23f3 Step 1: Reading the files', thread_ts: '1700000000.000200' });
    await h!.channel().progress!(action, { typingOnly: false, step: 2, thought: 'Writing the answer' });
    await waitFor(() => status!.edits === 1, 'edited', 10_000);
    expect(status!.text).toBe('\u23f3 Step 2: Writing the answer');
    await h!.kernel.hooks.actionSettled.promise(action, { status: 'completed', detail: 'done' });
    await waitFor(() => status!.deleted === true, 'deleted');
    expect(h!.slack.posted.filter((m) => m.channel === 'C0PROG0001')).toHaveLength(1);
  });
});

describe('chatD commands (the kit’s menu)', () => {
  it('answers help, status, models, queue over slash commands and text; reset only for admins; cancel own actions; never an action', async () => {
    await ready();
    const answer = async (push: () => void, channel = 'C0CMD00001') => {
      const n = h!.slack.posted.filter((m) => m.channel === channel).length;
      push();
      return (await waitFor(() => h!.slack.posted.filter((m) => m.channel === channel)[n], 'an answer')).text;
    };
    const slash =
      (text: string, user = 'U0USER001') =>
      () =>
        h!.slack.pushCommand('/keel', text, { channel: 'C0CMD00001', user });
    expect(await answer(slash('help'))).toMatch(/\/status/);
    expect(await answer(slash('status'))).toMatch(/Slack: connected as @keel in Keel Test\.[\s\S]*Queue:/);
    expect(await answer(() => h!.slack.pushCommand('/models', '', { channel: 'C0CMD00001' }))).toMatch(/fake-model/);
    expect(await answer(() => h!.slack.pushMessage('!help', { channel: 'C0CMD00001' }))).toMatch(/\/queue/);
    expect(await answer(() => h!.slack.pushMessage(`<@${h!.slack.botUserId}> /status`, { channel: 'C0CMD00001' }))).toMatch(
      /Slack: connected/,
    );
    // No agent runs here, so a message stays pending: queue lists it, cancel removes it.
    h!.slack.pushMessage('long job', { channel: 'C0CMD00001', user: 'U0USER001' });
    await waitFor(() => h!.actions().some((a) => a.task === 'long job'), 'queued');
    expect(await answer(slash('queue'))).toMatch(/long job/);
    expect(await answer(slash('reset'))).toMatch(/Only an admin/);
    expect(await answer(slash('cancel'))).toMatch(/Cancelled/);
    expect(h!.actions().some((a) => a.task === 'long job' && a.status === 'pending')).toBe(false);
    h!.slack.pushMessage('another', { channel: 'C0CMD00001', user: 'U0USER002' });
    await waitFor(() => h!.actions().some((a) => a.task === 'another'), 'queued');
    expect(await answer(slash('cancel'))).toMatch(/Nothing of yours/);
    expect(await answer(slash('reset', ADMIN))).toMatch(/Reset: 1 action/);
    expect(h!.actions().some((a) => a.task.startsWith('/') || a.task.startsWith('!'))).toBe(false);
    // Slash command envelopes are acknowledged too.
    await waitFor(() => h!.slack.unacked() === 0, 'all acknowledged');
  });

  it('a slash command with a task becomes an action of that channel', async () => {
    await ready();
    h!.slack.pushCommand('/keel', 'summarise the week', { channel: 'C0CMD00002', user: 'U0USER003' });
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a).toMatchObject({ task: 'summarise the week', source: 'chatD' });
    expect(a.metadata.replyTo).toMatchObject({ chatId: 'C0CMD00002' });
  });
});

describe('chatD credentials at configuration time', () => {
  it('a token with the wrong prefix is refused with a clear error and changes nothing', async () => {
    await ready();
    const before = h!.kernel.config.get<string>('chatDBotToken');
    const err = await h!.kernel.config.set('chatDBotToken', 'xoxp-1234-user-token', { kind: 'operator' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/chatDBotToken/);
    expect(err?.message).toMatch(/a Slack bot token starting with "xoxb-"/);
    expect(err?.message).not.toContain('xoxp-1234');
    expect(h!.kernel.config.get<string>('chatDBotToken')).toBe(before);
    const app = await h!.kernel.config.set('chatDAppToken', 'xoxb-not-an-app-token', { kind: 'operator' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(app?.message).toMatch(/starting with "xapp-".*connections:write/);
    const secret = await h!.kernel.config.set('chatDSigningSecret', 'not hex', { kind: 'operator' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(secret?.message).toMatch(/32 hexadecimal characters/);
    // The agent may not change a token even when it is well formed.
    const locked = await h!.kernel.config.set('chatDApiUrl', 'https://attacker.example/api/', { kind: 'agent' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(locked?.message).toMatch(/LOCKED/);
  });
});
