/**
 * The email keys, read at each use so a changed key applies to the next connection, and the TLS options built
 * from them: certificates are always verified; a private CA is added to the system roots, never replacing them.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import type { ConfigView } from '../../../sdk/index.js';

export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  startTls: boolean;
  user: string;
  pass: string;
}

export interface ImapSettings {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  pass: string;
}

export interface EmailSettings {
  address: string | undefined;
  fromName: string | undefined;
  defaultSubject: string;
  socketTimeoutMs: number;
  maxRepliesPerThreadPerHour: number;
  authServId: string | undefined;
  sweepIntervalMs: number;
  caFile: string | undefined;
}

const str = (c: ConfigView, k: string): string | undefined => {
  const v = c.get<unknown>(k);
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
};

export function emailSettings(c: ConfigView): EmailSettings {
  return {
    address: str(c, 'emailAddress')?.toLowerCase(),
    fromName: str(c, 'emailFromName'),
    defaultSubject: str(c, 'emailDefaultSubject') ?? 'keel response',
    socketTimeoutMs: c.get<number>('emailSocketTimeoutMs') ?? 15_000,
    maxRepliesPerThreadPerHour: c.get<number>('emailMaxRepliesPerThreadPerHour') ?? 3,
    authServId: str(c, 'emailAuthServId')?.toLowerCase(),
    sweepIntervalMs: c.get<number>('emailSweepIntervalMs') ?? 60_000,
    caFile: str(c, 'emailCaFile'),
  };
}

/** A configuration problem a user fixes by setting keys: the message names them. */
export class EmailConfigError extends Error {
  readonly code = 'KEEL_E_EMAIL_CONFIG';
}

function need(c: ConfigView, keys: string[], what: string): void {
  const missing = keys.filter((k) => str(c, k) === undefined);
  if (missing.length) throw new EmailConfigError(`${what} is not configured: set ${missing.join(', ')} (see docs/email.md).`);
}

export function smtpSettings(c: ConfigView): SmtpSettings {
  need(c, ['smtpHost', 'smtpUsername', 'smtpPassword', 'emailAddress'], 'Sending email');
  return {
    host: str(c, 'smtpHost')!,
    port: c.get<number>('smtpPort') ?? 587,
    secure: c.get<boolean>('smtpSecure') === true,
    startTls: c.get<boolean>('smtpStartTls') !== false,
    user: str(c, 'smtpUsername')!,
    pass: str(c, 'smtpPassword')!,
  };
}

export function imapSettings(c: ConfigView): ImapSettings {
  need(c, ['imapHost', 'imapUsername', 'imapPassword'], 'Reading email');
  return {
    host: str(c, 'imapHost')!,
    port: c.get<number>('imapPort') ?? 993,
    secure: c.get<boolean>('imapSecure') !== false,
    user: str(c, 'imapUsername')!,
    pass: str(c, 'imapPassword')!,
  };
}

const contexts = new Map<string, SecureContext>();

/**
 * TLS options for a server: verification on, the system roots plus `emailCaFile` when set. The host name is
 * checked against the certificate (an IP literal against its IP SAN). The context with the extra CA is built
 * once per file: parsing the ~140 system roots costs about 25 ms per connection otherwise.
 */
export function tlsOptions(s: EmailSettings): { rejectUnauthorized: true; minVersion: 'TLSv1.2'; secureContext?: SecureContext } {
  if (!s.caFile) return { rejectUnauthorized: true, minVersion: 'TLSv1.2' };
  let secureContext = contexts.get(s.caFile);
  if (!secureContext) {
    let pem: string;
    try {
      pem = readFileSync(s.caFile, 'utf8');
    } catch (e) {
      throw new EmailConfigError(`emailCaFile ${s.caFile} cannot be read: ${(e as Error).message}`);
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new EmailConfigError(`emailCaFile ${s.caFile} holds no PEM certificate`);
    secureContext = createSecureContext({ ca: [...rootCertificates, pem], minVersion: 'TLSv1.2' });
    contexts.set(s.caFile, secureContext);
  }
  return { rejectUnauthorized: true, minVersion: 'TLSv1.2', secureContext };
}
