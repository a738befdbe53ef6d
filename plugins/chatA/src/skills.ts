/**
 * The chatA skills of SPEC: send_chatA, chatA_send_buttons, chatA_send_poll, chatA_edit_message, chatA_react,
 * chatA_pin_message. Each returns the message id(s) so an edit can follow.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { GrammyError, type Api } from 'grammy';
import type { OutboundMessage, PluginContext, SendOptions, SentMessage, SkillCallContext } from '../../../sdk/index.js';
import { renderTelegram, skillSendKey } from '../../../sdk/channel-kit/index.js';
import { editText } from './telegram.js';
import type manifest from '../manifest.js';

const coded = errorsFor('chatA');

type Buttons = NonNullable<OutboundMessage['buttons']>;

export interface SkillDeps {
  api: () => Api;
  send(to: string, message: string | OutboundMessage, options?: SendOptions): Promise<SentMessage>;
  /** Runs a non-ledgered call (poll, edit, reaction, pin) under the chat's rate limit, waiting out 429s. */
  limited<T>(chatId: string, fn: () => Promise<T>): Promise<T>;
  /** Buttons were sent by an action: a press on them goes back to it (buttons.ts). */
  sentButtons?(chatId: string, messageIds: string[], actionId: string): void;
}

/** A numeric chat id, or the chat of the current chatA message when `chatId` is a placeholder or a name. */
export function resolveChat(chatId: unknown, call: SkillCallContext): string {
  const raw = String(chatId ?? '').trim();
  if (/^-?\d+$/.test(raw)) return raw;
  const a = call.action;
  const fromAction = a && a.source === 'chatA' ? a.metadata.replyTo?.chatId : undefined;
  if (fromAction !== undefined && fromAction !== null && /^-?\d+$/.test(String(fromAction))) return String(fromAction);
  throw coded(
    'KEEL_E_INVALID_ARGUMENT',
    `chatId "${raw}" is not a numeric Telegram chat id, and the current action did not come from chatA to take the chat from.`,
  );
}

export function normaliseButtons(input: unknown[]): Buttons {
  const rows = input.every((r) => Array.isArray(r)) ? (input as unknown[][]) : input.map((b) => [b]);
  return rows.map((row, i) =>
    row.map((b, j) => {
      const o = b as { text?: unknown; callback_data?: unknown; url?: unknown };
      if (!o || typeof o.text !== 'string' || !o.text)
        throw coded('KEEL_E_INVALID_ARGUMENT', `Button [${i}][${j}] needs a non-empty "text".`);
      const hasData = typeof o.callback_data === 'string' && o.callback_data !== '';
      const hasUrl = typeof o.url === 'string' && /^https?:\/\//.test(o.url);
      if (hasData === hasUrl)
        throw coded('KEEL_E_INVALID_ARGUMENT', `Button [${i}][${j}] ("${o.text}") needs exactly one of callback_data or an http(s) url.`);
      if (hasData && Buffer.byteLength(o.callback_data as string) > 64)
        throw coded('KEEL_E_INVALID_ARGUMENT', `Button [${i}][${j}]: callback_data is limited to 64 bytes.`);
      return hasData ? { text: o.text, callback_data: o.callback_data as string } : { text: o.text, url: o.url as string };
    }),
  );
}

export function registerSkills(ctx: PluginContext<typeof manifest>, d: SkillDeps): void {
  const withKey = (call: SkillCallContext, skill: string, args: unknown): SendOptions => {
    // The same skill call in the same action is sent once, even when the action runs again after a crash.
    const k = skillSendKey(call.action, skill, args);
    return k ? { idempotencyKey: k } : {};
  };

  ctx.skills.register('send_chatA', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    const sent = await d.send(chat, args.message, withKey(call, 'send_chatA', { chat, m: args.message }));
    return { chatId: chat, messageId: Number(sent.messageId), messageIds: sent.messageIds.map(Number) };
  });

  ctx.skills.register('chatA_send_buttons', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    const buttons = normaliseButtons(args.buttons);
    const sent = await d.send(
      chat,
      { text: args.message, buttons },
      withKey(call, 'chatA_send_buttons', { chat, m: args.message, buttons }),
    );
    if (call.action) d.sentButtons?.(chat, sent.messageIds, call.action.id);
    return { chatId: chat, messageId: Number(sent.messageId), messageIds: sent.messageIds.map(Number) };
  });

  ctx.skills.register('chatA_send_poll', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    if (args.options.length < 2 || args.options.length > 10) throw coded('KEEL_E_INVALID_ARGUMENT', 'A poll needs 2 to 10 options.');
    const m = await d.limited(chat, () =>
      d.api().sendPoll(
        chat,
        args.question,
        args.options.map((text) => ({ text })),
        {
          is_anonymous: args.isAnonymous ?? true,
          allows_multiple_answers: args.allowsMultipleAnswers ?? false,
        },
      ),
    );
    return { chatId: chat, messageId: m.message_id };
  });

  ctx.skills.register('chatA_edit_message', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    const [first] = renderTelegram(args.newText);
    if (!first) throw coded('KEEL_E_INVALID_ARGUMENT', 'newText renders to nothing.');
    await d.limited(chat, () => editText(d.api(), chat, args.messageId, first.html, first.plain));
    return { chatId: chat, messageId: args.messageId, edited: true };
  });

  ctx.skills.register('chatA_react', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    const emoji = args.emoji ?? '\u{1F44D}';
    try {
      await d.limited(chat, () => d.api().setMessageReaction(chat, args.messageId, [{ type: 'emoji', emoji: emoji as never }]));
      return { chatId: chat, messageId: args.messageId, reacted: emoji, native: true };
    } catch (e) {
      if (!(e instanceof GrammyError) || e.error_code !== 400) throw e;
      // SPEC "Native reaction not possible": the emoji goes out as a reply, with a note saying why.
      const sent = await d.send(chat, emoji, {
        replyToMessageId: String(args.messageId),
        format: 'plain',
        ...withKey(call, 'chatA_react', { chat, m: args.messageId, emoji }),
      });
      return {
        chatId: chat,
        messageId: Number(sent.messageId),
        reacted: emoji,
        native: false,
        note: 'Native reactions are unavailable in this chat (bot cannot react in this chat type); the emoji was sent as a reply instead.',
      };
    }
  });

  ctx.skills.register('chatA_pin_message', async (args, call) => {
    const chat = resolveChat(args.chatId, call);
    await d.limited(chat, () => d.api().pinChatMessage(chat, args.messageId, { disable_notification: args.silent ?? true }));
    return { chatId: chat, messageId: args.messageId, pinned: true };
  });
}
