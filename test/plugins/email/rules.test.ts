/**
 * The pure rules of the email channel: which mail is never answered, when Authentication-Results proves a sender,
 * how quoted history is trimmed, recipients and attachment names.
 */
import { describe, expect, it } from 'vitest';
import { authVerdict, parseAuthResults } from '../../../plugins/email/src/auth-results.js';
import { loopReason, type LoopCheckInput } from '../../../plugins/email/src/loop-guard.js';
import { safeName, trimQuoted } from '../../../plugins/email/src/parse.js';
import { parseRecipients, threadOf } from '../../../plugins/email/src/sender.js';
import { ADDRESS_PATTERN } from '../../../plugins/email/manifest.js';

function input(headers: Record<string, string>, from = 'ada@example.org', extra: Partial<LoopCheckInput> = {}): LoopCheckInput {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), [v]]));
  return { header: (n) => h[n] ?? [], from, messageId: '<m@x>', ownAddress: 'keel@example.org', isOwnMessageId: () => false, ...extra };
}

describe('loopReason', () => {
  it('lets an ordinary mail through, and Auto-Submitted: no', () => {
    expect(loopReason(input({}))).toBeUndefined();
    expect(loopReason(input({ 'Auto-Submitted': 'no' }))).toBeUndefined();
    expect(loopReason(input({ Precedence: 'first-class' }))).toBeUndefined();
  });
  it.each([
    [{ 'Auto-Submitted': 'auto-replied' }, 'auto-submitted'],
    [{ 'Auto-Submitted': 'auto-notified; owner-email="x@y"' }, 'auto-submitted'],
    [{ 'X-Autoreply': 'yes' }, 'auto-reply'],
    [{ 'X-Autorespond': 'vacation' }, 'auto-reply'],
    [{ 'X-Auto-Response-Suppress': 'OOF, AutoReply' }, 'auto-reply'],
    [{ Precedence: 'BULK' }, 'precedence'],
    [{ Precedence: 'junk' }, 'precedence'],
    [{ 'List-Id': 'x' }, 'mailing-list'],
    [{ 'List-Unsubscribe': '<https://x>' }, 'mailing-list'],
    [{ 'Content-Type': 'multipart/report; report-type=disposition-notification' }, 'delivery-report'],
    [{ 'Return-Path': '<>' }, 'null-sender'],
  ])('%o -> %s', (headers, reason) => {
    expect(loopReason(input(headers))).toBe(reason);
  });
  it('refuses no-reply style senders, its own address and its own Message-IDs', () => {
    for (const from of [
      'noreply@x.test',
      'no-reply+abc@x.test',
      'do_not_reply@x.test',
      'MAILER-DAEMON@x.test',
      'postmaster@x.test',
      'bounces@x.test',
      'shop-noreply@x.test',
    ]) {
      expect(loopReason(input({}, from.toLowerCase())), from).toBe('noreply-sender');
    }
    expect(loopReason(input({}, 'keel@example.org'))).toBe('own-address');
    expect(loopReason(input({}, 'ada@example.org', { isOwnMessageId: (id) => id === '<m@x>' }))).toBe('own-message');
    expect(loopReason(input({}, 'x', { from: undefined }))).toBe('no-sender');
    expect(loopReason(input({}, 'noreen@x.test'))).toBeUndefined();
  });
});

describe('authVerdict', () => {
  const pass = 'mx.example.org; dmarc=pass (p=reject) header.from=example.org';
  const MX = 'mx.example.org';
  it('DMARC pass for the From domain proves the sender', () => {
    expect(authVerdict([pass], 'ada@example.org', MX)).toEqual({ proven: true, detail: 'dmarc=pass' });
  });
  it('aligned DKIM or SPF proves it; unaligned does not', () => {
    expect(authVerdict(['mx.example.org; dkim=pass header.d=mail.example.org header.s=s1'], 'ada@example.org', MX).proven).toBe(true);
    expect(authVerdict(['mx.example.org; spf=pass smtp.mailfrom=bounce@example.org'], 'ada@example.org', MX).proven).toBe(true);
    expect(
      authVerdict(['mx.example.org; dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=evil.test'], 'ada@example.org', MX).proven,
    ).toBe(false);
    expect(authVerdict(['mx.example.org; dmarc=pass header.from=evil.test'], 'ada@example.org', MX).proven).toBe(false);
    expect(authVerdict(['mx.example.org; dmarc=fail header.from=example.org; dkim=none'], 'ada@example.org', MX).proven).toBe(false);
  });
  it('only the topmost header of the configured authserv-id counts; without one configured nothing is proven', () => {
    const forged = 'mx.example.org; dmarc=pass header.from=example.org';
    const real = 'mx.example.org; dmarc=fail header.from=example.org';
    // Our server's verdict is on top; a forged "pass" with our id further down (from the sender) does not count.
    expect(authVerdict([real, forged], 'ada@example.org', MX).proven).toBe(false);
    expect(authVerdict(['attacker.test; dmarc=pass header.from=example.org', real], 'ada@example.org', MX).proven).toBe(false);
    expect(authVerdict(['other.test; none', pass], 'ada@example.org', MX).proven).toBe(true);
    // A server that adds no header: the sender's forged header would be the topmost one.
    expect(authVerdict([pass], 'ada@example.org', undefined).proven).toBe(false);
    expect(authVerdict([], 'ada@example.org', MX)).toEqual({ proven: false, detail: 'no Authentication-Results from mx.example.org' });
  });
  it('parses comments, versions and quoted values', () => {
    const p = parseAuthResults(
      'mx.google.com 1; (a comment; with ;) dkim=pass (good) header.i="@example.org"; spf/1=neutral smtp.mailfrom=x@y',
    );
    expect(p.servId).toBe('mx.google.com');
    expect(p.results).toEqual([
      { method: 'dkim', result: 'pass', props: { 'header.i': '@example.org' } },
      { method: 'spf', result: 'neutral', props: { 'smtp.mailfrom': 'x@y' } },
    ]);
  });
});

describe('trimQuoted', () => {
  it('cuts at the quote header of common clients and trailing quote blocks', () => {
    expect(trimQuoted('Yes.\n\nOn Mon, 3 Nov 2026 at 10:00, Ada <a@x> wrote:\n> Lunch?')).toBe('Yes.');
    expect(trimQuoted('Yes.\n\nOn Mon, 3 Nov 2026 at 10:00, Ada Lovelace\n<a@x> wrote:\n> Lunch?')).toBe('Yes.');
    expect(trimQuoted('Ok\n\n-----Original Message-----\nFrom: Ada\nSent: today\nhi')).toBe('Ok');
    expect(trimQuoted('Ok\n\nFrom: Ada <a@x>\nSent: Monday\nTo: Keel\n\nold')).toBe('Ok');
    expect(trimQuoted('Fine\n> old line\n> older line\n')).toBe('Fine');
    expect(trimQuoted('Le lun. 3 nov. 2026, Ada a écrit :\n> x')).toBe('Le lun. 3 nov. 2026, Ada a écrit :\n> x');
  });
  it('keeps interleaved answers and a mail that is only a quote', () => {
    expect(trimQuoted('> question one\nanswer one\n> question two\nanswer two')).toBe(
      '> question one\nanswer one\n> question two\nanswer two',
    );
    expect(trimQuoted('> only quoted')).toBe('> only quoted');
  });
});

describe('recipients, threads, names', () => {
  it('parses recipient lists and refuses what is not an address', () => {
    expect(parseRecipients('Ada <Ada@Example.org>; bob@example.org')).toEqual(['ada@example.org', 'bob@example.org']);
    expect(() => parseRecipients('ada@example.org, nope')).toThrow(/"nope" is not an email address/);
    expect(() => parseRecipients(' , ')).toThrow(/no recipient/);
  });
  it('a thread is named by its root', () => {
    expect(threadOf({ references: ['<a>', '<b>'], inReplyTo: '<b>', messageId: '<c>' })).toBe('<a>');
    expect(threadOf({ inReplyTo: '<b>', messageId: '<c>' })).toBe('<b>');
    expect(threadOf({ messageId: '<c>' })).toBe('<c>');
  });
  it('the user-id form of adminUsers.email takes addresses, never the unverified: identity of an unproven sender', () => {
    const re = new RegExp(ADDRESS_PATTERN);
    for (const ok of ['ada@example.org', 'Ada.Lovelace+keel@mail.example.co.uk']) expect(re.test(ok), ok).toBe(true);
    for (const bad of ['unverified:ada@example.org', 'ada', 'ada@localhost', '<ada@example.org>', 'ada @example.org'])
      expect(re.test(bad), bad).toBe(false);
  });
  it('attachment names cannot leave their folder', () => {
    expect(safeName('../../etc/passwd')).toBe('passwd');
    expect(safeName('..\\..\\boot.ini')).toBe('boot.ini');
    expect(safeName('.hidden')).toBe('hidden');
    expect(safeName('')).toBe('attachment');
    expect(safeName('report (final).pdf')).toBe('report_final_.pdf');
  });
});
