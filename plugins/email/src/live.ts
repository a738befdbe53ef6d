/**
 * The email channel: the adapter `defineChannel` runs. Receiving is the supervised IMAP IDLE connection (receiver.ts,
 * switched on by `emailEnabled`) and the inbound handling (inbound.ts); sending is the kit's runtime, one mail a
 * chunk: `chunks` renders a message once (renderEmail) into a prepared mail with its Message-ID, `sendChunk` hands it
 * to nodemailer, `classifySmtp` says what may be tried again. Replies get the kit's ledger keys and failure notice.
 * The kit owns the rest (ledger, rate limits, supervision, lock, ingress, status). See docs/email.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { type Action, forbiddenError, outgoing, type PluginContext } from '../../../sdk/index.js';
import type { ChannelAdapter, ChannelKit, RatePolicy } from '../../../sdk/channel-kit/index.js';
import type manifest from '../manifest.js';
import { Inbound, type InboundPayload } from './inbound.js';
import { emailReport, fetchEmail, indexEmails, searchEmails } from './mailbox-skills.js';
import { MailboxLock, Receiver } from './receiver.js';
import { bodyOf, renderMarkdown } from './render.js';
import { classifySmtp, EmailSendError, normalizeId, parseRecipients, prepareMail, type PreparedMail, Sender } from './sender.js';
import { emailSettings } from './settings.js';
import { EmailStore } from './store.js';

const coded = errorsFor('email');

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

/**
 * Sends per recipient address and per mailbox. Mail providers publish daily quotas rather than rates; these only
 * keep a burst (a loop that slipped through, many replies at once) from looking like spam to the server.
 */
export const EMAIL_RATE_POLICY: RatePolicy = {
  send: { capacity: 10, perSecond: 1 },
  edit: { capacity: 1, perSecond: 1 },
  global: { capacity: 30, perSecond: 5 },
};

const reSubject = (s: string) => (/^re:/i.test(s.trim()) ? s.trim() : `Re: ${s.trim()}`);

/** An answer's thread (the `via` of its reply target): the subject it goes under and the References it answers. */
interface Thread {
  subject: string;
  references: string[];
}
function threadOf(via: unknown): Thread | undefined {
  const t = via as Partial<Thread> | undefined;
  return t && typeof t.subject === 'string' && Array.isArray(t.references)
    ? { subject: t.subject, references: t.references.map(String) }
    : undefined;
}

/** The email adapter. */
export function email(kit: ChannelKit<InboundPayload>, ctx: PluginContext<typeof manifest>): ChannelAdapter<InboundPayload, PreparedMail> {
  const store = new EmailStore(ctx.home);
  // Replies the earlier email channel sent under its own keys are in the ledger as sent: an action re-run after the
  // upgrade does not mail its answer twice.
  const moved = store.moveOldReplyKeys((r) =>
    kit.store.db
      .prepare(
        "INSERT INTO delivery(key, chunk, chat_id, body, state, platform_id, created_at, sent_at) VALUES (?, 0, ?, ?, 'sent', ?, ?, ?) ON CONFLICT DO NOTHING",
      )
      .run(r.key, r.recipients, JSON.stringify({ movedFrom: 'email.db' }), r.messageId, r.at, r.at),
  );
  if (moved) ctx.log.info(`email: ${moved} reply record(s) of the earlier email channel moved to the delivery ledger (never sent again).`);
  const sender = new Sender(ctx.config, store);
  const inbound = new Inbound(ctx, store, kit);
  const receiver = new Receiver(ctx.config, inbound.cursor, ctx.log, inbound.take, () => kit.connection?.inbound());
  const enabled = () => ctx.config.get<boolean>('emailEnabled') === true;
  let restarting: Promise<void> = Promise.resolve();

  return {
    lock: new MailboxLock(ctx),
    policy: EMAIL_RATE_POLICY,
    classify: classifySmtp,
    sendChunk: (mail, _i, to) => sender.sendMail(parseRecipients(to), mail, kit.runtime.signal),
    badAddress: (to) => {
      try {
        parseRecipients(to);
        return undefined;
      } catch (e) {
        return (e as Error).message;
      }
    },
    chunks: (m, options) => {
      const text = m.text ?? '';
      if (!text.trim() && !m.files?.length) return [];
      // An answer to a mail (a reply, the failure notice) carries its thread; any other send is a new mail.
      const thread = threadOf(options.via);
      return [
        prepareMail(ctx.config, {
          subject: thread?.subject ?? emailSettings(ctx.config).defaultSubject,
          body: options.format === 'plain' ? { text } : renderMarkdown(text),
          // An answer to a mail (a reply, the failure notice) is an automatic reply (RFC 3834).
          auto: thread !== undefined,
          ...(options.replyToMessageId ? { inReplyTo: options.replyToMessageId } : {}),
          ...(thread ? { references: thread.references } : {}),
          ...(m.files?.length ? { attachments: m.files.map((f) => ({ path: f.path })) } : {}),
        }),
      ];
    },
    target: (action: Action) => {
      const r = action.metadata.replyTo as { chatId?: string; messageId?: string; subject?: string; references?: unknown } | undefined;
      if (!r?.chatId)
        throw new EmailSendError(
          `action ${action.id} did not come from an email: it has no address to reply to`,
          'KEEL_E_INVALID_ARGUMENT',
        );
      return {
        chatId: r.chatId,
        options: r.messageId ? { replyToMessageId: r.messageId } : {},
        via: {
          subject: reSubject(r.subject || emailSettings(ctx.config).defaultSubject),
          references: Array.isArray(r.references) ? r.references.map(String) : [],
        },
      };
    },
    // Mail has no typing indicator and no status message to edit: no progress is shown.
    transport: () => ({
      typing: async () => undefined,
      status: async () => {
        throw coded('KEEL_E_CHANNEL_SEND_FAILED', 'email has no status messages');
      },
    }),
    typing: false,
    statusMessages: false,

    connection: receiver.connection(),
    receive: inbound.handle,

    health: () => {
      if (!enabled()) return { ok: true, message: 'receiving off (emailEnabled is false)' };
      const s = kit.status();
      // A refused login is a configuration problem shown in the channel status; quarantining the plugin for it
      // would also take send_email away.
      return {
        ok: true,
        message: s.state === 'failed' ? `IMAP failed: ${s.lastError ?? 'unknown error'}` : `IMAP ${s.state ?? 'stopped'}`,
      };
    },

    start() {
      ctx.skills.register('send_email', async (a, call) => {
        const to = parseRecipients(a.to);
        // Anyone can mail Keel: a stranger's mail must not turn it into an open relay. Work started by a mail from a
        // non-admin may mail only that sender.
        if (call.action?.source === 'email' && ctx.use('kernel:policy')?.isAdmin(call.actor) !== true) {
          const from = (call.action.metadata.replyTo as { chatId?: string } | undefined)?.chatId?.toLowerCase();
          const others = to.filter((r) => r !== from);
          if (others.length) {
            throw forbiddenError(
              `send_email on behalf of a mail from a non-admin may only write to its sender (${from ?? 'unknown'}), not to ${others.join(', ')}.`,
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

      ctx.hooks.tap('configChanged', (e) => {
        if (!RECEIVER_KEYS.has(e.key)) return;
        restarting = restarting.then(async () => {
          const connection = kit.connection;
          await connection?.stop();
          if (enabled() && !ctx.signal.aborted && !kit.runtime.signal.aborted) connection?.start();
        });
      });
      if (enabled()) {
        const admins = ctx.config.get<Record<string, unknown> | undefined>('adminUsers')?.email;
        if (Array.isArray(admins) && admins.length && !emailSettings(ctx.config).authServId) {
          ctx.log.warn(
            'email: adminUsers.email is set but emailAuthServId is not: no mail sender can be proven, so nobody is admin by mail (docs/email.md).',
          );
        }
      }
    },

    async stop() {
      await restarting.catch(() => undefined);
      // A restart that was under way when the channel began to stop.
      await kit.connection?.stop();
      store.close();
    },
  };
}
