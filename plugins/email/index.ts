/**
 * Email plugin entry: the `channel:email` capability (status, send, reply), inbound mail through IMAP IDLE into
 * `receive()`, and the email skills. See docs/email.md.
 */
import {
  definePlugin,
  errorMessage,
  forbiddenError,
  outgoing,
  type Action,
  type ChannelCapability,
  type ChannelStatus,
  type OutboundMessage,
  type SendOptions,
  type SentMessage,
  setting,
} from '../../sdk/index.js';
import { ChannelStore } from '../../sdk/channel-kit/index.js';
import manifest from './manifest.js';
import { Inbound } from './src/inbound.js';
import { emailReport, fetchEmail, indexEmails, searchEmails } from './src/mailbox-skills.js';
import { Receiver } from './src/receiver.js';
import { bodyOf, renderMarkdown } from './src/render.js';
import { EmailSendError, normalizeId, parseRecipients, Sender } from './src/sender.js';
import { emailSettings } from './src/settings.js';
import { EmailStore } from './src/store.js';

/** Keys whose change restarts the inbound connection. */
const RECEIVER_KEYS = new Set([
  'emailEnabled',
  'imapHost',
  'imapPort',
  'imapSecure',
  'imapUsername',
  'imapPassword',
  'emailCaFile',
  'emailSocketTimeoutMs',
  'emailSweepIntervalMs',
]);

const reSubject = (s: string) => (/^re:/i.test(s.trim()) ? s.trim() : `Re: ${s.trim()}`);

export default definePlugin({
  manifest,
  setup(ctx) {
    const store = new EmailStore(ctx.home);
    const kit = ChannelStore.open(ctx.home, 'email');
    // Handled mail is remembered channelHistoryKeepDays (a second delivery within that time is recognised).
    const stopPruning = kit.pruneDaily(
      () => setting<number>(ctx, 'channelHistoryKeepDays', 30),
      (e) => ctx.log.warn(`email: could not prune its message store: ${errorMessage(e)}`),
    );
    const sender = new Sender(ctx.config, store);
    const inbound = new Inbound(ctx, store, kit);
    const receiver = new Receiver(ctx.config, inbound.cursor, ctx.log, inbound.take, ctx.home);
    // Mail recorded before the last stop but not yet queued (a crash in between) goes on now.
    inbound.ingress.recover();
    const enabled = () => ctx.config.get<boolean>('emailEnabled') === true;
    const replies = new Map<string, number>();

    const compose = async (to: string, message: string | OutboundMessage, format: SendOptions['format']) => {
      // messageOut taps see (and may rewrite or drop) the text before it is rendered.
      const m = await outgoing(ctx, 'email', to, message);
      const text = m.text ?? '';
      const body = format === 'plain' ? { text } : renderMarkdown(text);
      const attachments = (m.files ?? []).map((f) => ({ path: f.path }));
      if (!text.trim() && !attachments.length)
        throw new EmailSendError('nothing to send: the message has no text and no files', 'KEEL_E_INVALID_ARGUMENT');
      return { body, attachments };
    };

    const channel: ChannelCapability = {
      name: 'email',
      status(): ChannelStatus {
        const on = enabled();
        return { enabled: on, ...(on ? receiver.status() : { connected: false, state: 'stopped' as const }) };
      },
      async send(to, message, options = {}): Promise<SentMessage> {
        const { body, attachments } = await compose(to, message, options.format);
        const r = await sender.send({
          to: parseRecipients(to),
          subject: emailSettings(ctx.config).defaultSubject,
          body,
          auto: false,
          ...(options.replyToMessageId ? { inReplyTo: options.replyToMessageId } : {}),
          ...(options.idempotencyKey ? { deliveryKey: options.idempotencyKey } : {}),
          ...(attachments.length ? { attachments } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        return { messageId: r.messageId, messageIds: [r.messageId] };
      },
      async reply(action: Action, message): Promise<SentMessage> {
        const to = action.metadata.replyTo as { chatId?: string; messageId?: string; subject?: string; references?: string[] } | undefined;
        if (!to?.chatId)
          throw new EmailSendError(
            `action ${action.id} did not come from an email: it has no address to reply to`,
            'KEEL_E_INVALID_ARGUMENT',
          );
        const { body, attachments } = await compose(to.chatId, message, 'markdown');
        const n = replies.get(action.id) ?? 0;
        replies.set(action.id, n + 1);
        const r = await sender.send({
          to: parseRecipients(to.chatId),
          subject: reSubject(to.subject || emailSettings(ctx.config).defaultSubject),
          body,
          auto: true,
          ...(to.messageId ? { inReplyTo: to.messageId } : {}),
          ...(Array.isArray(to.references) ? { references: to.references } : {}),
          deliveryKey: `${action.id}:reply:${n}`,
          ...(attachments.length ? { attachments } : {}),
        });
        return { messageId: r.messageId, messageIds: [r.messageId] };
      },
    };
    ctx.provide('channel:email', channel);
    // The reply counter of an action is needed only while it runs (a re-run after a crash starts again at 0).
    ctx.hooks.tap('actionSettled', (action) => {
      replies.delete(action.id);
    });

    ctx.skills.register('send_email', async (a, call) => {
      const to = parseRecipients(a.to);
      // Anyone can mail Keel: a stranger's mail must not turn it into an open relay. Work started by a mail from a
      // non-admin may mail only that sender.
      if (call.action?.source === 'email' && ctx.use('kernel:policy')?.isAdmin(call.actor) !== true) {
        const sender = (call.action.metadata.replyTo as { chatId?: string } | undefined)?.chatId?.toLowerCase();
        const others = to.filter((r) => r !== sender);
        if (others.length) {
          throw forbiddenError(
            `send_email on behalf of a mail from a non-admin may only write to its sender (${sender ?? 'unknown'}), not to ${others.join(', ')}.`,
          );
        }
      }
      const r = await sender.send({
        to,
        subject: a.subject?.trim() || emailSettings(ctx.config).defaultSubject,
        // messageOut taps see (and may rewrite or drop) the text, as for every other outbound message.
        body: await bodyOf((await outgoing(ctx, 'email', to.join(', '), a.message)).text ?? ''),
        // Mail sent while carrying out an action that a mail started is an automatic reply (RFC 3834).
        auto: call.action?.source === 'email',
        ...(a.inReplyTo ? { inReplyTo: normalizeId(a.inReplyTo) } : {}),
        ...(a.references ? { references: a.references.split(/\s+/).filter(Boolean) } : {}),
        signal: call.signal,
      });
      return `Email sent to ${to.join(', ')}. Message-ID: ${r.messageId}`;
    });
    ctx.skills.register('search_emails', (a) => searchEmails(ctx.config, a));
    ctx.skills.register('fetch_email', (a) => fetchEmail(ctx, Number(a.uid)));
    ctx.skills.register('index_emails_to_knowledge_base', (a, call) => indexEmails(ctx, a, call.signal));
    ctx.skills.register('generate_email_report', (a, call) => emailReport(ctx, a, call.signal));

    let restarting: Promise<void> = Promise.resolve();
    ctx.hooks.tap('configChanged', (e) => {
      if (!RECEIVER_KEYS.has(e.key)) return;
      restarting = restarting.then(async () => {
        await receiver.stop();
        if (enabled() && !ctx.signal.aborted) receiver.start();
      });
    });
    if (enabled()) {
      const admins = ctx.config.get<Record<string, unknown> | undefined>('adminUsers')?.email;
      if (Array.isArray(admins) && admins.length && !emailSettings(ctx.config).authServId) {
        ctx.log.warn(
          'email: adminUsers.email is set but emailAuthServId is not: no mail sender can be proven, so nobody is admin by mail (docs/email.md).',
        );
      }
      receiver.start();
    }

    return {
      async stop() {
        await restarting.catch(() => undefined);
        await receiver.stop();
        await inbound.ingress.close();
        stopPruning();
        kit.close();
        store.close();
      },
      health() {
        if (!enabled()) return { ok: true, message: 'receiving off (emailEnabled is false)' };
        const s = receiver.status();
        // A refused login is a configuration problem shown in the channel status; quarantining the plugin for it
        // would also take send_email away.
        return {
          ok: true,
          message: s.state === 'failed' ? `IMAP failed: ${s.lastError ?? 'unknown error'}` : `IMAP ${s.state ?? 'stopped'}`,
        };
      },
    };
  },
});
