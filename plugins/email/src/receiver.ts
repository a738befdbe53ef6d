/**
 * The inbound connection: IMAP IDLE on INBOX (new mail is pushed as EXISTS), a periodic sweep as a fallback for
 * servers whose IDLE goes quiet, reconnection with backoff and jitter, and a final stop with one clear error when
 * retrying cannot help (a refused login, a certificate that does not verify).
 *
 * The cursor (UIDVALIDITY + last UID taken in) is durable: a mail is recorded and the cursor moved in one
 * transaction (TakeIn), so a restart continues exactly after the last mail taken in. One Keel process receives a
 * mailbox at a time (the kit's OwnerLock). On the very first start the cursor
 * is set to the newest mail already there: the backlog is left alone (docs/email.md).
 */
import type { ImapFlow } from 'imapflow';
import type { ChannelStatus, ConfigView, Logger } from '../../../sdk/index.js';
import { describeImapError, imapClient } from './imap.js';
import { OwnerLock } from '../../../sdk/channel-kit/index.js';
import { emailSettings, imapSettings } from './settings.js';

/** Where the receiver stands in INBOX: its UIDVALIDITY and the last UID taken in. */
export interface Cursor {
  uidValidity: string;
  lastUid: number;
}

export interface CursorStore {
  get(): Cursor | undefined;
  set(c: Cursor): void;
}

const MAILBOX = 'INBOX';

export interface Fetched {
  uid: number;
  source: Buffer;
}

/** Takes one new mail in; must record it and move the cursor to `cursor` (one transaction) before resolving. */
export type TakeIn = (mail: Fetched, cursor: Cursor) => Promise<void>;

export class Receiver {
  private client: ImapFlow | undefined;
  private state: NonNullable<ChannelStatus['state']> = 'stopped';
  private stopping = false;
  private reconnects = 0;
  private attempt = 0;
  private lastError: string | undefined;
  private lastInboundAt: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  private uidValidity: string | undefined;
  private lock: OwnerLock | undefined;
  private lockTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: ConfigView,
    private readonly cursors: CursorStore,
    private readonly log: Logger,
    private readonly takeIn: TakeIn,
    private readonly home: string,
  ) {}

  status(): Pick<ChannelStatus, 'connected' | 'state' | 'reconnects' | 'lastError' | 'lastInboundAt'> {
    return {
      connected: this.state === 'connected',
      state: this.state,
      reconnects: this.reconnects,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.lastInboundAt ? { lastInboundAt: this.lastInboundAt } : {}),
    };
  }

  start(): void {
    this.stopping = false;
    this.state = 'connecting';
    let mailbox: string;
    try {
      const imap = imapSettings(this.config);
      mailbox = `${imap.host}:${imap.port}:${imap.user}`;
    } catch (e) {
      return this.fail((e as Error).message);
    }
    this.lock = new OwnerLock(this.home, 'email', mailbox);
    this.takeLock();
  }

  /** Receives only while holding the mailbox's lock; a second process waits and takes over when the first ends. */
  private takeLock(): void {
    if (this.stopping || !this.lock) return;
    const r = this.lock.acquire();
    if (r.ok) {
      void this.connect();
      return;
    }
    const message = `another Keel process (pid ${r.ownerPid}) receives this mailbox; this one waits`;
    if (this.lastError !== message) this.log.info(`email: ${message}.`);
    this.lastError = message;
    this.state = 'stopped';
    this.lockTimer = setTimeout(() => this.takeLock(), 5_000);
    this.lockTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.state = 'stopped';
    clearTimeout(this.timer);
    clearTimeout(this.lockTimer);
    clearInterval(this.sweepTimer);
    const c = this.client;
    this.client = undefined;
    await this.sweeping?.catch(() => undefined);
    if (c) await Promise.race([c.logout().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]).finally(() => c.close());
    this.lock?.release();
    this.lock = undefined;
  }

  private async connect(): Promise<void> {
    if (this.stopping) return;
    let made: ReturnType<typeof imapClient>;
    try {
      made = imapClient(this.config, { idle: true });
    } catch (e) {
      return this.fail((e as Error).message);
    }
    const { client, server, user } = made;
    this.client = client;
    client.on('error', (e: unknown) => this.log.debug(`email: IMAP connection error: ${(e as Error).message}`));
    client.on('exists', () => this.sweep());
    client.on('close', () => {
      if (this.client !== client || this.stopping) return;
      this.client = undefined;
      clearInterval(this.sweepTimer);
      this.retry(this.lastError ?? `IMAP connection to ${server} closed`);
    });
    try {
      await client.connect();
      const box = await client.mailboxOpen(MAILBOX);
      this.uidValidity = box.uidValidity.toString();
      this.baseline(box.uidValidity.toString(), box.uidNext, box.exists);
    } catch (e) {
      const d = describeImapError(e, server, user);
      if (this.client === client) this.client = undefined;
      client.close();
      if (d.fatal) return this.fail(d.message);
      return this.retry(d.message);
    }
    if (this.client !== client || this.stopping) return;
    this.state = 'connected';
    this.attempt = 0;
    if (this.lastError) this.log.info(`email: IMAP connected again to ${server}`);
    this.lastError = undefined;
    const every = emailSettings(this.config).sweepIntervalMs;
    this.sweepTimer = setInterval(() => this.sweep(), every);
    this.sweepTimer.unref();
    this.sweep();
  }

  private baseline(uidValidity: string, uidNext: number, exists: number): void {
    const c = this.cursors.get();
    if (c && c.uidValidity === uidValidity) return;
    this.cursors.set({ uidValidity, lastUid: Math.max(0, uidNext - 1) });
    if (!c) this.log.info(`email: first start on this mailbox: the ${exists} mails already in ${MAILBOX} are not answered; new mail from now on is.`);
    else this.log.warn(`email: ${MAILBOX} was recreated on the server (UIDVALIDITY ${c.uidValidity} -> ${uidValidity}); starting after its newest mail.`);
  }

  private fail(message: string): void {
    this.state = 'failed';
    this.lastError = message;
    this.log.error(`email: ${message} Receiving mail stopped; fix the configuration (a change of an imap* key starts it again).`);
  }

  private retry(message: string): void {
    if (this.stopping) return;
    if (message !== this.lastError) this.log.warn(`email: ${message}; reconnecting.`);
    this.lastError = message;
    this.state = 'reconnecting';
    this.reconnects++;
    const base = Math.min(60_000, 500 * 2 ** this.attempt++);
    this.timer = setTimeout(() => void this.connect(), base / 2 + Math.random() * (base / 2));
    this.timer.unref();
  }

  /** Looks for mail after the cursor; one sweep at a time, and one more when asked during a sweep. */
  sweep(): void {
    if (this.sweeping) {
      this.again = true;
      return;
    }
    this.sweeping = this.sweepOnce()
      .catch((e: unknown) => {
        if (!this.stopping) {
          this.lastError = (e as Error).message;
          this.log.warn(`email: checking for new mail failed: ${(e as Error).message}; reconnecting.`);
        }
        // A command that failed leaves the connection in doubt: start a fresh one.
        this.client?.close();
      })
      .finally(() => {
        this.sweeping = undefined;
        if (this.again && !this.stopping) {
          this.again = false;
          this.sweep();
        }
      });
  }

  /**
   * A command the server must answer within twice the socket timeout. imapflow's own timeout cannot see a server
   * that hangs while the connection idles (breaking IDLE waits forever), so the sweep is the stall watchdog.
   */
  private answered<T>(p: Promise<T>, what: string): Promise<T> {
    const ms = 2 * emailSettings(this.config).socketTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`IMAP server did not answer ${what} within ${ms} ms`)), ms);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  private async sweepOnce(): Promise<void> {
    const client = this.client;
    const uidValidity = this.uidValidity;
    if (!client || !uidValidity || this.state !== 'connected') return;
    const cursor = this.cursors.get();
    if (!cursor) return;
    const found = await this.answered(client.search({ uid: `${cursor.lastUid + 1}:*` }, { uid: true }), 'a search');
    const uids = (found || []).filter((u) => u > cursor.lastUid).sort((a, b) => a - b);
    for (const uid of uids) {
      if (this.stopping || this.client !== client) return;
      const msg = await this.answered(client.fetchOne(String(uid), { uid: true, source: true }, { uid: true }), 'a fetch');
      if (!msg || !msg.source) continue;
      await this.takeIn({ uid, source: msg.source }, { uidValidity, lastUid: uid });
      this.lastInboundAt = new Date().toISOString();
    }
  }
}
