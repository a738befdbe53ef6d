/**
 * Sending over SMTP with nodemailer: a mail is prepared once (`prepareMail`: its Message-ID, made by Keel, and its
 * threading headers) and then sent (`sendMail`), which records the Message-ID before the first byte goes out (so
 * Keel's own mail is recognised when it comes back), enforces the per-thread limit on automatic replies and marks
 * them `Auto-Submitted: auto-replied`, over verified TLS. The channel's sends and replies are ledgered by the
 * channel kit, one mail a chunk: a prepared mail is what the ledger keeps, so after a crash between the server's
 * acceptance and the ledger's mark the same Message-ID goes out again (docs/email.md).
 */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { ConfigView } from '../../../sdk/index.js';
import type { SendErrorDecision } from '../../../sdk/channel-kit/index.js';
import type { Body } from './render.js';
import { EmailConfigError, emailSettings, smtpSettings, tlsOptions } from './settings.js';
import type { EmailStore } from './store.js';

export interface OutgoingMail {
  subject: string;
  body: Body;
  inReplyTo?: string;
  references?: string[];
  /** An automatic reply: gets `Auto-Submitted: auto-replied` and counts against the per-thread limit. */
  auto: boolean;
  attachments?: Array<{ path: string }>;
}

/**
 * One mail as prepared before it is sent (and as the kit's delivery ledger keeps it): everything but the
 * recipients, which are the ledger's chat (the `to` of the send).
 */
export type PreparedMail = {
  messageId: string;
  subject: string;
  text: string;
  html?: string;
  inReplyTo?: string;
  /** Always holds `inReplyTo` when there is one. */
  references: string[];
  auto: boolean;
  attachments?: Array<{ path: string }>;
};

/**
 * An SMTP failure in words a user can act on (never the password). `transient`: the same mail may be tried again
 * (a 4xx answer, a connection that failed or stopped answering).
 */
export class EmailSendError extends Error {
  constructor(
    message: string,
    readonly code = 'KEEL_E_EMAIL_SEND',
    readonly transient = false,
  ) {
    super(message);
  }
}

/**
 * The kit's classification of a send's failure: an SMTP 4xx answer and a connection that could not be made or
 * stopped answering are tried again; a 5xx answer, a refused login, a certificate, the configuration and the
 * per-thread limit are final.
 */
export function classifySmtp(e: unknown): SendErrorDecision {
  return e instanceof EmailSendError && e.transient ? { retry: true } : { retry: false };
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

/** An SMTP failure in words (see EmailSendError). */
export function describeSmtpError(e: unknown, server: string, user: string): EmailSendError {
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
      true,
    );
  }
  if (err.responseCode) {
    return new EmailSendError(
      `SMTP server ${server} refused the mail: ${err.response ?? err.responseCode}`,
      'KEEL_E_EMAIL_SEND',
      err.responseCode >= 400 && err.responseCode < 500,
    );
  }
  return new EmailSendError(`sending mail through ${server} failed: ${err.message ?? String(e)}`);
}

/** Checks the SMTP configuration before anything is prepared or sent (a clear error naming the keys). */
export function checkSmtp(config: ConfigView): void {
  const smtp = smtpSettings(config);
  if (!smtp.secure && !smtp.startTls && !isLoopback(smtp.host)) {
    throw new EmailConfigError(
      `smtpStartTls is false and smtpSecure is false: the SMTP password would cross the network to ${smtp.host} in clear. Enable one of them.`,
    );
  }
}

/** A mail with its Message-ID (`<uuid@your-domain>`) and threading headers (the replied-to id appended to References). */
export function prepareMail(config: ConfigView, m: OutgoingMail): PreparedMail {
  checkSmtp(config);
  const domain = emailSettings(config).address!.split('@')[1]!;
  const references = (m.references ?? []).map(normalizeId);
  const inReplyTo = m.inReplyTo ? normalizeId(m.inReplyTo) : undefined;
  if (inReplyTo && !references.includes(inReplyTo)) references.push(inReplyTo);
  return {
    messageId: `<${randomUUID()}@${domain}>`,
    subject: m.subject,
    text: m.body.text,
    ...(m.body.html ? { html: m.body.html } : {}),
    ...(inReplyTo ? { inReplyTo } : {}),
    references,
    auto: m.auto,
    ...(m.attachments?.length ? { attachments: m.attachments } : {}),
  };
}

export class Sender {
  constructor(
    private readonly config: ConfigView,
    private readonly store: EmailStore,
  ) {}

  /** Prepares and sends one mail (send_email: not ledgered, each call is a new mail). */
  async send(m: OutgoingMail & { to: string[]; signal?: AbortSignal }): Promise<{ messageId: string }> {
    return { messageId: await this.sendMail(m.to, prepareMail(this.config, m), m.signal) };
  }

  /**
   * Sends a prepared mail to `to` and returns its Message-ID. Its Message-ID is recorded before it goes out; a mail
   * the server refused for certain is forgotten again. Sent again after a crash, it goes out with the same id.
   */
  async sendMail(to: string[], mail: PreparedMail, signal?: AbortSignal): Promise<string> {
    checkSmtp(this.config);
    const s = emailSettings(this.config);
    const smtp = smtpSettings(this.config);
    const { messageId, inReplyTo, references } = mail;
    const thread = threadOf({ references, inReplyTo, messageId });
    if (mail.auto) {
      // A mail sent again after a crash was recorded (and counted) the first time.
      const sent = this.store.autoRepliesSince(thread, Date.now() - 3_600_000) - (this.store.isOwnMessageId(messageId) ? 1 : 0);
      if (sent >= s.maxRepliesPerThreadPerHour) {
        throw new EmailSendError(
          `not sent: ${sent} automatic replies already went to this thread in the last hour (emailMaxRepliesPerThreadPerHour = ${s.maxRepliesPerThreadPerHour}).`,
          'KEEL_E_EMAIL_THREAD_LIMIT',
        );
      }
    }
    this.store.recordSending({ messageId, thread, recipients: to.join(', '), auto: mail.auto });
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
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await transport.sendMail({
        from: s.fromName ? { name: s.fromName, address: s.address! } : s.address!,
        to,
        subject: mail.subject,
        text: mail.text,
        ...(mail.html ? { html: mail.html } : {}),
        messageId,
        ...(inReplyTo ? { inReplyTo } : {}),
        ...(references.length ? { references } : {}),
        ...(mail.auto ? { headers: { 'Auto-Submitted': 'auto-replied' } } : {}),
        ...(mail.attachments?.length ? { attachments: mail.attachments } : {}),
      });
    } catch (e) {
      // Refused for certain: nothing was delivered, so the record would only block a later retry.
      if ((e as { responseCode?: number }).responseCode || (e as { code?: string }).code === 'EAUTH') this.store.forget(messageId);
      throw describeSmtpError(e, server, smtp.user);
    } finally {
      signal?.removeEventListener('abort', abort);
      transport.close();
    }
    this.store.markSent(messageId);
    return messageId;
  }
}
