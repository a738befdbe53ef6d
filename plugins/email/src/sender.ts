/**
 * Sending over SMTP with nodemailer: a Message-ID Keel makes and records before the first byte goes out (so its
 * own mail is recognised when it comes back), threading headers, `Auto-Submitted: auto-replied` on every
 * automatic reply, verified TLS. A delivery key makes a repeated send of the same reply a no-op; after a crash
 * between the server's acceptance and the record, the same Message-ID goes out again (docs/email.md).
 */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { ConfigView } from '../../../sdk/index.js';
import type { Body } from './render.js';
import { EmailConfigError, emailSettings, smtpSettings, tlsOptions } from './settings.js';
import type { EmailStore } from './store.js';

export interface OutgoingMail {
  to: string[];
  subject: string;
  body: Body;
  inReplyTo?: string;
  references?: string[];
  /** An automatic reply: gets `Auto-Submitted: auto-replied` and counts against the per-thread limit. */
  auto: boolean;
  deliveryKey?: string;
  attachments?: Array<{ path: string; filename?: string }>;
  signal?: AbortSignal;
}

export interface SendResult {
  messageId: string;
  /** True when the delivery key had been sent before and nothing went out now. */
  duplicate: boolean;
}

/** An SMTP failure in words a user can act on (never the password). */
export class EmailSendError extends Error {
  constructor(
    message: string,
    readonly code = 'KEEL_E_EMAIL_SEND',
  ) {
    super(message);
  }
}

const ADDRESS = /^[^\s@<>,;"]+@[^\s@<>,;"]+\.[^\s@<>,;"]+$/;

/** Recipients of a `to` string: comma or semicolon separated, `Name <addr>` allowed; each must be an address. */
export function parseRecipients(to: string): string[] {
  const out: string[] = [];
  for (const part of to
    .split(/[,;]/)
    .map((s) => s.trim())
    .filter(Boolean)) {
    const addr = (/<([^>]+)>\s*$/.exec(part)?.[1] ?? part).trim();
    if (!ADDRESS.test(addr)) throw new EmailSendError(`"${part}" is not an email address`, 'KEEL_E_INVALID_ARGUMENT');
    out.push(addr.toLowerCase());
  }
  if (!out.length) throw new EmailSendError('no recipient: give at least one address in "to"', 'KEEL_E_INVALID_ARGUMENT');
  return out;
}

/** Message-IDs are `<...>`; users and models often drop the brackets. */
export function normalizeId(id: string): string {
  const t = id.trim();
  return t.startsWith('<') ? t : `<${t}>`;
}

/** The root of a thread: the first reference, else what is replied to, else the message itself. */
export function threadOf(m: { references?: string[]; inReplyTo?: string | undefined; messageId: string }): string {
  return m.references?.[0] ?? m.inReplyTo ?? m.messageId;
}

const isLoopback = (host: string) => host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';

function describe(e: unknown, server: string, user: string): EmailSendError {
  const err = e as { code?: string; responseCode?: number; response?: string; message?: string };
  if (err.code === 'EAUTH')
    return new EmailSendError(`SMTP login refused for ${user} at ${server}: check smtpUsername and smtpPassword.`, 'KEEL_E_EMAIL_AUTH');
  if (err.code === 'ETLS' || /certificate|self[- ]signed|unable to verify/i.test(err.message ?? '')) {
    return new EmailSendError(
      `TLS with ${server} failed: ${err.message}. A private CA goes in emailCaFile; verification is never turned off.`,
      'KEEL_E_EMAIL_TLS',
    );
  }
  if (err.code === 'ETIMEDOUT' || err.code === 'ESOCKET' || err.code === 'ECONNECTION' || err.code === 'EDNS') {
    return new EmailSendError(
      `SMTP server ${server} cannot be reached or stopped answering (${err.code}: ${err.message ?? ''}).`,
      'KEEL_E_EMAIL_NETWORK',
    );
  }
  if (err.responseCode) return new EmailSendError(`SMTP server ${server} refused the mail: ${err.response ?? err.responseCode}`);
  return new EmailSendError(`sending mail through ${server} failed: ${err.message ?? String(e)}`);
}

export class Sender {
  constructor(
    private readonly config: ConfigView,
    private readonly store: EmailStore,
  ) {}

  async send(m: OutgoingMail): Promise<SendResult> {
    const s = emailSettings(this.config);
    const smtp = smtpSettings(this.config);
    if (!smtp.secure && !smtp.startTls && !isLoopback(smtp.host)) {
      throw new EmailConfigError(
        `smtpStartTls is false and smtpSecure is false: the SMTP password would cross the network to ${smtp.host} in clear. Enable one of them.`,
      );
    }
    const previous = m.deliveryKey ? this.store.byDeliveryKey(m.deliveryKey) : undefined;
    if (previous?.state === 'sent') return { messageId: previous.messageId, duplicate: true };
    const domain = s.address!.split('@')[1]!;
    const messageId = previous?.messageId ?? `<${randomUUID()}@${domain}>`;
    const references = (m.references ?? []).map(normalizeId);
    const inReplyTo = m.inReplyTo ? normalizeId(m.inReplyTo) : undefined;
    if (inReplyTo && !references.includes(inReplyTo)) references.push(inReplyTo);
    const thread = threadOf({ references, inReplyTo, messageId });
    if (m.auto) {
      const sent = this.store.autoRepliesSince(thread, Date.now() - 3_600_000);
      if (sent >= s.maxRepliesPerThreadPerHour) {
        throw new EmailSendError(
          `not sent: ${sent} automatic replies already went to this thread in the last hour (emailMaxRepliesPerThreadPerHour = ${s.maxRepliesPerThreadPerHour}).`,
          'KEEL_E_EMAIL_THREAD_LIMIT',
        );
      }
    }
    this.store.recordSending({
      messageId,
      thread,
      recipients: m.to.join(', '),
      auto: m.auto,
      ...(m.deliveryKey ? { deliveryKey: m.deliveryKey } : {}),
    });
    const server = `${smtp.host}:${smtp.port}`;
    // Loaded on first send: nodemailer is not needed by Keel processes that never send mail.
    const { createTransport } = await import('nodemailer');
    const transport = createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      requireTLS: !smtp.secure && smtp.startTls,
      auth: { user: smtp.user, pass: smtp.pass },
      tls: tlsOptions(s),
      connectionTimeout: s.socketTimeoutMs,
      greetingTimeout: s.socketTimeoutMs,
      socketTimeout: s.socketTimeoutMs,
      disableFileAccess: false,
      disableUrlAccess: true,
    });
    const abort = () => transport.close();
    m.signal?.addEventListener('abort', abort, { once: true });
    try {
      await transport.sendMail({
        from: s.fromName ? { name: s.fromName, address: s.address! } : s.address!,
        to: m.to,
        subject: m.subject,
        text: m.body.text,
        ...(m.body.html ? { html: m.body.html } : {}),
        messageId,
        ...(inReplyTo ? { inReplyTo } : {}),
        ...(references.length ? { references } : {}),
        ...(m.auto ? { headers: { 'Auto-Submitted': 'auto-replied' } } : {}),
        ...(m.attachments?.length ? { attachments: m.attachments } : {}),
      });
    } catch (e) {
      // Refused for certain: nothing was delivered, so the record would only block a later retry.
      if ((e as { responseCode?: number }).responseCode || (e as { code?: string }).code === 'EAUTH') this.store.forget(messageId);
      throw describe(e, server, smtp.user);
    } finally {
      m.signal?.removeEventListener('abort', abort);
      transport.close();
    }
    this.store.markSent(messageId);
    return { messageId, duplicate: false };
  }
}
