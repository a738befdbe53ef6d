/**
 * Email benchmarks against a private dovecot on 127.0.0.1 (the test servers of test/plugins/email):
 * - a mail appended on the server to a durable action in Keel's queue (IDLE), p50 and p99, beside a bare
 *   imapflow client idling on the same mailbox and fetching the new mail (what any IMAP receiver has to do);
 * - search_emails over a 10,000-message mailbox, beside the same SEARCH + FETCH with a bare imapflow client.
 * Run alone: `npx tsx bench/email.ts`. Without dovecot (and no way to install it) it says so and reports nothing.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { ImapFlow } from 'imapflow';
import { bootEmail, cleanup, emailConfig } from '../test/plugins/email/harness.js';
import { dovecotProblem, makeCa, rawMail, startDovecot, type TestImap } from '../test/plugins/email/servers.js';
import { type BenchRow, median, printRows } from './lib.js';

const ROUNDS = 40;
const MAILBOX_SIZE = 10_000;

function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]!;
}

async function bareIdle(imap: TestImap, caFile: string): Promise<{ client: ImapFlow; next(): Promise<void> }> {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: imap.port,
    secure: true,
    auth: { user: imap.user, pass: imap.pass },
    tls: { ca: readFileSync(caFile, 'utf8') },
    logger: false,
    autoIdleDelay: 200,
  });
  client.on('error', () => undefined);
  await client.connect();
  await client.mailboxOpen('INBOX');
  let waiter: (() => void) | undefined;
  client.on('exists', () => {
    void (async () => {
      const m = await client.fetchOne('*', { uid: true, source: true });
      if (m && m.source) waiter?.();
    })();
  });
  return {
    client,
    next: () =>
      new Promise<void>((resolve) => {
        waiter = resolve;
      }),
  };
}

export async function benchEmail(): Promise<BenchRow[]> {
  const problem = dovecotProblem();
  if (problem) {
    console.log(`  (email benchmarks skipped: ${problem})`);
    return [];
  }
  const ca = makeCa();
  const imap = await startDovecot(ca);
  const rows: BenchRow[] = [];
  try {
    // ---- inbound: append -> durable action, against a bare IDLE client, alternating rounds
    const k = await bootEmail({
      config: { ...emailConfig({ ca, imap }), emailEnabled: true, emailAutoReplyEnabled: true, emailSweepIntervalMs: 3_600_000 },
    });
    const start = Date.now();
    while (k.channel().status().state !== 'connected') {
      if (Date.now() - start > 15_000) throw new Error('email did not connect');
      await new Promise((r) => setTimeout(r, 20));
    }
    let wanted = '';
    let done: (() => void) | undefined;
    k.kernel.hooks.actionQueued.tapPromise('bench', async (a) => {
      if (wanted && a.task.includes(wanted)) done?.();
    });
    const keel: number[] = [];
    const bare: number[] = [];
    const peer = await bareIdle(imap, ca.caFile);
    // One connection delivers every mail, so neither side's figure includes a login.
    const sender = new ImapFlow({
      host: '127.0.0.1',
      port: imap.port,
      secure: true,
      auth: { user: imap.user, pass: imap.pass },
      tls: { ca: readFileSync(ca.caFile, 'utf8') },
      logger: false,
      disableAutoIdle: true,
    });
    sender.on('error', () => undefined);
    await sender.connect();
    const append = (raw: string) => sender.append('INBOX', raw);
    await new Promise((r) => setTimeout(r, 500));
    for (let i = 0; i < ROUNDS; i++) {
      // Keel (the bare client also sees this mail; its waiter is not armed).
      wanted = `bench-keel-${i}`;
      const queued = new Promise<void>((r) => {
        done = r;
      });
      let t = performance.now();
      await append(rawMail({ from: 'Ada <ada@example.org>', subject: wanted }));
      await queued;
      keel.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 300));
      // Bare imapflow.
      wanted = '';
      const seen = peer.next();
      t = performance.now();
      await append(rawMail({ from: 'Ada <ada@example.org>', subject: `bench-bare-${i}` }));
      await seen;
      bare.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 300));
    }
    await peer.client.logout().catch(() => peer.client.close());
    await sender.logout().catch(() => sender.close());
    rows.push(
      {
        name: 'email inbound: append to durable action (IDLE), p50',
        value: median(keel),
        unit: 'ms',
        peer: 'bare imapflow IDLE + fetch, p50',
        peerValue: median(bare),
        budget: 'reported',
        ok: true,
      },
      {
        name: 'email inbound: append to durable action (IDLE), p99',
        value: p99(keel),
        unit: 'ms',
        peer: 'bare imapflow IDLE + fetch, p99',
        peerValue: p99(bare),
        budget: 'reported',
        ok: true,
      },
    );
    await k.stop();

    // ---- search over 10,000 messages
    const now = Date.now();
    const raws: string[] = [];
    for (let i = 0; i < MAILBOX_SIZE; i++) {
      const needle = i % 1000 === 7 ? ' needle-marker' : '';
      raws.push(
        rawMail({
          from: `Sender ${i % 50} <sender${i % 50}@example.org>`,
          subject: `Report ${i}`,
          body: `Body of message ${i}. Status green, nothing to add${needle}.`,
          date: new Date(now - (MAILBOX_SIZE - i) * 60_000),
        }),
      );
    }
    imap.deliverToMaildir(raws);
    const s = await bootEmail({ config: emailConfig({ ca, imap }) });
    // Dovecot indexes the new Maildir files on first access; neither side should pay that.
    await s.call('search_emails', { limit: 1 });
    const tls = { ca: readFileSync(ca.caFile, 'utf8') };
    const keelSearch: number[] = [];
    const bareSearch: number[] = [];
    const cases: Array<Record<string, unknown>> = [{ sender: 'sender7@example.org' }, { query: 'needle-marker' }, { subject: 'Report 99' }];
    let count = 0;
    for (let i = 0; i < 5; i++) {
      for (const c of cases) {
        let t = performance.now();
        const out = await s.call('search_emails', c);
        keelSearch.push(performance.now() - t);
        count = Number(/^(\d+) emails?/.exec(out)?.[1] ?? 0);
        t = performance.now();
        const client = new ImapFlow({
          host: '127.0.0.1',
          port: imap.port,
          secure: true,
          auth: { user: imap.user, pass: imap.pass },
          tls,
          logger: false,
          disableAutoIdle: true,
        });
        client.on('error', () => undefined);
        await client.connect();
        await client.mailboxOpen('INBOX', { readOnly: true });
        const crit = c.sender ? { from: c.sender as string } : c.query ? { body: c.query as string } : { subject: c.subject as string };
        const uids = ((await client.search(crit, { uid: true })) || []).sort((a, b) => b - a).slice(0, 10);
        for await (const m of client.fetch(uids.join(','), { uid: true, source: true }, { uid: true })) void m;
        await client.logout();
        bareSearch.push(performance.now() - t);
      }
      if (i === 0 && count === 0) throw new Error('search_emails found nothing in the benchmark mailbox');
    }
    rows.push({
      name: `search_emails over ${MAILBOX_SIZE} messages (median of ${keelSearch.length})`,
      value: median(keelSearch),
      unit: 'ms',
      peer: 'bare imapflow connect + SEARCH + FETCH',
      peerValue: median(bareSearch),
      budget: 'reported',
      ok: true,
    });
    await s.stop();
  } finally {
    await cleanup();
    await imap.stop();
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchEmail());
}
