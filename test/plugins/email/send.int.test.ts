/**
 * Sending through the real nodemailer against smtp-server on 127.0.0.1: STARTTLS and implicit TLS with a test CA,
 * AUTH, plain text and HTML bodies, threading headers, the recorded Message-ID, Auto-Submitted on automatic
 * replies, certificate verification, a wrong password and a hung server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootEmail, cleanup, emailConfig } from './harness.js';
import { testCa, startProxy, startSmtp, type TestCa, type TestSmtp } from './servers.js';

let ca: TestCa;
let starttls: TestSmtp;
let implicit: TestSmtp;

beforeAll(async () => {
  ca = testCa();
  starttls = await startSmtp(ca, { implicitTls: false });
  implicit = await startSmtp(ca, { implicitTls: true });
});

afterAll(async () => {
  await cleanup();
  await starttls.close();
  await implicit.close();
});

describe('send_email', () => {
  it('sends plain text over STARTTLS with AUTH, the default subject and a Message-ID Keel returns', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    const before = starttls.mails.length;
    const out = await k.call('send_email', { to: 'ada@example.org', message: 'Plain hello from Keel.' });
    const mail = starttls.mails[before]!;
    expect(mail.secure).toBe(true);
    expect(mail.user).toBe('keel@example.org');
    expect(mail.rcpt).toEqual(['ada@example.org']);
    expect(mail.parsed.subject).toBe('keel response');
    expect(mail.parsed.from?.text).toBe('"Keel" <keel@example.org>');
    expect(mail.parsed.text?.trim()).toBe('Plain hello from Keel.');
    expect(mail.parsed.html).toBe(false);
    expect(out).toContain(mail.parsed.messageId!);
    expect(mail.parsed.messageId).toMatch(/^<[0-9a-f-]{36}@example\.org>$/);
    // Sent by the operator, not an automatic reply.
    expect(mail.parsed.headers.get('auto-submitted')).toBeUndefined();
    await k.stop();
  });

  it('messageOut taps apply to mail: a redacting tap changes the body of send_email and of the channel send', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    k.kernel.hooks.messageOut.tapPromise('test-redact', async (m) => ({ ...m, text: m.text.replace(/sk-[a-z0-9]+/g, '[redacted]') }));
    await k.call('send_email', { to: 'ada@example.org', message: 'The key is sk-abc123.' });
    expect(starttls.mails.at(-1)!.parsed.text?.trim()).toBe('The key is [redacted].');
    await k.channel().send('ada@example.org', 'Again: sk-def456.');
    const mail = starttls.mails.at(-1)!;
    expect(mail.parsed.text).toContain('Again: [redacted].');
    expect(JSON.stringify(mail.parsed.html)).not.toContain('sk-def456');
    await k.stop();
  });

  it('sends HTML over implicit TLS with a generated text alternative', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: implicit, smtpImplicit: true }) });
    await k.call('send_email', {
      to: 'Ada <ada@example.org>, bob@example.org',
      subject: 'Quarterly numbers',
      message: '<html><body><h1>Numbers</h1><p>Revenue <b>grew</b> by 12%.</p><ul><li>North</li><li>South</li></ul></body></html>',
    });
    const mail = implicit.mails.at(-1)!;
    expect(mail.secure).toBe(true);
    expect(mail.rcpt).toEqual(['ada@example.org', 'bob@example.org']);
    expect(mail.parsed.subject).toBe('Quarterly numbers');
    expect(mail.parsed.html).toContain('<b>grew</b>');
    expect(mail.raw).toMatch(/multipart\/alternative/);
    expect(mail.parsed.text).toContain('Revenue grew by 12%.');
    expect(mail.parsed.text).not.toContain('<');
    expect(mail.parsed.text).toMatch(/North/);
    await k.stop();
  });

  it('threads with In-Reply-To and References (brackets added when missing)', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    await k.call('send_email', {
      to: 'ada@example.org',
      subject: 'Re: plan',
      message: 'Agreed.',
      inReplyTo: 'b2@ada.test',
      references: '<a1@ada.test> <b2@ada.test>',
    });
    const mail = starttls.mails.at(-1)!;
    expect(mail.parsed.inReplyTo).toBe('<b2@ada.test>');
    expect(mail.parsed.references).toEqual(['<a1@ada.test>', '<b2@ada.test>']);
    await k.stop();
  });

  it('work started by a mail may mail only its sender (no open relay), even a mail from an admin; the operator may mail anyone', async () => {
    const k = await bootEmail({ config: { ...emailConfig({ ca, smtp: starttls }), adminUsers: { email: ['boss@example.org'] } } });
    const stranger = { kind: 'user' as const, channel: 'email', userId: 'unverified:eve@evil.test', untrusted: true };
    const action = await k.kernel.queue.push({
      task: 'x',
      source: 'email',
      actor: stranger,
      metadata: { replyTo: { chatId: 'eve@evil.test' } },
    });
    const before = starttls.mails.length;
    const refused = await k.kernel.execute('send_email', { to: 'victim@example.com', message: 'spam' }, stranger, { action });
    expect(refused.success).toBe(false);
    expect(refused.code).toBe('KEEL_E_FORBIDDEN');
    // The kernel's rule for outbound skills on untrusted work (every mail is) refuses it before the plugin's own check.
    expect(refused.result).toMatch(/may only answer the requester \(email eve@evil\.test\), not email victim@example\.com/);
    expect(starttls.mails.length).toBe(before);
    const ok = await k.kernel.execute('send_email', { to: 'eve@evil.test', message: 'answer' }, stranger, { action });
    expect(ok.success, ok.result).toBe(true);
    const boss = { kind: 'user' as const, channel: 'email', userId: 'boss@example.org', untrusted: true };
    const bossAction = await k.kernel.queue.push({
      task: 'x',
      source: 'email',
      actor: boss,
      metadata: { replyTo: { chatId: 'boss@example.org' } },
    });
    // A mail's words may be someone else's (a forward, a quote): even an admin's mail may only be answered.
    const forward = await k.kernel.execute('send_email', { to: 'team@example.org', message: 'fwd' }, boss, { action: bossAction });
    expect(forward).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    const answer = await k.kernel.execute('send_email', { to: 'boss@example.org', message: 'done' }, boss, { action: bossAction });
    expect(answer.success, answer.result).toBe(true);
    const operator = { kind: 'operator' as const, channel: 'cli' };
    const byOperator = await k.kernel.execute('send_email', { to: 'team@example.org', message: 'fwd' }, operator);
    expect(byOperator.success, byOperator.result).toBe(true);
    // Sent within work a mail started (the answer before): an automatic reply.
    expect(starttls.mails.at(-2)!.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(starttls.mails.at(-1)!.parsed.headers.get('auto-submitted')).toBeUndefined();
    await k.stop();
  });

  it('rejects a malformed recipient with a clear error and sends nothing', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    const before = starttls.mails.length;
    const r = await k.fail('send_email', { to: 'not-an-address', message: 'x' });
    expect(r.result).toMatch(/"not-an-address" is not an email address/);
    expect(starttls.mails.length).toBe(before);
    await k.stop();
  });

  it('names the keys to set when SMTP is not configured', async () => {
    const k = await bootEmail({ config: { emailAddress: 'keel@example.org' } });
    const r = await k.fail('send_email', { to: 'ada@example.org', message: 'x' });
    expect(r.result).toMatch(/Sending email is not configured: set smtpHost, smtpUsername, smtpPassword/);
    await k.stop();
  });

  it('a wrong password gives one clear error without the password, and one login attempt', async () => {
    const k = await bootEmail({ config: { ...emailConfig({ ca, smtp: starttls }), smtpPassword: 'wrong-password-123' } });
    const before = starttls.authFailures;
    const r = await k.fail('send_email', { to: 'ada@example.org', message: 'x' });
    expect(r.result).toMatch(/SMTP login refused for keel@example.org at 127\.0\.0\.1:\d+: check smtpUsername and smtpPassword/);
    expect(r.result).not.toContain('wrong-password-123');
    expect(starttls.authFailures - before).toBe(1);
    expect(k.logs().join('\n')).not.toContain('wrong-password-123');
    await k.stop();
  });

  it('verifies certificates: a server whose CA is not trusted is refused (no way to switch verification off)', async () => {
    const k = await bootEmail({ config: { ...emailConfig({ ca, smtp: starttls }), emailCaFile: ca.otherCaFile } });
    const before = starttls.mails.length;
    const r = await k.fail('send_email', { to: 'ada@example.org', message: 'x' });
    expect(r.result).toMatch(/TLS with 127\.0\.0\.1:\d+ failed: .*emailCaFile/);
    expect(starttls.mails.length).toBe(before);
    await k.stop();
  });

  it('gives up on a server that stops answering after emailSocketTimeoutMs', async () => {
    const proxy = await startProxy(starttls.port);
    const k = await bootEmail({ config: { ...emailConfig({ ca, smtp: starttls }), smtpPort: proxy.port, emailSocketTimeoutMs: 1000 } });
    // Freeze the connection right after the client opens it (before the greeting gets through).
    const t = setInterval(() => proxy.freeze(), 1);
    const r = await k.fail('send_email', { to: 'ada@example.org', message: 'x' });
    clearInterval(t);
    expect(r.result).toMatch(/SMTP server 127\.0\.0\.1:\d+ cannot be reached or stopped answering/);
    await k.stop();
    await proxy.close();
  });
});

describe('channel:email reply', () => {
  it('answers an action on its thread with Auto-Submitted, Re: subject, HTML + text', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    const action = await k.kernel.queue.push({
      task: 'x',
      source: 'email',
      metadata: {
        replyTo: {
          chatId: 'ada@example.org',
          messageId: '<q1@ada.test>',
          subject: 'Lunch?',
          references: ['<q0@ada.test>', '<q1@ada.test>'],
        },
      },
    });
    const before = starttls.mails.length;
    const sent = await k.channel().reply(action, 'Yes, **noon** works.\n\n| a | b |\n|---|---|\n| 1 | 2 |');
    const mail = starttls.mails.at(-1)!;
    expect(starttls.mails.length).toBe(before + 1);
    expect(mail.parsed.subject).toBe('Re: Lunch?');
    expect(mail.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(mail.parsed.inReplyTo).toBe('<q1@ada.test>');
    expect(mail.parsed.references).toEqual(['<q0@ada.test>', '<q1@ada.test>']);
    expect(mail.parsed.html).toContain('<strong>noon</strong>');
    expect(mail.parsed.html).toContain('<table>');
    expect(mail.parsed.text).toContain('Yes, noon works.');
    expect(mail.parsed.text).not.toContain('<');
    expect(sent.messageId).toBe(mail.parsed.messageId);
    await k.stop();
  });

  it('send() with the same idempotencyKey delivers once and returns the same Message-ID', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    const before = starttls.mails.length;
    const a = await k.channel().send('ada@example.org', 'once', { idempotencyKey: 'act_1:0' });
    const b = await k.channel().send('ada@example.org', 'once', { idempotencyKey: 'act_1:0' });
    expect(b.messageId).toBe(a.messageId);
    expect(starttls.mails.length - before).toBe(1);
    await k.stop();
  });

  it('escapes raw HTML in the Markdown (it may echo untrusted mail)', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    const action = await k.kernel.queue.push({
      task: 'x',
      source: 'email',
      metadata: { replyTo: { chatId: 'ada@example.org', subject: 's' } },
    });
    await k.channel().reply(action, 'Look: <img src="http://evil.test/track.png"> done');
    const mail = starttls.mails.at(-1)!;
    expect(mail.parsed.html).not.toContain('<img');
    expect(mail.parsed.html).toContain('&lt;img');
    await k.stop();
  });

  it('stops at emailMaxRepliesPerThreadPerHour automatic replies in one thread', async () => {
    const k = await bootEmail({ config: { ...emailConfig({ ca, smtp: starttls }), emailMaxRepliesPerThreadPerHour: 2 } });
    const before = starttls.mails.length;
    const replyTo = {
      chatId: 'ada@example.org',
      messageId: '<loop1@ada.test>',
      subject: 'ping',
      references: ['<root@ada.test>', '<loop1@ada.test>'],
    };
    for (let i = 0; i < 2; i++) {
      const a = await k.kernel.queue.push({ task: 'x', source: 'email', metadata: { replyTo } });
      await k.channel().reply(a, `pong ${i}`);
    }
    const a3 = await k.kernel.queue.push({ task: 'x', source: 'email', metadata: { replyTo } });
    await expect(k.channel().reply(a3, 'pong 3')).rejects.toThrow(/2 automatic replies already went to this thread in the last hour/);
    expect(starttls.mails.length - before).toBe(2);
    await k.stop();
  });

  it('status of email is listed by the channel capability', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp: starttls }) });
    expect(k.channel().status()).toEqual({ enabled: false, connected: false, state: 'stopped' });
    await k.stop();
  });
});
