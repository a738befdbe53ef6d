/**
 * Approvals in the chat on Telegram (docs/approvals.md): a command waiting for confirmation and an APPROVAL
 * configuration change the agent asked for are sent to the chat with Approve / Refuse inline buttons; only an
 * admin's tap decides, once; a restart keeps the request. The real kernel, agent loop, system plugin and grammy
 * against the loopback Bot API (callback_query updates, answerCallbackQuery, editMessageText); the model is the
 * scripted fake provider.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalsCapability } from '../../../sdk/approvals.js';
import type { TgMessage } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tap = (id: string, from: number, data: string, chat: number, messageId: number) =>
  h!.tg.push({
    callback_query: {
      id,
      from: { id: from, is_bot: false, first_name: 'P', username: `user${from}` },
      data,
      message: { message_id: messageId, date: 0, chat: { id: chat, type: 'private' } },
    },
  });

const ask = (text: string) =>
  h!.tg.push({
    message: { message_id: 10, date: 0, chat: { id: 42, type: 'private' }, from: { id: 42, is_bot: false, first_name: 'Admin' }, text },
  });

const answerTo = (queryId: string) =>
  waitFor(() => h!.tg.callsOf('answerCallbackQuery').find((c) => c.params.callback_query_id === queryId), `the answer to ${queryId}`);

const buttonsOf = (m: TgMessage) =>
  (m.reply_markup as { inline_keyboard: Array<Array<{ text: string; callback_data: string }>> }).inline_keyboard[0]!;

const approvals = () => h!.kernel.registry.use<ApprovalsCapability>('approvals')!;

async function boot() {
  h = await bootChatA({ plugins: ['system'], config: { commandIsolation: 'off' } });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

/** The agent calls run_command; returns the approval message the chat received. */
async function commandWaiting(): Promise<TgMessage> {
  h!.model.replies.push(
    { toolCalls: [{ name: 'run_command', arguments: { command: 'echo', args: ['tap', 'ran'] } }] },
    { text: 'It waits for an admin.' },
  );
  ask('run echo tap ran');
  const msg = await waitFor(() => h!.tg.sent.find((m) => JSON.stringify(m.reply_markup ?? '').includes('apr:y:')), 'the approval request');
  expect(msg.text).toMatch(/run the command: echo tap ran \(in .+\)\nRequested by user 42 on chatA; expires /);
  return msg;
}

const stdoutMessages = () => h!.tg.sent.filter((m) => m.text?.includes('--- stdout ---'));

describe('chatA approvals', () => {
  it("an admin's tap approves the waiting command: it runs once, the result is posted, the buttons go; a non-admin's tap changes nothing", async () => {
    await boot();
    const msg = await commandWaiting();
    const [approve, refuse] = buttonsOf(msg);
    expect([approve!.text, refuse!.text]).toEqual(['Approve', 'Refuse']);
    const id = approve!.callback_data.slice('apr:y:'.length);
    expect(approvals().get(id)?.state).toBe('pending');

    // User 77 is no admin of chatA: told so, nothing runs, the request stays.
    tap('q-stranger', 77, approve!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-stranger')).params.text).toBe('Only an admin can approve or refuse this.');
    expect(approvals().get(id)?.state).toBe('pending');
    expect(stdoutMessages()).toHaveLength(0);
    expect(h!.tg.sent.find((m) => m.message_id === msg.message_id)?.reply_markup).toBeDefined();

    tap('q-admin', 42, approve!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-admin')).params.text).toBe('Approved by user 42 on chatA.');
    const result = await waitFor(() => stdoutMessages()[0], 'the command result in the chat');
    expect(result.text).toContain('Approved by user 42 on chatA');
    expect(result.text).toMatch(/--- stdout ---\ntap ran/);
    const edited = await waitFor(
      () => h!.tg.sent.find((m) => m.message_id === msg.message_id && m.text?.includes('Approved by user 42 on chatA.')),
      'the request message edited to show the outcome',
    );
    expect(edited.reply_markup).toBeUndefined();
    expect(approvals().get(id)).toMatchObject({ state: 'approved', decidedBy: 'user 42 on chatA' });

    // A second tap (Refuse, after the approval) is told what happened and changes nothing.
    tap('q-late', 42, refuse!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-late')).params.text).toMatch(/^Already approved by user 42 on chatA/);
    expect(stdoutMessages()).toHaveLength(1);
  });

  it('a refusal: the command does not run and the chat is told who refused', async () => {
    await boot();
    const msg = await commandWaiting();
    const [, refuse] = buttonsOf(msg);
    tap('q-refuse', 42, refuse!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-refuse')).params.text).toBe('Refused by user 42 on chatA.');
    const told = await waitFor(() => h!.tg.sent.find((m) => m.text?.startsWith('Refused by user 42 on chatA')), 'the refusal in the chat');
    expect(told.text).toContain('It was not done.');
    expect(stdoutMessages()).toHaveLength(0);
    expect(
      await h!.kernel.execute(
        'approve_command',
        { id: refuse!.callback_data.slice(6), decision: 'approve' },
        { kind: 'operator', channel: 'cli' },
      ),
    ).toMatchObject({ success: false });
  });

  it('a restart keeps the pending request: the tap after it still runs the command, once', async () => {
    await boot();
    const msg = await commandWaiting();
    const [approve] = buttonsOf(msg);
    await h!.restart();
    await waitFor(() => h!.channel().status().connected, 'connected again');
    const id = approve!.callback_data.slice(6);
    expect(approvals().get(id)?.state).toBe('pending');
    tap('q-after', 42, approve!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-after')).params.text).toBe('Approved by user 42 on chatA.');
    await waitFor(() => stdoutMessages()[0], 'the command result');
    // Telegram delivers the same tap again: handled once.
    tap('q-after', 42, approve!.callback_data, 42, msg.message_id);
    await new Promise((r) => setTimeout(r, 300));
    expect(stdoutMessages()).toHaveLength(1);
  });

  it('an APPROVAL configuration change the agent asked for is applied by the tap exactly as manage_config approve applies it', async () => {
    await boot();
    expect(h!.kernel.config.get('downloadsKeepDays')).toBe(30);
    h!.model.replies.push(
      {
        toolCalls: [{ name: 'manage_config', arguments: { action: 'set', key: 'downloadsKeepDays', value: '7', reason: 'disk is small' } }],
      },
      { text: 'Asked.' },
    );
    ask('keep downloads a week');
    const msg = await waitFor(
      () => h!.tg.sent.find((m) => JSON.stringify(m.reply_markup ?? '').includes('apr:y:cfg_')),
      'the approval request',
    );
    expect(msg.text).toContain('set downloadsKeepDays to 7 (reason: disk is small)');
    expect(h!.kernel.config.pending()).toHaveLength(1);
    const [approve] = buttonsOf(msg);
    tap('q-cfg', 42, approve!.callback_data, 42, msg.message_id);
    expect((await answerTo('q-cfg')).params.text).toBe('Approved by user 42 on chatA.');
    await waitFor(() => h!.kernel.config.get('downloadsKeepDays') === 7, 'the change applied');
    expect(h!.kernel.config.pending()).toHaveLength(0);
    await waitFor(() => h!.tg.sent.find((m) => m.text?.includes('Applied: downloadsKeepDays changed.')), 'the outcome in the chat');
  });
});
