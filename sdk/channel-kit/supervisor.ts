/**
 * Connection supervisor: runs a transport (a long-poll loop, a gateway socket) and keeps it alive. States
 * connecting → connected → reconnecting …; backoff with jitter between attempts; a stall watchdog that aborts a
 * connection that shows no sign of life for `stallMs` (a long poll that never answers, heartbeats that stop);
 * `restart(reason)` for a connection the transport finds broken otherwise; a final `failed` with one clear message
 * on an error retrying cannot fix (an invalid token).
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../types.js';
import type { ChannelStatus } from '../channel.js';
import type { ConnectionLock } from './lease.js';
import type { LockResult } from './owner-lock.js';

export type ConnectionState = NonNullable<ChannelStatus['state']>;

export interface SupervisorOptions {
  name: string;
  log: Logger;
  /**
   * Runs one connection until it fails (throws), ends (resolves: counted as a drop) or `signal` aborts.
   * Call `live()` on every sign of life (an answered poll, a heartbeat ack) and `connected(who)` once the
   * connection is up (after getMe / READY); `who` says as whom and where (`as @keel_bot (Telegram bot 42)`), for
   * the one info line of the first connection. Resolving with `'reconnect'` asks for a new connection at once (the
   * platform asked for it, e.g. Slack's `disconnect: refresh_requested`): no backoff, not counted as a drop.
   */
  connect(signal: AbortSignal, hooks: ConnectionHooks): Promise<void | 'reconnect'>;
  /** The message to stop with when `error` cannot be fixed by retrying (bad credentials), else undefined. */
  fatal(error: unknown): string | undefined;
  /**
   * No sign of life for this long aborts the connection and reconnects. A function is asked again on every check
   * (for transports that learn their heartbeat interval from the platform, like Discord's HELLO).
   */
  stallMs: number | (() => number);
  backoff?: { baseMs?: number; maxMs?: number };
  /** Only the lock's owner connects; others wait and try again. */
  lock?: ConnectionLock;
  /** How often a process that does not own the lock looks again (default 5000 ms). */
  lockRetryMs?: number;
}

/** What a transport calls while it runs (see `SupervisorOptions.connect`). */
export interface ConnectionHooks {
  live(): void;
  connected(who?: string): void;
}

const message = errorMessage;

/** A connection up this long before it dropped starts the backoff over, sign of life or not. */
const STABLE_MS = 30_000;

/**
 * @example
 * const sup = new ConnectionSupervisor({ name: 'chatA', log, stallMs: 60_000, fatal: (e) => isUnauthorized(e) ? 'Invalid token' : undefined,
 *   connect: async (signal, { live, connected }) => { await getMe(signal); connected(); for (;;) { await poll(signal); live(); } } });
 * sup.start();
 */
export class ConnectionSupervisor {
  state: ConnectionState = 'stopped';
  reconnects = 0;
  lastError: string | undefined;
  lastInboundAt: string | undefined;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  /** Whether a connection was up since `start()`. */
  private everConnected = false;
  private wake: (() => void) | undefined;
  private readonly listeners = new Set<(s: ConnectionState) => void>();

  constructor(private readonly o: SupervisorOptions) {}

  /** Starts the loop (idempotent). */
  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.everConnected = false;
    // The loop catches what a connection throws; anything else is a bug that must not end the process.
    this.loop = this.run().catch((e: unknown) => {
      this.lastError = `the connection loop stopped: ${message(e)}`;
      this.o.log.error(`${this.o.name}: ${this.lastError}`);
      this.set('failed');
    });
  }

  /** Records an inbound message (for `lastInboundAt`). */
  inbound(at = new Date()): void {
    this.lastInboundAt = at.toISOString();
  }

  /**
   * Aborts the current connection and opens a new one, the way the stall watchdog does: `reason` becomes
   * `lastError`, the drop is counted in `reconnects`, and the next attempt follows the usual backoff. The drop is
   * logged at info (the caller warns, saying why). For a transport that finds its connection broken by other means
   * than silence (chatD: a Socket Mode connection that answers pings but no longer delivers events). Does nothing
   * while no connection is open, or once stopped.
   * @example supervisor.restart('Slack stopped delivering events over this connection');
   */
  restart(reason: string): void {
    const c = this.controller;
    if (this.stopped || !c || c.signal.aborted) return;
    c.abort(new RestartError(reason));
  }

  /** Called on every state change. */
  onState(fn: (s: ConnectionState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The kit's part of a channel status. */
  status(): Pick<ChannelStatus, 'connected' | 'state' | 'reconnects' | 'lastError' | 'lastInboundAt'> {
    return {
      connected: this.state === 'connected',
      state: this.state,
      reconnects: this.reconnects,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.lastInboundAt ? { lastInboundAt: this.lastInboundAt } : {}),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort(new Error('stopping'));
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    await this.o.lock?.release();
    if (this.state !== 'failed') this.set('stopped');
  }

  private set(s: ConnectionState): void {
    if (this.state === s) return;
    this.state = s;
    for (const l of this.listeners) l(s);
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    let attempt = 0;
    let first = true;
    /** Whether the wait for the lock was said since the last connection (said once per wait, not per retry). */
    let waitSaid = false;
    while (!this.stopped) {
      this.set(first ? 'connecting' : 'reconnecting');
      if (this.o.lock) {
        // A lock that cannot even be looked at (a full disk, too many open files, Redis down) is a wait, not an end.
        const lock = this.o.lock;
        const got = await Promise.resolve()
          .then(() => lock.acquire())
          .catch((e: unknown): LockResult => ({ ok: false, ownerPid: 0, why: message(e) }));
        if (this.stopped) break;
        if (!got.ok) {
          this.lastError = got.why
            ? `Not connecting: ${got.why}; trying again.`
            : `Another Keel process (pid ${got.ownerPid}${got.ownerHost ? ` on ${got.ownerHost}` : ''}) is connected with the same credentials; waiting for it to stop.`;
          if (!waitSaid) this.o.log.warn(`${this.o.name}: ${this.lastError}`);
          waitSaid = true;
          attempt++;
          await this.pause(this.o.lockRetryMs ?? 5000);
          continue;
        }
      }
      const controller = (this.controller = new AbortController());
      // A lease can be lost while connected (another machine took the connection after this one could not renew):
      // the connection is closed, and the loop waits for the lease again.
      this.o.lock?.watch?.((why) => {
        if (controller.signal.aborted) return;
        this.o.log.warn(`${this.o.name}: giving the connection up: ${why}.`);
        controller.abort(new RestartError(`gave the connection up: ${why}`));
      });
      let lastLive = Date.now();
      let connectedAt: number | undefined;
      const stallMs = () => (typeof this.o.stallMs === 'function' ? this.o.stallMs() : this.o.stallMs);
      const watchdog = setInterval(
        () => {
          const limit = stallMs();
          if (Date.now() - lastLive > limit && !controller.signal.aborted) controller.abort(new StallError(limit));
        },
        Math.max(50, Math.min(1000, stallMs() / 4)),
      );
      let again = false;
      let asked = false;
      const startedAt = Date.now();
      try {
        const ended = await this.o.connect(controller.signal, {
          live: () => {
            lastLive = Date.now();
            // The backoff starts over once a connection proves itself (a sign of life after it came up), not as
            // soon as it comes up: one that connects and fails at once every time (a Telegram 409, a mailbox that
            // refuses every sweep) keeps backing off instead of retrying every second for good.
            if (connectedAt !== undefined) attempt = 0;
          },
          connected: (who?: string) => {
            lastLive = Date.now();
            waitSaid = false;
            connectedAt ??= lastLive;
            // One line when the channel first comes up (as whom), one when it is back after a failure; nothing for
            // a connection the platform asked to renew, or a resume while connected.
            if (this.state !== 'connected') {
              if (!this.everConnected) this.o.log.info(`${this.o.name}: connected${who ? ` ${who}` : ''}.`);
              else if (this.lastError) this.o.log.info(`${this.o.name}: connected again.`);
            }
            this.everConnected = true;
            this.set('connected');
          },
        });
        if (this.stopped) break;
        // A platform that keeps asking at once still gets the backoff: no tight loop against it.
        again = ended === 'reconnect' && Date.now() - startedAt > 1000;
        if (!again) this.lastError = ended === 'reconnect' ? 'the platform asked for a new connection right away' : 'the connection ended';
      } catch (e) {
        if (this.stopped) break;
        // Aborted on purpose (the watchdog, or `restart`): rebuilt, whatever the connection threw on its way out.
        const stall = controller.signal.reason instanceof RestartError;
        const fatal = stall ? undefined : this.o.fatal(e);
        if (fatal) {
          this.lastError = fatal;
          this.o.log.error(`${this.o.name}: ${fatal}`);
          this.set('failed');
          await this.o.lock?.release();
          return;
        }
        this.lastError = stall ? (controller.signal.reason as Error).message : message(e);
        asked = stall && !(controller.signal.reason instanceof StallError);
      } finally {
        clearInterval(watchdog);
        if (this.controller === controller) this.controller = undefined;
      }
      first = false;
      // Up for a while without a word (a quiet channel) also counts as proven.
      if (connectedAt !== undefined && Date.now() - connectedAt >= STABLE_MS) attempt = 0;
      if (again) continue;
      this.reconnects++;
      const base = this.o.backoff?.baseMs ?? 1000;
      const max = this.o.backoff?.maxMs ?? 60_000;
      const wait = Math.min(max, base * 2 ** attempt++) * (0.5 + Math.random() / 2);
      const line = `${this.o.name}: connection lost (${this.lastError}); reconnecting in ${Math.round(wait)} ms.`;
      if (asked) this.o.log.info(line);
      else this.o.log.warn(line);
      this.set('reconnecting');
      await this.pause(wait);
    }
  }
}

/** Why a connection was aborted to be rebuilt: `ConnectionSupervisor.restart(reason)`, or the watchdog. */
export class RestartError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RestartError';
  }
}

/** The watchdog's reason for aborting a silent connection. */
export class StallError extends RestartError {
  constructor(ms: number) {
    super(`no answer from the platform for ${ms} ms (stalled connection)`);
    this.name = 'StallError';
  }
}
