/**
 * The progress status message names the step once: when the model calls a tool without a word of reasoning, the
 * agent's thought is "Step 1: calling <skill>." and the chat shows "⏳ Step 1: calling <skill>.", not
 * "⏳ Step 1: Step 1: calling <skill>." (real grammy against the loopback Bot API, the real agent and channel kit).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('chatA progress line', () => {
  it('shows the step prefix once when the model gives no reasoning', async () => {
    h = await bootChatA();
    await waitFor(() => h!.channel().status().connected, 'connected');
    h.model.replies.push({ toolCalls: [{ name: 'chatA_pin_message', arguments: { chatId: 'me', messageId: 1 } }] }, { text: 'All done.' });
    h.tg.pushText('pin it', { userId: 812 });
    await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed', 20_000);
    const lines = [...h.tg.callsOf('sendMessage'), ...h.tg.callsOf('editMessageText')]
      .filter((c) => c.params.chat_id === '812' && String(c.params.text).startsWith('\u23f3'))
      .map((c) => String(c.params.text));
    expect(lines).toEqual(['\u23f3 Step 1: calling chatA_pin_message.']);
  });
});
