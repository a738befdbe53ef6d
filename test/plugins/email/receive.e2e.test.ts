/**
 * Receiving through the real imapflow against dovecot on 127.0.0.1 (a mailbox of its own): IDLE, the durable
 * cursor across restarts, the backlog left alone on a first start, the loop rules, the Authentication-Results check for admins,
 * mail content handling (HTML, quotes, attachments), a hung server and a wrong password.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { startGateway } from '../gateway/harness.js';
import { bootEmail, cleanup, emailConfig, waitForActions, type EmailKernel } from './harness.js';
import { dovecotProblem, fileDovecot, rawMail, startProxy, startSmtp, type TestCa, type TestImap, type TestSmtp } from './servers.js';

const problem = dovecotProblem();
if (problem) console.warn(`email IMAP tests skipped: ${problem}`);

let ca: TestCa;
let imap: TestImap;
let smtp: TestSmtp;

beforeAll(async () => {
  if (problem) return;
  ({ ca, imap } = await fileDovecot());
  smtp = await startSmtp(ca, { implicitTls: false });
}, 60_000);

afterAll(async () => {
  await cleanup();
  await imap?.stop();
  await smtp?.close();
});

/** Receiving on, answering every mail, IDLE only (the sweep is an hour apart so it cannot be what finds mail). */
function receiving(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...emailConfig({ ca, imap, smtp }), emailEnabled: true, emailAutoReplyEnabled: true, emailSweepIntervalMs: 3_600_000, ...extra };
}

async function connected(k: EmailKernel): Promise<void> {
  await waitFor(() => k.channel().status().state === 'connected', 'IMAP connected', 20_000);
}

const ADA = 'Ada Lovelace <ada@example.org>';
const PROVEN = {
  'Authentication-Results':
    'mx.example.org; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=example.org; dmarc=pass header.from=example.org',
};

describe.skipIf(problem)('email receiving (dovecot)', () => {
  it('a first start leaves the backlog alone; new mail arrives through IDLE as an untrusted action with its reply address', async () => {
    await imap.append(rawMail({ from: ADA, subject: 'old mail 1' }));
    await imap.append(rawMail({ from: ADA, subject: 'old mail 2' }));
    const k = await bootEmail({ config: receiving() });
    await connected(k);
    expect(k.logs().join('\n')).toMatch(/first start on this mailbox: the \d+ mails already in INBOX are not answered/);
    const uid = await imap.append(
      rawMail({ from: ADA, subject: 'Budget question', messageId: '<budget-1@example.org>', body: 'Can you send the Q3 budget?' }),
    );
    const [a] = await waitForActions(k, 1);
    expect(k.actions()).toHaveLength(1);
    expect(a!.task).toContain('Subject: Budget question');
    expect(a!.task).toContain('Can you send the Q3 budget?');
    expect(a!.task).toContain(`UID: ${uid}`);
    expect(a!.task).toMatch(/untrusted content/);
    // No Authentication-Results: the sender is not proven, so not the identity it claims.
    expect(a!.metadata.actor).toMatchObject({ kind: 'user', channel: 'email', userId: 'unverified:ada@example.org', untrusted: true });
    expect(a!.metadata.replyTo).toMatchObject({
      chatId: 'ada@example.org',
      messageId: '<budget-1@example.org>',
      subject: 'Budget question',
      threadId: '<budget-1@example.org>',
    });
    expect(k.channel().status()).toMatchObject({ enabled: true, connected: true, state: 'connected' });
    expect(k.channel().status().lastInboundAt).toBeTruthy();

    // The reply goes back on the thread through SMTP.
    const sent = await k.channel().reply(a!, 'Here it is.');
    const out = smtp.mails.at(-1)!;
    expect(out.parsed.inReplyTo).toBe('<budget-1@example.org>');
    expect(out.parsed.subject).toBe('Re: Budget question');
    expect(out.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(sent.messageId).toBe(out.parsed.messageId);
    await k.stop();
  });

  it('a restart neither misses mail that arrived while stopped nor takes any mail twice', async () => {
    const k1 = await bootEmail({ config: receiving() });
    await connected(k1);
    await imap.append(rawMail({ from: ADA, subject: 'before restart' }));
    await waitForActions(k1, 1);
    await k1.stop();
    await imap.append(rawMail({ from: ADA, subject: 'while stopped 1' }));
    await imap.append(rawMail({ from: ADA, subject: 'while stopped 2' }));
    const k2 = await bootEmail({ config: receiving(), home: k1.home });
    await connected(k2);
    await imap.append(rawMail({ from: ADA, subject: 'after restart' }));
    const all = await waitForActions(k2, 4);
    // Let a second sweep run: nothing more may appear.
    await new Promise((r) => setTimeout(r, 500));
    const subjects = k2.actions().map((a) => /Subject: (.*)/.exec(a.task)![1]);
    expect(subjects).toEqual(['before restart', 'while stopped 1', 'while stopped 2', 'after restart']);
    expect(all).toHaveLength(4);
    await k2.stop();
  });

  it('a mail recorded but not handed over before a crash is handed over once at the next start', async () => {
    const k1 = await bootEmail({ config: receiving() });
    await connected(k1);
    await imap.append(rawMail({ from: ADA, subject: 'handled normally', messageId: '<normal@example.org>' }));
    await waitForActions(k1, 1);
    await k1.stop();
    // The state a crash leaves between "recorded with the cursor" and "queued": an ingress entry still recorded.
    // Its payload is a real one (the mail above) under a new Message-ID and subject.
    const db = new DatabaseSync(join(k1.home, 'channels', 'email', 'kit.db'));
    const row = db.prepare("SELECT payload FROM inbound WHERE message_id = '<normal@example.org>'").get() as { payload: string };
    const payload = JSON.parse(
      row.payload.replaceAll('handled normally', 'crash window').replaceAll('<normal@example.org>', '<crash@example.org>'),
    );
    db.prepare('INSERT INTO inbound (message_id, chat_id, payload, recorded_at) VALUES (?, ?, ?, ?)').run(
      '<crash@example.org>',
      'ada@example.org',
      JSON.stringify(payload),
      Date.now(),
    );
    db.close();
    const k2 = await bootEmail({ config: receiving(), home: k1.home });
    await waitForActions(k2, 2);
    await k2.stop();
    const k3 = await bootEmail({ config: receiving(), home: k1.home });
    await connected(k3);
    await imap.append(rawMail({ from: ADA, subject: 'next one' }));
    await waitFor(() => k3.actions().some((a) => a.task.includes('Subject: next one')), 'next mail');
    expect(k3.actions().map((a) => /Subject: (.*)/.exec(a.task)![1])).toEqual(['handled normally', 'crash window', 'next one']);
    await k3.stop();
  });

  it('while another live process holds the mailbox lock this one waits, and takes over when that process is gone', async () => {
    const k1 = await bootEmail({ config: receiving() });
    await connected(k1);
    await k1.stop();
    const lockDir = join(k1.home, 'channels', 'email');
    mkdirSync(lockDir, { recursive: true });
    const name = `owner-${createHash('sha256').update(`127.0.0.1:${imap.port}:${imap.user}`).digest('hex').slice(0, 12)}.lock`;
    // The parent of this test process is alive and is not this process.
    writeFileSync(join(lockDir, name), JSON.stringify({ pid: process.ppid }));
    const k2 = await bootEmail({ config: receiving(), home: k1.home });
    await waitFor(
      () => /Another Keel process \(pid \d+\) is connected with the same credentials/.test(k2.channel().status().lastError ?? ''),
      'the wait',
    );
    await imap.append(rawMail({ from: ADA, subject: 'held by the other' }));
    await new Promise((r) => setTimeout(r, 500));
    expect(k2.actions()).toHaveLength(0);
    expect(k2.channel().status().connected).toBe(false);
    unlinkSync(join(lockDir, name));
    await connected(k2);
    await waitForActions(k2, 1, 'the mail after taking over', 20_000);
    expect(readdirSync(lockDir).filter((f) => f.startsWith('owner-'))).toEqual([name]);
    await k2.stop();
    expect(readdirSync(lockDir).filter((f) => f.startsWith('owner-'))).toEqual([]);
  });

  it('the same mail delivered twice (same Message-ID) becomes one action', async () => {
    const k = await bootEmail({ config: receiving() });
    await connected(k);
    const raw = rawMail({ from: ADA, subject: 'delivered twice', messageId: '<twice@example.org>' });
    await imap.append(raw);
    await imap.append(raw);
    await imap.append(rawMail({ from: ADA, subject: 'marker' }));
    await waitFor(() => k.actions().some((a) => a.task.includes('Subject: marker')), 'marker mail');
    expect(k.actions().filter((a) => a.task.includes('Subject: delivered twice'))).toHaveLength(1);
    await k.stop();
  });

  it('never answers auto-replies, lists, bounces, no-reply senders, its own address or its own Message-IDs', async () => {
    const k = await bootEmail({ config: receiving() });
    await connected(k);
    // A Message-ID Keel sent itself (e.g. a copy of its own mail coming back).
    const own = await k.call('send_email', { to: 'ada@example.org', message: 'hello' });
    const ownId = /Message-ID: (<[^>]+>)/.exec(own)![1]!;
    const loops: Array<[string, Parameters<typeof rawMail>[0]]> = [
      ['auto-submitted', { from: ADA, subject: 'Out of office', headers: { 'Auto-Submitted': 'auto-replied' } }],
      ['auto-submitted', { from: ADA, subject: 'generated', headers: { 'Auto-Submitted': 'auto-generated' } }],
      ['auto-reply', { from: ADA, subject: 'vacation', headers: { 'X-Autoreply': 'yes' } }],
      ['auto-reply', { from: ADA, subject: 'exchange oof', headers: { 'X-Auto-Response-Suppress': 'All' } }],
      ['precedence', { from: ADA, subject: 'newsletter', headers: { Precedence: 'bulk' } }],
      ['precedence', { from: ADA, subject: 'list', headers: { Precedence: 'list' } }],
      ['precedence', { from: ADA, subject: 'junk', headers: { Precedence: 'junk' } }],
      ['mailing-list', { from: ADA, subject: 'list id', headers: { 'List-Id': '<dev.lists.example.org>' } }],
      ['mailing-list', { from: ADA, subject: 'unsubscribe', headers: { 'List-Unsubscribe': '<mailto:leave@lists.example.org>' } }],
      [
        'delivery-report',
        {
          from: 'Mail Delivery System <mailer-daemon@example.org>',
          subject: 'Undelivered',
          headers: { 'Content-Type': 'multipart/report; report-type=delivery-status; boundary="b1"' },
          body: '--b1\r\nContent-Type: text/plain\r\n\r\nfailed\r\n--b1--',
        },
      ],
      ['noreply-sender', { from: 'Shop <no-reply@shop.example.com>', subject: 'Your order' }],
      ['noreply-sender', { from: 'donotreply@bank.example.com', subject: 'Statement' }],
      ['null-sender', { from: ADA, subject: 'bounce', headers: { 'Return-Path': '<>' } }],
      ['own-address', { from: 'Keel <keel@example.org>', subject: 'from myself' }],
      ['own-message', { from: ADA, subject: 'own id back', messageId: ownId }],
    ];
    for (const [, m] of loops) await imap.append(rawMail(m));
    await imap.append(rawMail({ from: ADA, subject: 'a real question' }));
    await waitFor(() => k.actions().some((a) => a.task.includes('Subject: a real question')), 'the real question');
    await new Promise((r) => setTimeout(r, 300));
    expect(k.actions().map((a) => /Subject: (.*)/.exec(a.task)![1])).toEqual(['a real question']);
    const logs = k.logs().join('\n');
    for (const [reason, m] of loops) expect(logs, `${m.subject}: ${reason}`).toMatch(new RegExp(`from [^:]+: ${reason}\\.`));
    await k.stop();
  });

  it('after emailMaxRepliesPerThreadPerHour replies, new mail in that thread is not taken up', async () => {
    const k = await bootEmail({ config: receiving({ emailMaxRepliesPerThreadPerHour: 1 }) });
    await connected(k);
    await imap.append(rawMail({ from: ADA, subject: 'ping', messageId: '<t-root@example.org>' }));
    const [a] = await waitForActions(k, 1);
    await k.channel().reply(a!, 'pong');
    const pong = smtp.mails.at(-1)!.parsed.messageId!;
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'Re: ping',
        messageId: '<t-2@example.org>',
        headers: { 'In-Reply-To': pong, References: `<t-root@example.org> ${pong}` },
      }),
    );
    await imap.append(rawMail({ from: ADA, subject: 'other thread' }));
    await waitFor(() => k.actions().some((x) => x.task.includes('Subject: other thread')), 'other thread');
    expect(k.actions().map((x) => /Subject: (.*)/.exec(x.task)![1])).toEqual(['ping', 'other thread']);
    expect(k.logs().join('\n')).toMatch(/thread-limit/);
    await k.stop();
  });

  it('an admin From counts only with a passing Authentication-Results; a spoofed one is handled as a non-admin', async () => {
    const k = await bootEmail({ config: receiving({ adminUsers: { email: ['ada@example.org'] }, emailAuthServId: 'mx.example.org' }) });
    await connected(k);
    await imap.append(rawMail({ from: ADA, subject: 'spoofed, no header' }));
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'spoofed, dmarc fail',
        headers: {
          'Authentication-Results':
            'mx.example.org; dkim=fail header.d=example.org; spf=softfail smtp.mailfrom=evil.test; dmarc=fail header.from=example.org',
        },
      }),
    );
    // A pass for another domain (the attacker's own DKIM) proves nothing about example.org.
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'spoofed, unaligned dkim',
        headers: {
          'Authentication-Results':
            'mx.example.org; dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=evil.test; dmarc=fail header.from=example.org',
        },
      }),
    );
    // A header with another authserv-id (written by the sender) proves nothing.
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'spoofed, foreign authserv-id',
        headers: { 'Authentication-Results': 'attacker.test; dmarc=pass header.from=example.org' },
      }),
    );
    await imap.append(rawMail({ from: ADA, subject: 'proven', headers: PROVEN }));
    const acts = await waitForActions(k, 5);
    const bySubject = new Map(acts.map((a) => [/Subject: (.*)/.exec(a.task)![1], a]));
    const policy = k.kernel.registry.use<{ isAdmin(x: unknown): boolean }>('kernel:policy')!;
    for (const s of ['spoofed, no header', 'spoofed, dmarc fail', 'spoofed, unaligned dkim', 'spoofed, foreign authserv-id']) {
      const a = bySubject.get(s)!;
      expect(a.task, s).toMatch(/sender not proven/);
      expect(a.metadata.actor, s).toMatchObject({ userId: 'unverified:ada@example.org', untrusted: true });
      // The decision dispatch makes for every skill call of this action.
      expect(policy.isAdmin(a.metadata.actor), s).toBe(false);
    }
    const proven = bySubject.get('proven')!;
    expect(proven.task).not.toMatch(/sender not proven/);
    // Proven: the admin it claims to be (the mail's content is still marked untrusted).
    expect(proven.metadata.actor).toMatchObject({ userId: 'ada@example.org', untrusted: true });
    expect(policy.isAdmin(proven.metadata.actor)).toBe(true);
    await k.stop();
  });

  it('HTML mail is reduced to text, quoted history trimmed, attachments saved under downloads/ and listed', async () => {
    const k = await bootEmail({ config: receiving() });
    await connected(k);
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'html',
        html: '<html><body><p>Please <b>review</b> the draft.</p><script>alert(1)</script></body></html>',
      }),
    );
    await imap.append(
      rawMail({
        from: ADA,
        subject: 'Re: draft',
        body: 'Looks good to me.\r\n\r\nOn Mon, 3 Nov 2026 at 10:00, Keel <keel@example.org> wrote:\r\n> Here is the draft.\r\n> OLD-QUOTED-TEXT\r\n',
      }),
    );
    const boundary = 'mixed-b';
    await imap.append(
      [
        `From: ${ADA}`,
        'To: keel@example.org',
        'Subject: with attachment',
        `Message-ID: <att-1@example.org>`,
        'MIME-Version: 1.0',
        `Content-Type: multipart/mixed; boundary="${boundary}"`,
        '',
        `--${boundary}`,
        'Content-Type: text/plain; charset=utf-8',
        '',
        'See the attached notes.',
        `--${boundary}`,
        'Content-Type: text/plain; name="../../notes.txt"',
        'Content-Disposition: attachment; filename="../../notes.txt"',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from('ATTACHMENT-CONTENT').toString('base64'),
        `--${boundary}--`,
        '',
      ].join('\r\n'),
    );
    const acts = await waitForActions(k, 3);
    const [html, reply, att] = acts;
    expect(html!.task).toContain('Please review the draft.');
    expect(html!.task).not.toContain('<b>');
    expect(html!.task).not.toContain('alert(1)');
    expect(reply!.task).toContain('Looks good to me.');
    expect(reply!.task).not.toContain('OLD-QUOTED-TEXT');
    expect(att!.task).toContain('See the attached notes.');
    const files = att!.metadata.attachments as Array<{ path: string; name: string }>;
    expect(files).toHaveLength(1);
    expect(files[0]!.path.startsWith(`${k.home}/downloads/email/`)).toBe(true);
    expect(files[0]!.path).toMatch(/-notes\.txt$/);
    expect(readFileSync(files[0]!.path, 'utf8')).toBe('ATTACHMENT-CONTENT');
    expect(att!.task).toContain(`[attachment: ../../notes.txt`);
    await k.stop();
  });

  it('with emailAutoReplyEnabled off only /commands become actions', async () => {
    const k = await bootEmail({ config: receiving({ emailAutoReplyEnabled: false }) });
    await connected(k);
    await imap.append(rawMail({ from: ADA, subject: 'just chatting' }));
    await imap.append(rawMail({ from: ADA, subject: '/status', body: '' }));
    const [a] = await waitForActions(k, 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(k.actions()).toHaveLength(1);
    expect(a!.task).toContain('Subject: /status');
    await k.stop();
  });

  it('a server that stops answering is dropped after the socket timeout and reconnected; mail keeps arriving', async () => {
    const proxy = await startProxy(imap.port);
    const k = await bootEmail({ config: receiving({ imapPort: proxy.port, emailSocketTimeoutMs: 1000, emailSweepIntervalMs: 1000 }) });
    await connected(k);
    // Idling by now: the hard case, where breaking IDLE waits for an answer that never comes.
    await new Promise((r) => setTimeout(r, 600));
    proxy.freeze();
    await waitFor(() => (k.channel().status().reconnects ?? 0) >= 1, 'a reconnect', 20_000);
    await connected(k);
    await imap.append(rawMail({ from: ADA, subject: 'after the hang' }));
    await waitFor(() => k.actions().some((a) => a.task.includes('Subject: after the hang')), 'mail after the hang', 20_000);
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);
    await k.stop();
    await proxy.close();
  });

  it('GET /api/connections lists email with its connection status', async () => {
    const gw = await startGateway({ overrides: receiving() });
    try {
      const read = async () => ((await (await gw.req('/api/connections')).json()) as Record<string, { state?: string }>).email;
      await waitFor(async () => (await read())?.state === 'connected', 'email connected in /api/connections');
      expect(await read()).toMatchObject({ enabled: true, connected: true, state: 'connected', reconnects: 0 });
    } finally {
      await gw.close();
    }
  });

  it('a wrong password stops receiving with one clear error and no retry loop', async () => {
    const k = await bootEmail({ config: receiving({ imapPassword: 'wrong-imap-password' }) });
    await waitFor(() => k.channel().status().state === 'failed', 'failed state');
    const s = k.channel().status();
    expect(s.connected).toBe(false);
    expect(s.lastError).toMatch(/IMAP login refused for keel@example.org at 127\.0\.0\.1:\d+: check imapUsername and imapPassword/);
    await new Promise((r) => setTimeout(r, 1500));
    const errors = k.logs().filter((l) => /IMAP login refused/.test(l));
    expect(errors).toHaveLength(1);
    expect(k.channel().status().reconnects).toBe(0);
    expect(k.logs().join('\n')).not.toContain('wrong-imap-password');
    // The dovecot log shows a single failed login from this client.
    const log = `${imap.dir}/dovecot.log`;
    if (existsSync(log)) expect(readFileSync(log, 'utf8')).toMatch(/auth failed/);
    await k.stop();
  });

  it('fixing the password (a config change) starts receiving again', async () => {
    const { imapPassword: _, ...rest } = receiving();
    const k = await bootEmail({ config: rest, configYaml: 'imapPassword: wrong-imap-password\n' });
    await waitFor(() => k.channel().status().state === 'failed', 'failed state');
    await k.kernel.config.set('imapPassword', imap.pass, { kind: 'operator' });
    await connected(k);
    await imap.append(rawMail({ from: ADA, subject: 'after the fix' }));
    await waitFor(() => k.actions().some((a) => a.task.includes('Subject: after the fix')), 'mail after the fix');
    await k.stop();
  });
});
