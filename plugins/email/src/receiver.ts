/**
 * The inbound connection, run by the channel kit's supervised connection (`defineChannel`'s `connection`: states,
 * backoff with jitter, stall watchdog, one final stop on errors retrying cannot fix, one process per mailbox through
 * its connection lock (MailboxLock), a Redis lease when the queue is shared):
 * IMAP IDLE on INBOX (new mail is pushed as EXISTS) and a periodic sweep as a fallback for servers whose IDLE
 * goes quiet. The sweep is also the heartbeat: each answered search is a sign of life, and a command the server
 * does not answer within twice the socket timeout drops the connection (imapflow alone cannot see a server that
 * hangs while the connection idles: breaking IDLE waits forever).
 *
 * The cursor (UIDVALIDITY + last UID taken in) is durable: a mail is recorded and the cursor moved in one
 * transaction (TakeIn), so a restart continues exactly after the last mail taken in. On the very first start the
 * cursor is set to the newest mail already there: the backlog is left alone (docs/email.md).
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { ImapFlow } from 'imapflow';
import type { ConfigView, Logger } from '../../../sdk/index.js';
import {
  type ChannelAdapter,
  type ConnectionHooks,
  type ConnectionLock,
  connectionLock,
  type LeaseHold,
  type LockResult,
} from '../../../sdk/channel-kit/index.js';
import { describeImapError, imapClient } from './imap.js';
import { EmailConfigError, emailSettings, imapSettings } from './settings.js';

const coded = errorsFor('email');

const MAILBOX = 'INBOX';

/** Where the receiver stands in INBOX: its UIDVALIDITY and the last UID taken in. */
export interface Cursor {
  uidValidity: string;
  lastUid: number;
}

export interface CursorStore {
  get(): Cursor | undefined;
  set(c: Cursor): void;
}

export interface Fetched {
  uid: number;
  source: Buffer;
}

/** Takes one new mail in; must record it and move the cursor to `cursor` (one transaction) before resolving. */
export type TakeIn = (mail: Fetched, cursor: Cursor) => Promise<void>;

/**
 * The mailbox's connection lock: the kit's `connectionLock` for the IMAP server and user configured when it is
 * taken (a change of imapHost or imapUsername takes the new mailbox's lock at the next connection). Without a usable
 * IMAP configuration there is nothing to lock: the connection then fails with the configuration's error.
 */
export class MailboxLock implements ConnectionLock {
  private current: { credential: string; lock: ConnectionLock } | undefined;

  constructor(private readonly ctx: { config: ConfigView; home: string }) {}

  async acquire(): Promise<LockResult> {
    let credential: string;
    try {
      const imap = imapSettings(this.ctx.config);
      credential = `${imap.host}:${imap.port}:${imap.user}`;
    } catch {
      await this.release();
      return { ok: true };
    }
    if (this.current?.credential !== credential) {
      await this.release();
      this.current = { credential, lock: connectionLock(this.ctx, 'email', credential) };
    }
    return this.current.lock.acquire();
  }

  async release(): Promise<void> {
    await this.current?.lock.release();
  }

  watch(lost: (why: string) => void): void {
    this.current?.lock.watch?.(lost);
  }

  hold(): LeaseHold | undefined {
    return this.current?.lock.hold?.();
  }

  async check(hold: LeaseHold): Promise<void> {
    await this.current?.lock.check?.(hold);
  }

  stale(hold: LeaseHold, why: string): void {
    this.current?.lock.stale?.(hold, why);
  }
}

/**
 * IMAP IDLE on INBOX with the periodic sweep: `connection()` is the kit's `connection` of the email channel.
 * `inbound()` is told of every mail looked at (for the status's `lastInboundAt`).
 */
export class Receiver {
  private client: ImapFlow | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  private sweepError: string | undefined;
  private uidValidity: string | undefined;
  private live: () => void = () => undefined;

  constructor(
    private readonly config: ConfigView,
    private readonly cursors: CursorStore,
    private readonly log: Logger,
    private readonly takeIn: TakeIn,
    private readonly inbound: () => void,
  ) {}

  /** The supervised connection, switched on by `emailEnabled`. */
  connection(): NonNullable<ChannelAdapter<unknown, never>['connection']> {
    const server = () => {
      try {
        const imap = imapSettings(this.config);
        return { server: `${imap.host}:${imap.port}`, user: imap.user };
      } catch {
        return { server: 'the IMAP server', user: 'the IMAP user' };
      }
    };
    return {
      enabled: () => this.config.get<boolean>('emailEnabled') === true,
      stallMs: () => {
        const s = emailSettings(this.config);
        return s.sweepIntervalMs + 2 * s.socketTimeoutMs;
      },
      backoff: { baseMs: 500, maxMs: 60_000 },
      fatal: (e) => {
        if (e instanceof EmailConfigError) return e.message;
        const { server: at, user } = server();
        const d = describeImapError(e, at, user);
        return d.fatal
          ? `${d.message} Receiving mail stopped; fix the configuration (a change of an imap* key starts it again).`
          : undefined;
      },
      connect: (signal, hooks) => this.connect(signal, hooks),
    };
  }

  /** One IMAP connection, from login until it drops (throws) or the supervisor aborts it. */
  private async connect(signal: AbortSignal, hooks: ConnectionHooks): Promise<void> {
    const { client, server } = await imapClient(this.config, { idle: true });
    client.on('error', (e: unknown) => this.log.debug(`email: IMAP connection error: ${(e as Error).message}`));
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    const onAbort = () => {
      const bye = client.usable ? client.logout().catch(() => undefined) : Promise.resolve();
      void Promise.race([bye, new Promise((r) => setTimeout(r, 1000).unref())]).finally(() => client.close());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    let sweepTimer: NodeJS.Timeout | undefined;
    try {
      await client.connect();
      const box = await client.mailboxOpen(MAILBOX);
      if (signal.aborted) throw signal.reason;
      this.uidValidity = box.uidValidity.toString();
      this.baseline(this.uidValidity, box.uidNext, box.exists);
      this.client = client;
      this.sweepError = undefined;
      this.live = hooks.live;
      hooks.connected(`to ${server} as ${imapSettings(this.config).user} (${MAILBOX})`);
      client.on('exists', () => this.sweep());
      sweepTimer = setInterval(() => this.sweep(), emailSettings(this.config).sweepIntervalMs);
      sweepTimer.unref();
      this.sweep();
      await closed;
      if (signal.aborted) throw signal.reason;
      throw coded('KEEL_E_PROVIDER_FAILED', this.sweepError ?? `IMAP connection to ${server} closed`);
    } finally {
      clearInterval(sweepTimer);
      signal.removeEventListener('abort', onAbort);
      if (this.client === client) this.client = undefined;
      await this.sweeping?.catch(() => undefined);
      client.close();
    }
  }

  private baseline(uidValidity: string, uidNext: number, exists: number): void {
    const c = this.cursors.get();
    if (c && c.uidValidity === uidValidity) return;
    this.cursors.set({ uidValidity, lastUid: Math.max(0, uidNext - 1) });
    if (!c)
      this.log.info(
        `email: first start on this mailbox: the ${exists} mails already in ${MAILBOX} are not answered; new mail from now on is.`,
      );
    else
      this.log.warn(
        `email: ${MAILBOX} was recreated on the server (UIDVALIDITY ${c.uidValidity} -> ${uidValidity}); starting after its newest mail.`,
      );
  }

  /** Looks for mail after the cursor; one sweep at a time, and one more when asked during a sweep. */
  sweep(): void {
    if (this.sweeping) {
      this.again = true;
      return;
    }
    const client = this.client;
    if (!client) return;
    this.sweeping = this.sweepOnce(client)
      .catch((e: unknown) => {
        if (this.client !== client) return;
        this.sweepError = `checking for new mail failed: ${(e as Error).message}`;
        // A command that failed leaves the connection in doubt: drop it (the supervisor reconnects).
        client.close();
      })
      .finally(() => {
        this.sweeping = undefined;
        if (this.again && this.client) {
          this.again = false;
          this.sweep();
        }
      });
  }

  /** A command the server must answer within twice the socket timeout. */
  private answered<T>(p: Promise<T>, what: string): Promise<T> {
    const ms = 2 * emailSettings(this.config).socketTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`IMAP server did not answer ${what} within ${ms} ms`)), ms);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  private async sweepOnce(client: ImapFlow): Promise<void> {
    const uidValidity = this.uidValidity;
    const cursor = this.cursors.get();
    if (!uidValidity || !cursor) return;
    const found = await this.answered(client.search({ uid: `${cursor.lastUid + 1}:*` }, { uid: true }), 'a search');
    this.live();
    const uids = (found || []).filter((u) => u > cursor.lastUid).sort((a, b) => a - b);
    for (const uid of uids) {
      if (this.client !== client) return;
      const msg = await this.answered(client.fetchOne(String(uid), { uid: true, source: true }, { uid: true }), 'a fetch');
      this.live();
      if (!msg || !msg.source) continue;
      await this.takeIn({ uid, source: msg.source }, { uidValidity, lastUid: uid });
      this.inbound();
    }
  }
}
