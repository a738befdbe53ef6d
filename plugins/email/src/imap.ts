/**
 * One imapflow client built from the configuration, and the words for its failures. Used by the receiver (a
 * long-lived IDLE connection) and by the skills (a short connection per call).
 */
import type { ImapFlow } from 'imapflow';
import type { ConfigView } from '../../../sdk/index.js';
import { emailSettings, imapSettings, tlsOptions } from './settings.js';

/** imapflow is loaded on first use: it costs ~100 ms and tens of MB, and many Keel processes never read mail. */
export async function imapClient(config: ConfigView, opts: { idle: boolean }): Promise<{ client: ImapFlow; server: string; user: string }> {
  const { ImapFlow } = await import('imapflow');
  const s = emailSettings(config);
  const imap = imapSettings(config);
  const client = new ImapFlow({
    host: imap.host,
    port: imap.port,
    secure: imap.secure,
    // Without implicit TLS, STARTTLS is required (the password never crosses in clear); a loopback server may
    // offer none.
    ...(imap.secure ? {} : { doSTARTTLS: !/^(127\.|localhost$|::1$)/.test(imap.host) }),
    auth: { user: imap.user, pass: imap.pass },
    tls: tlsOptions(s),
    logger: false,
    connectionTimeout: s.socketTimeoutMs,
    greetingTimeout: s.socketTimeoutMs,
    // A silent socket gets a NOOP after this long (also while idling); one that stays silent is closed.
    socketTimeout: s.socketTimeoutMs,
    disableAutoIdle: !opts.idle,
    // IDLE right after the last command (imapflow waits 15 s by default): mail that arrives meanwhile would wait
    // for the sweep.
    ...(opts.idle ? { autoIdleDelay: 200 } : {}),
    clientInfo: { name: 'keel' },
  });
  return { client, server: `${imap.host}:${imap.port}`, user: imap.user };
}

/** An IMAP failure in words a user can act on (never the password); `fatal` when retrying cannot help. */
export function describeImapError(e: unknown, server: string, user: string): { message: string; fatal: boolean; code: string } {
  const err = e as { authenticationFailed?: boolean; code?: string; message?: string; responseText?: string };
  if (err.authenticationFailed) {
    return {
      message: `IMAP login refused for ${user} at ${server}: check imapUsername and imapPassword.`,
      fatal: true,
      code: 'KEEL_E_EMAIL_AUTH',
    };
  }
  const text = err.message ?? String(e);
  if (/certificate|self[- ]signed|unable to verify|altnames/i.test(text)) {
    return {
      message: `TLS with ${server} failed: ${text}. A private CA goes in emailCaFile; verification is never turned off.`,
      fatal: true,
      code: 'KEEL_E_EMAIL_TLS',
    };
  }
  if (
    err.code === 'ECONNREFUSED' ||
    err.code === 'ENOTFOUND' ||
    err.code === 'ETIMEOUT' ||
    err.code === 'CONNECT_TIMEOUT' ||
    err.code === 'ECONNRESET' ||
    err.code === 'NoConnection' ||
    err.code === 'GREETING_TIMEOUT'
  ) {
    return {
      message: `IMAP server ${server} cannot be reached or stopped answering (${err.code}).`,
      fatal: false,
      code: 'KEEL_E_EMAIL_NETWORK',
    };
  }
  return { message: `IMAP with ${server} failed: ${err.responseText ?? text}`, fatal: false, code: 'KEEL_E_EMAIL_IMAP' };
}

/** Runs `fn` on a fresh connection with INBOX open, and always logs out. */
export async function withMailbox<T>(
  config: ConfigView,
  fn: (client: ImapFlow) => Promise<T>,
  opts: { readOnly?: boolean } = {},
): Promise<T> {
  const { client, server, user } = await imapClient(config, { idle: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.mailboxOpen('INBOX', { readOnly: opts.readOnly ?? true });
  } catch (e) {
    client.close();
    const d = describeImapError(e, server, user);
    throw Object.assign(new Error(d.message), { code: d.code });
  }
  try {
    return await fn(client);
  } finally {
    await client.logout().catch(() => client.close());
  }
}
