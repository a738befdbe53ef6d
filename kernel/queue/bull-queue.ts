/**
 * The shared queue (queueRedisUrl) on BullMQ: several runners, on several machines, take actions from one queue in
 * Redis (docs/scaling.md). BullMQ does the queueing: priorities, the FIFO order within a priority, delays, claims
 * (an atomic move to `active` with a lock), lock expiry and the return of a dead runner's jobs (its stalled check),
 * bounded history. Keel keeps beside it, in the same Redis, only what BullMQ does not give:
 *
 * - Keel's retry rule (SPEC: 1 s, 2 s, 4 s; no retry past the TTL; none after a stop), done with BullMQ's own
 *   delayed set; the TTL, checked when an action is taken.
 * - Settles that land: a completion is written as a done mark (`q:done:<id>`, 24 h) before the job moves to
 *   `completed`, and both are retried until Redis takes them. A job that comes back after its runner finished it
 *   (the move was lost with the connection, the lock lapsed meanwhile) is completed from the mark, never run again.
 * - Cross-machine cancel: a stop mark (`q:stop:<id>`) plus an event; the runner holding the action aborts it, a
 *   stopped action that comes back is failed with the stop's reason.
 * - Idempotent pushes (`q:idem:<key>`, 24 h) and inbound marks (`inbound:<channel>:<message id>`, 7 days): a
 *   retried push, or a platform message delivered twice (to two machines), is one action.
 * - Per-conversation order and pinning: an action from a chat goes to the queue of the runner whose connection
 *   received it (`pin-<runner>`), taken only there, in order; when that runner's lease is gone one other runner
 *   adopts its queue (`q:adopt:<runner>`), and its conversations carry on there.
 * - Runner leases (`queue:worker:<id>`), signed job data (queueRedisSigningKey), and events on one pub/sub channel
 *   (`q:events`) so that views (the dashboard, `keel tasks`) follow without polling.
 *
 * Delivery is at-least-once: an action whose runner died while running it runs again elsewhere.
 */
import { hostname } from 'node:os';
import type { Job, JobsOptions, Queue, Worker } from 'bullmq';
import type { Redis as RedisClient } from 'ioredis';
import { type Signer, signerOf } from '../../sdk/signing.js';
import type { Action, Logger, PushInput } from '../../sdk/types.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';
import { backoffMs, consoleLog, copyAction, createAction, expiresAt } from './action.js';
import type { PushOptions, QueueCounts, QueueEngine, QueueList } from './engine.js';
import { laneOf, MAIN_LANE } from './lanes.js';

export interface SharedQueueOptions {
  /** `redis://[:password@]host:port[/db]` (or `rediss://` for TLS). */
  url: string;
  /** Key prefix, so that several Keel deployments can share one Redis (default `keel:`). */
  prefix?: string;
  /** How long a runner's lease (and its hold on an action) lasts without renewal (default 15 s). */
  leaseMs?: number;
  /** queueRedisSigningKey: job data is signed with it, and a job without a valid signature is never run. */
  signingKey?: string;
  /** How long to wait for Redis at open before giving up with a clear error (default 5 s). */
  connectTimeoutMs?: number;
}

export interface BullQueueOptions extends SharedQueueOptions {
  /** A runner: takes actions, holds a lease. */
  owner: boolean;
  /** Read once and write nothing (`keel status`, `keel tasks`). */
  readOnly?: boolean;
  log?: Logger;
  clock?: { now(): number };
  completedLimit?: number;
  failedLimit?: number;
  /** Skip the first read of the queue and the event subscription (`keel push`: one write and out). */
  light?: boolean;
}

interface JobData {
  action: Action;
  /** With queueRedisSigningKey: the signature of `action ${JSON of the action}`. */
  sig?: string;
}

/** One place actions are taken from: a BullMQ queue, and this process's hand on it when it is a runner. */
interface Source {
  name: string;
  queue: Queue<JobData>;
  worker?: Worker<JobData>;
  /** For an adopted dead runner's queue: whose it was. */
  adoptedFrom?: string;
  /**
   * When this runner last found the queue empty: it is not asked again until a push to it is heard or a moment
   * passed (a retry's delay ending, a dead runner's job coming back), which saves a round trip per take.
   */
  emptyAt?: number;
  /**
   * An adopted queue: whether the dead runner's jobs that were running have come back (BullMQ's stalled check puts
   * them in front), so that its conversations go on in order. Nothing is taken from it before.
   */
  settledIn?: boolean;
}

/** How long a queue found empty is not asked again (unless a push to it is heard). */
const EMPTY_RECHECK_MS = 250;

interface Held {
  job: Job<JobData>;
  token: string;
  source: Source;
  action: Action;
  /** Taken, but its lane is busy here: handed out when the lane frees (lane queue only). */
  parked?: boolean;
}

type QueueEvent =
  | { k: 'push'; a: Action; o: string; s?: string }
  | { k: 'start'; id: string; w: string; o: string }
  | { k: 'settle'; a: Action; o: string }
  | { k: 'stop'; id: string; reason: string; o: string }
  | { k: 'gone'; id: string; o: string };

const DAY_S = 24 * 3600;
/** How long every machine remembers that an inbound chat message was queued (knowsInbound). */
const INBOUND_TTL_S = 7 * DAY_S;
/** Most actions a process keeps in its view (the rest is read from Redis when asked). */
const KNOWN_MAX = 5000;
/** How many actions of each state a view reads from Redis. */
const VIEW_READ = 200;
const MAX_PARKED = 20;
/** A completion not recorded within this long (Redis away) also writes its done mark. */
const SLOW_SETTLE_MS = 1000;

/**
 * How long the view events of a runner's starts and settles are held to go out together (one PUBLISH, the newest
 * event per action). A push or a stop goes out at once: another runner is waiting for the one, an operator for the
 * other.
 */
const EVENT_BATCH_MS = 100;

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const copy = copyAction;

/** The URL with its password (and user) replaced, for messages and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/** ioredis options from a `redis://` or `rediss://` URL. */
function redisOptionsOf(url: string): Record<string, unknown> {
  const u = new URL(url);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`expected a redis:// or rediss:// URL, got ${u.protocol}`);
  const db = Number(u.pathname.replace(/^\//, '') || 0);
  return {
    host: u.hostname || '127.0.0.1',
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/** Opens a connection, or fails with a message naming the URL (password hidden). */
export async function connectRedis(url: string, log: Logger, timeoutMs = 5000): Promise<RedisClient> {
  const { Redis } = await import('ioredis');
  const where = redactRedisUrl(url);
  let client: RedisClient;
  try {
    redisOptionsOf(url);
    client = new Redis(url, {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 3,
      enableAutoPipelining: true,
      retryStrategy: (n: number) => Math.min(200 * n, 2000),
    });
  } catch (e) {
    throw new KeelError(ErrorCodes.QUEUE_UNREACHABLE, `queueRedisUrl is not a Redis URL (${where}): ${errorMessage(e)}.`, { url: where });
  }
  let down = false;
  let opened = false;
  const lost = (why: string) => {
    if (down || !opened || client.status === 'end') return;
    down = true;
    log.warn(`Queue: lost the connection to Redis at ${where} (${why}); reconnecting.`);
  };
  client.on('error', (e) => lost(errorMessage(e)));
  client.on('close', () => lost('connection closed'));
  client.on('ready', () => {
    if (!down) return;
    down = false;
    log.info(`Queue: connected to Redis at ${where} again.`);
  });
  try {
    await client.connect();
    opened = true;
  } catch (e) {
    client.disconnect();
    throw new KeelError(
      ErrorCodes.QUEUE_UNREACHABLE,
      `Cannot reach the queue's Redis at ${where} (queueRedisUrl): ${errorMessage(e)}. Start Redis, fix queueRedisUrl, or remove it to use the file queue in KEEL_HOME.`,
      { url: where },
    );
  }
  return client;
}

/** Every key matching `pattern` (SCAN, so a large Redis is not blocked). */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys;
}

/** The chat message an action answers (set by the channel kit's `receive`), if any. */
function inboundOf(a: Action): { channel: string; messageId: string } | undefined {
  const i = a.metadata.inbound as { channel?: unknown; messageId?: unknown } | undefined;
  return i && typeof i.channel === 'string' && typeof i.messageId === 'string' ? { channel: i.channel, messageId: i.messageId } : undefined;
}

/** The BullMQ queue of runner `worker`'s conversations (BullMQ names cannot hold `:`). */
const pinName = (worker: string) => `pin-${worker.replace(/[^A-Za-z0-9._-]/g, '_')}`;

/** BullMQ's priority: 1 runs first. Keel's: 10 runs first. */
const bullPriority = (p: number) => 11 - p;

/** Whether an error from a settle means the job is no longer this runner's (rather than Redis being away). */
function lostLock(e: unknown): boolean {
  return /lock|Missing key|not in the active state|is not in the/i.test(errorMessage(e));
}

/**
 * Sets the job's data only while it waits (not taken, not finished), atomically with respect to a take.
 * KEYS: job hash, active list. ARGV: job id, data JSON.
 */
const AMEND_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'finishedOn') == 1 then return 0 end
if redis.call('LPOS', KEYS[2], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[2])
return 1
`;

export class BullQueue implements QueueEngine {
  readonly problems: string[] = [];
  readonly owner: boolean;
  readonly worker: string | undefined;
  private readonly prefix: string;
  private readonly bullPrefix: string;
  private readonly leaseMs: number;
  private readonly log: Logger;
  private readonly clock: { now(): number };
  private readonly signer: Signer | undefined;
  private readonly completedLimit: number;
  private readonly failedLimit: number;
  /** This process, in events (its own are skipped). */
  private readonly origin = Math.random().toString(36).slice(2, 10);
  private redis!: RedisClient;
  private sub: RedisClient | undefined;
  private bullConnection: RedisClient | undefined;
  private readonly sources = new Map<string, Source>();
  private readonly held = new Map<string, Held>();
  /** Jobs BullMQ handed back with a completion: taken already, looked at by the next take first. */
  private prefetched: Array<{ job: Job<JobData>; token: string; source: Source }> = [];
  private readonly known = new Map<string, Action>();
  private readonly stops = new Map<string, string>();
  private readonly listeners = new Set<() => void>();
  private readonly stopListeners = new Set<(id: string, reason: string) => void>();
  private live = new Set<string>();
  private cachedCounts: QueueCounts = { pending: 0, executing: 0, completed: 0, failed: 0 };
  private countsAt = 0;
  private countsWatchedAt = -Infinity;
  private counting = false;
  private recount = false;
  private timers: NodeJS.Timeout[] = [];
  /** View events waiting to go out (publish), the newest per action. */
  private readonly outbox = new Map<string, QueueEvent>();
  private flushTimer: NodeJS.Timeout | undefined;
  private flushSoon = false;
  private closed = false;
  private tokenSeq = 0;
  /** Retries this runner scheduled: when the next is due (nextDueAt). */
  private readonly dueRetries = new Map<string, number>();
  private unsigned = 0;
  /** Dead runners' queues this runner gave up (it cannot carry their conversations), until when. */
  private readonly declined = new Map<string, number>();

  private constructor(private readonly o: BullQueueOptions) {
    this.prefix = o.prefix ?? 'keel:';
    this.bullPrefix = `${this.prefix}bull`;
    this.leaseMs = o.leaseMs ?? 15_000;
    this.log = o.log ?? consoleLog;
    this.clock = o.clock ?? Date;
    this.signer = signerOf(o.signingKey, this.prefix);
    this.completedLimit = o.completedLimit ?? 100;
    this.failedLimit = o.failedLimit ?? 100;
    this.owner = o.owner && !o.readOnly;
    this.worker = this.owner ? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}` : undefined;
  }

  static async open(o: BullQueueOptions): Promise<BullQueue> {
    const q = new BullQueue(o);
    try {
      await q.init();
    } catch (e) {
      await q.close().catch(() => {});
      throw e;
    }
    return q;
  }

  private key(k: string): string {
    return `${this.prefix}${k}`;
  }

  private leaseKey(worker: string): string {
    return this.key(`queue:worker:${worker}`);
  }

  private get eventsChannel(): string {
    return this.key('q:events');
  }

  private async init(): Promise<void> {
    this.redis = await connectRedis(this.o.url, this.log, this.o.connectTimeoutMs);
    if (this.worker) {
      const { Redis } = await import('ioredis');
      // The workers' connection (runners only): commands wait for Redis to come back rather than fail (BullMQ's
      // requirement for workers).
      this.bullConnection = new Redis(this.o.url, { maxRetriesPerRequest: null, retryStrategy: (n: number) => Math.min(200 * n, 2000) });
      this.bullConnection.on('error', () => {});
    }
    if (!this.o.readOnly && !this.o.light) await this.checkPersistence();
    if (!this.o.readOnly && !this.o.light) await (await import('./bull-migrate.js')).migrateStreamQueue(this, this.o.signingKey);
    // `keel push` opens only the queue it adds to.
    if (!this.o.light) {
      await this.source('main');
      await this.source('lanes');
    }
    if (this.worker) {
      await this.renewLease(true);
      await this.source(pinName(this.worker!));
    }
    if (this.o.light) return;
    await this.refreshView();
    if (this.o.readOnly) return;
    this.sub = this.redis.duplicate();
    this.sub.on('error', () => {});
    this.sub.on('message', (_ch, msg) => this.onEvent(msg));
    await this.sub.subscribe(this.eventsChannel);
    this.sub.on('ready', () => {
      // Back after an outage: events were missed, read the queue again.
      void this.refreshView().catch(() => {});
    });
    await this.refreshLive();
    const every = (ms: number, fn: () => Promise<void>, what: string) => {
      const t = setInterval(() => {
        if (this.closed) return;
        fn().catch((e) => this.log.debug(`Queue: ${what} failed: ${errorMessage(e)}`));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(Math.max(100, Math.floor(this.leaseMs / 2)), () => this.refreshLive(), 'looking at the runners');
    if (this.worker) {
      every(Math.max(100, Math.floor(this.leaseMs / 3)), () => this.renewHolds(), 'renewing the hold on running actions');
      every(Math.max(100, Math.floor(this.leaseMs / 2)), () => this.adoptOrphans(), "looking for a dead runner's conversations");
    }
  }

  /** Says once, at open, when an acknowledged push would not survive a restart of Redis. */
  private async checkPersistence(): Promise<void> {
    try {
      const [, aof] = (await this.redis.config('GET', 'appendonly')) as string[];
      const [, fsync] = (await this.redis.config('GET', 'appendfsync')) as string[];
      if (aof !== 'yes')
        this.log.warn(
          'Queue: Redis keeps the queue in memory only (appendonly is off): a restart of Redis loses queued actions. Set appendonly yes and appendfsync always for the durability of the file queue.',
        );
      else if (fsync !== 'always')
        this.log.info(
          `Queue: Redis syncs its log ${fsync === 'everysec' ? 'once a second' : 'when the system decides'} (appendfsync ${fsync}): a crash of the Redis host can lose the last ${fsync === 'everysec' ? 'second' : 'moments'} of pushes. appendfsync always closes that window.`,
        );
    } catch {
      // CONFIG may be disabled (managed Redis): nothing to say then.
    }
  }

  /** The BullMQ queue `name` (and, in a runner, its worker), opened once. */
  private async source(name: string, adoptedFrom?: string): Promise<Source> {
    const have = this.sources.get(name);
    if (have) return have;
    const { Queue, Worker } = await import('bullmq');
    // Adds and reads fail fast while Redis is away (a push is refused, not left hanging); the workers' connection waits.
    const queue = new Queue<JobData>(name, { connection: this.redis, prefix: this.bullPrefix });
    queue.on('error', () => {});
    const s: Source = { name, queue, ...(adoptedFrom ? { adoptedFrom } : {}) };
    const runs = this.worker !== undefined && (!name.startsWith('pin-') || name === pinName(this.worker!) || adoptedFrom !== undefined);
    if (runs) {
      const worker = new Worker<JobData>(name, null, {
        connection: this.bullConnection!,
        prefix: this.bullPrefix,
        autorun: false,
        lockDuration: this.leaseMs,
        stalledInterval: Math.max(100, Math.floor(this.leaseMs / 2)),
        maxStalledCount: 1_000_000,
        skipLockRenewal: true,
      });
      worker.on('error', (e) => this.log.debug(`Queue: BullMQ worker ${name}: ${errorMessage(e)}`));
      s.worker = worker;
      // The stalled check returns jobs whose holder's lock lapsed (a killed or cut-off runner) to the queue.
      void worker.startStalledCheckTimer().catch((e) => this.log.debug(`Queue: stalled check of ${name}: ${errorMessage(e)}`));
    }
    this.sources.set(name, s);
    return s;
  }

  /** Where a new action goes: a chat's action to its runner's own queue, a sub-agent lane to the lane queue. */
  private async targetOf(a: Action): Promise<Source> {
    if (laneOf(a) !== MAIN_LANE) return this.source('lanes');
    const origin = a.metadata.originWorker;
    if (typeof origin === 'string' && origin) {
      await this.redis.sadd(this.key('q:pins'), origin);
      return this.source(pinName(origin));
    }
    return this.source('main');
  }

  private dataOf(a: Action): JobData {
    return this.signer ? { action: a, sig: this.signer.sign(`action ${JSON.stringify(a)}`) } : { action: a };
  }

  private jobOptions(a: Action): JobsOptions {
    const delay = typeof a.metadata.notBefore === 'number' ? Math.max(0, a.metadata.notBefore - this.now()) : 0;
    return {
      jobId: a.id,
      priority: bullPriority(a.priority),
      ...(delay > 0 ? { delay } : {}),
      attempts: 1,
      removeOnComplete: { count: this.completedLimit },
      removeOnFail: { count: this.failedLimit },
    };
  }

  private now(): number {
    return this.clock.now();
  }

  private assertOpen(): void {
    if (this.closed) throw new KeelError(ErrorCodes.QUEUE_CLOSED, 'The queue is closed; open it again to continue.');
    if (this.o.readOnly) throw new KeelError(ErrorCodes.QUEUE_CLOSED, 'This queue was opened read-only.');
  }

  private assertOwner(what: string): void {
    this.assertOpen();
    if (!this.owner)
      throw new KeelError(
        ErrorCodes.QUEUE_NOT_OWNER,
        `Only the queue owner (the runner, \`keel run\`) may ${what} actions; this process opened the queue without owning it.`,
      );
  }

  private unreachable(e: unknown, what: string): KeelError {
    return e instanceof KeelError
      ? e
      : new KeelError(ErrorCodes.QUEUE_UNREACHABLE, `The shared queue's Redis did not take the ${what}: ${errorMessage(e)}`);
  }

  // ------------------------------------------------------------------ views

  /** When each known action was last heard of (a counter): a read of the queue never undoes what came after it. */
  private heard = 0;
  private readonly heardAt = new Map<string, number>();

  private forget(id: string): void {
    this.known.delete(id);
    this.heardAt.delete(id);
  }

  private remember(a: Action): void {
    this.heardAt.set(a.id, ++this.heard);
    this.known.delete(a.id);
    this.known.set(a.id, a);
    if (this.known.size <= KNOWN_MAX) return;
    for (const [id, x] of this.known) {
      if (this.known.size <= KNOWN_MAX) break;
      if (x.status === 'completed' || x.status === 'failed') this.forget(id);
    }
    while (this.known.size > KNOWN_MAX) this.forget(this.known.keys().next().value!);
  }

  private emit(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch (e) {
        this.log.error(`Queue: a change listener threw: ${errorMessage(e)}`);
      }
    }
  }

  /**
   * Sends an event to the other processes' views. Events are batched (one PUBLISH of a JSON array, the newest event
   * per action kept): a runner carrying a thousand actions a second would otherwise make every process on the queue
   * handle two thousand messages a second. Pushes and stops go out on the next turn of the event loop.
   */
  private publish(e: QueueEvent): void {
    if (this.o.light || this.closed) return;
    // A later event about an action says all an earlier one did (a settle carries the whole action); a stop is kept
    // apart, as it tells the runner to abort.
    const id = e.k === 'stop' ? `stop:${e.id}` : 'id' in e ? e.id : e.a.id;
    this.outbox.delete(id);
    this.outbox.set(id, e);
    const soon = e.k === 'push' || e.k === 'stop';
    if (this.flushTimer && (!soon || this.flushSoon)) return;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushSoon = soon;
    this.flushTimer = setTimeout(() => this.flush(), soon ? 0 : EVENT_BATCH_MS);
    this.flushTimer.unref();
  }

  private flush(): Promise<unknown> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.outbox.size) return Promise.resolve();
    const batch = [...this.outbox.values()];
    this.outbox.clear();
    return this.redis.publish(this.eventsChannel, JSON.stringify(batch)).catch(() => {});
  }

  private onEvent(raw: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return;
    }
    // A batch (an array), or a single event from a runner of an earlier version.
    const events = (Array.isArray(parsed) ? parsed : [parsed]) as QueueEvent[];
    let heard = false;
    for (const e of events) {
      if (!e || typeof e !== 'object' || e.o === this.origin) continue;
      this.apply(e);
      heard = true;
    }
    if (!heard) return;
    this.countsStale();
    this.emit();
  }

  private apply(e: QueueEvent): void {
    switch (e.k) {
      case 'push':
      case 'settle':
        if (e.k === 'push' && typeof e.s === 'string') {
          const src = this.sources.get(e.s);
          if (src) delete src.emptyAt;
        }
        if (e.a && typeof e.a.id === 'string') {
          if (e.k === 'settle' && this.held.has(e.a.id)) break;
          this.remember(e.a);
        }
        break;
      case 'start': {
        const a = this.known.get(e.id);
        if (a && !this.held.has(e.id)) this.remember({ ...a, status: 'executing' });
        break;
      }
      case 'gone':
        this.forget(e.id);
        break;
      case 'stop':
        this.noteStop(e.id, e.reason);
        break;
    }
  }

  private noteStop(id: string, reason: string): void {
    if (this.stops.has(id)) return;
    this.stops.set(id, reason);
    if (this.stops.size > KNOWN_MAX) this.stops.delete(this.stops.keys().next().value!);
    for (const l of this.stopListeners) {
      try {
        l(id, reason);
      } catch (e) {
        this.log.error(`Queue: a stop listener threw: ${errorMessage(e)}`);
      }
    }
  }

  /** The Action a job stands for, in the state it is in. */
  private actionOf(job: Job<JobData>, state: string): Action | undefined {
    const a = job.data?.action;
    if (!a || typeof a.id !== 'string') return undefined;
    const out = copy(a);
    if (state === 'active') out.status = 'executing';
    else if (state === 'completed') {
      out.status = 'completed';
      out.result = String(job.returnvalue ?? '');
      if (job.finishedOn) out.settledAt = new Date(job.finishedOn).toISOString();
    } else if (state === 'failed') {
      out.status = 'failed';
      out.error = job.failedReason;
      if (job.finishedOn) out.settledAt = new Date(job.finishedOn).toISOString();
    } else out.status = 'pending';
    return out;
  }

  /** Reads what the queue holds now (bounded per state) into the view, and the counts. */
  private async refreshView(): Promise<void> {
    const started = this.heard;
    const seen = new Map<string, Action>();
    for (const s of await this.allSources()) {
      const read = async (
        types: Array<'active' | 'prioritized' | 'wait' | 'delayed' | 'completed' | 'failed'>,
        state: string,
        asc: boolean,
      ) => {
        const jobs = (await s.queue.getJobs(types, 0, VIEW_READ - 1, asc)) as Array<Job<JobData> | undefined>;
        for (const j of jobs) {
          const a = j && this.actionOf(j, state);
          if (a) seen.set(a.id, a);
        }
      };
      await read(['completed'], 'completed', false);
      await read(['failed'], 'failed', false);
      await read(['prioritized', 'wait', 'delayed'], 'pending', true);
      await read(['active'], 'active', true);
    }
    // What was heard while reading is newer than what was read.
    const older = (id: string) => (this.heardAt.get(id) ?? 0) <= started;
    for (const [id, a] of this.known)
      if (!seen.has(id) && (a.status === 'pending' || a.status === 'executing') && older(id)) this.forget(id);
    for (const a of seen.values()) if (!this.held.has(a.id) && older(a.id)) this.remember(a);
    await this.refreshCounts();
    this.emit();
  }

  private async allSources(): Promise<Source[]> {
    const pins = await this.redis.smembers(this.key('q:pins'));
    for (const p of pins) if (!this.sources.has(pinName(p))) await this.source(pinName(p));
    return [...this.sources.values()];
  }

  private async refreshCounts(): Promise<void> {
    const c: QueueCounts = { pending: 0, executing: 0, completed: 0, failed: 0 };
    for (const s of await this.allSources()) {
      const n = await s.queue.getJobCounts('active', 'wait', 'prioritized', 'delayed', 'completed', 'failed');
      c.executing += n.active ?? 0;
      c.pending += (n.active ?? 0) + (n.wait ?? 0) + (n.prioritized ?? 0) + (n.delayed ?? 0);
      c.completed += n.completed ?? 0;
      c.failed += n.failed ?? 0;
    }
    const before = this.cachedCounts;
    this.cachedCounts = c;
    this.countsAt = this.now();
    if (before.pending !== c.pending || before.executing !== c.executing || before.completed !== c.completed || before.failed !== c.failed)
      this.emit();
  }

  /** Counts are read again shortly when someone looks at them (a change was heard or made). */
  private countsStale(): void {
    this.countsAt = 0;
    if (this.closed || this.now() - this.countsWatchedAt > 10_000) return;
    if (this.counting) {
      // A read in flight may have missed this change: read again after it.
      this.recount = true;
      return;
    }
    this.counting = true;
    this.recount = false;
    setTimeout(() => {
      this.refreshCounts()
        .catch(() => {})
        .finally(() => {
          this.counting = false;
          if (this.recount) this.countsStale();
        });
    }, 200).unref();
  }

  get(id: string): Action | undefined {
    const a = this.known.get(id);
    return a && copy(a);
  }

  async fetch(id: string): Promise<Action | undefined> {
    const found = await this.findJob(id);
    if (!found) {
      this.forget(id);
      return undefined;
    }
    const a = this.actionOf(found.job, await found.job.getState());
    if (a) this.remember(a);
    return a && copy(a);
  }

  private async findJob(id: string): Promise<{ job: Job<JobData>; source: Source } | undefined> {
    const held = this.held.get(id);
    if (held) return { job: held.job, source: held.source };
    for (const s of await this.allSources()) {
      const job = (await s.queue.getJob(id)) as Job<JobData> | undefined;
      if (job) return { job, source: s };
    }
    return undefined;
  }

  list(): QueueList {
    const all = [...this.known.values()];
    const rank = (a: Action) => (a.status === 'executing' ? 0 : 1);
    const pending = all
      .filter((a) => a.status === 'pending' || a.status === 'executing')
      .sort((a, b) => rank(a) - rank(b) || b.priority - a.priority || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const settled = (s: string, limit: number) =>
      all
        .filter((a) => a.status === s)
        .sort((a, b) => (b.settledAt ?? '').localeCompare(a.settledAt ?? ''))
        .slice(0, limit)
        .map(copy);
    return {
      pending: pending.map(copy),
      completed: settled('completed', this.completedLimit),
      failed: settled('failed', this.failedLimit),
    };
  }

  counts(): QueueCounts {
    this.countsWatchedAt = this.now();
    if (this.countsAt === 0) this.countsStale();
    return { ...this.cachedCounts };
  }

  nextDueAt(): number | undefined {
    let min: number | undefined;
    const now = this.now();
    for (const [id, at] of this.dueRetries) {
      if (at < now - 60_000) this.dueRetries.delete(id);
      else if (min === undefined || at < min) min = at;
    }
    return min;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  onStop(listener: (id: string, reason: string) => void): () => void {
    this.stopListeners.add(listener);
    return () => {
      this.stopListeners.delete(listener);
    };
  }

  stopReason(id: string): string | undefined {
    return this.stops.get(id);
  }

  // ------------------------------------------------------------------ runners

  get knowsInbound(): (channel: string, messageId: string) => Promise<boolean> {
    return async (channel, messageId) => {
      if (this.closed) return false;
      return (await this.redis.exists(this.key(`inbound:${channel}:${messageId}`))) === 1;
    };
  }

  sharedRunners(): number | undefined {
    return this.live.size;
  }

  isWorkerAlive(worker: string): boolean {
    return worker === this.worker || this.live.has(worker);
  }

  private async refreshLive(): Promise<void> {
    const prefix = this.leaseKey('');
    const keys = await scanKeys(this.redis, `${prefix}*`);
    this.live = new Set(keys.map((k) => k.slice(prefix.length)));
  }

  private async renewLease(first = false): Promise<void> {
    const key = this.leaseKey(this.worker!);
    const value = JSON.stringify({ host: hostname(), pid: process.pid, since: new Date().toISOString() });
    const set = await this.redis.set(key, value, 'PX', this.leaseMs, 'XX');
    if (set === null) {
      await this.redis.set(key, value, 'PX', this.leaseMs);
      if (!first)
        this.log.warn(
          `Queue: this runner's lease had lapsed (no renewal for ${this.leaseMs} ms: a pause or a lost connection); other runners may have taken over its actions.`,
        );
    }
    if (first) {
      const t = setInterval(
        () => {
          if (!this.closed) this.renewLease().catch((e) => this.log.warn(`Queue: renewing this runner's lease failed: ${errorMessage(e)}`));
        },
        Math.max(100, Math.floor(this.leaseMs / 3)),
      );
      t.unref();
      this.timers.push(t);
    }
  }

  /** Extends the lock of every action held here; reads stop marks, in case a stop's event was missed. */
  private async renewHolds(): Promise<void> {
    for (const p of this.prefetched) await p.job.extendLock(p.token, this.leaseMs).catch(() => -1);
    if (this.held.size === 0) return;
    const ids = [...this.held.keys()];
    await Promise.all(
      ids.map(async (id) => {
        const h = this.held.get(id);
        if (!h) return;
        const ok = await h.job.extendLock(h.token, this.leaseMs).catch(() => -1);
        if (ok === 0 && this.held.get(id) === h)
          this.log.warn(`Queue: the hold on ${id} lapsed (a pause or a lost connection); another runner may run it.`);
      }),
    );
    const marks = await this.redis.mget(...ids.map((id) => this.key(`q:stop:${id}`)));
    ids.forEach((id, i) => {
      const m = marks[i];
      if (m) this.noteStop(id, stopReasonOf(m));
    });
  }

  /** Adopts the queue of each runner whose lease is gone, so that its conversations carry on here, in order. */
  private async adoptOrphans(): Promise<void> {
    const pins = await this.redis.smembers(this.key('q:pins'));
    for (const p of pins) {
      if (p === this.worker || this.live.has(p)) continue;
      if ((this.declined.get(p) ?? 0) > this.now()) continue;
      const name = pinName(p);
      const s = this.sources.get(name);
      const lock = this.key(`q:adopt:${p}`);
      if (s?.worker && s.adoptedFrom) {
        // Ours: keep the adoption while it has work; let go once it is empty.
        const n = await s.queue.getJobCounts('active', 'wait', 'prioritized', 'delayed');
        if ((n.active ?? 0) + (n.wait ?? 0) + (n.prioritized ?? 0) + (n.delayed ?? 0) === 0) {
          await this.redis.srem(this.key('q:pins'), p);
          await this.redis.del(lock);
          await this.dropSource(name);
        } else await this.redis.set(lock, this.worker!, 'PX', this.leaseMs * 3);
        continue;
      }
      if ((await this.redis.set(lock, this.worker!, 'PX', this.leaseMs * 3, 'NX')) !== 'OK') continue;
      await this.dropSource(name);
      await this.source(name, p);
      this.log.info(`Queue: runner ${p} is gone; its conversations continue on this runner.`);
      this.emit();
    }
  }

  private async dropSource(name: string): Promise<void> {
    const s = this.sources.get(name);
    if (!s) return;
    this.sources.delete(name);
    await s.worker?.close(true).catch(() => {});
    await s.queue.close().catch(() => {});
  }

  /** Runs `fn` until Redis takes it: a settle that could not be written is tried again, never dropped. */
  private async settle(id: string, what: string, fn: () => Promise<unknown>): Promise<void> {
    let wait = 100;
    for (let n = 1; ; n++) {
      try {
        await fn();
        return;
      } catch (e) {
        if (lostLock(e))
          throw new KeelError(
            ErrorCodes.ACTION_NOT_EXECUTING,
            `Action ${id} is no longer this runner's: its hold lapsed and another runner took the action over, so this ${what} is not recorded.`,
            { id },
          );
        if (this.closed) throw this.unreachable(e, what);
        if (n === 1 || n % 20 === 0)
          this.log.warn(`Queue: recording the ${what} of ${id} failed (${errorMessage(e)}); trying again until Redis takes it.`);
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 2000);
      }
    }
  }

  private nextToken(): string {
    return `${this.worker}:${++this.tokenSeq}`;
  }

  async take(busy?: (lane: string) => boolean, accept?: (action: Action) => boolean): Promise<Action | undefined> {
    this.assertOwner('take');
    // Sub-agent lanes first handed back when taken while their lane was busy here.
    for (const h of this.held.values()) {
      if (!h.parked || busy?.(laneOf(h.action))) continue;
      h.parked = false;
      return this.started(h);
    }
    while (this.prefetched.length) {
      const p = this.prefetched.shift()!;
      const h = await this.admit(p.job, p.token, p.source, accept);
      if (!h || h === 'skip') continue;
      this.held.set(h.action.id, h);
      if (busy?.(laneOf(h.action))) {
        h.parked = true;
        continue;
      }
      return this.started(h);
    }
    const order: Source[] = [];
    if (!busy?.(MAIN_LANE)) {
      const mine = this.sources.get(pinName(this.worker!));
      if (mine) order.push(mine);
      for (const s of this.sources.values()) if (s.adoptedFrom) order.push(s);
      order.push(this.sources.get('main')!);
    }
    const parked = [...this.held.values()].filter((h) => h.parked).length;
    if (parked < MAX_PARKED) order.push(this.sources.get('lanes')!);
    const now = this.now();
    for (const s of order) {
      if (!s.worker) continue;
      if (s.emptyAt !== undefined && now - s.emptyAt < EMPTY_RECHECK_MS) continue;
      if (s.adoptedFrom && !s.settledIn) {
        const mine = [...this.held.values()].filter((h) => h.source === s).length;
        if ((await s.queue.getActiveCount()) > mine) continue;
        s.settledIn = true;
      }
      for (let tries = 0; tries < 50; tries++) {
        const token = this.nextToken();
        let job: Job<JobData> | undefined;
        try {
          job = (await s.worker.getNextJob(token, { block: false })) as Job<JobData> | undefined;
        } catch (e) {
          throw this.unreachable(e, 'take');
        }
        if (!job) {
          s.emptyAt = this.now();
          break;
        }
        delete s.emptyAt;
        const h = await this.admit(job, token, s, accept);
        if (!h) continue;
        if (h === 'skip') break;
        if (busy?.(laneOf(h.action))) {
          h.parked = true;
          this.held.set(h.action.id, h);
          break;
        }
        this.held.set(h.action.id, h);
        return this.started(h);
      }
    }
    return undefined;
  }

  private started(h: Held): Action {
    const a = { ...copy(h.action), status: 'executing' as const };
    this.remember(a);
    this.publish({ k: 'start', id: a.id, w: this.worker!, o: this.origin });
    this.countsStale();
    this.emit();
    return copy(a);
  }

  /**
   * Decides what to do with a job just taken: run it (a hold), or settle it without running (bad signature, TTL
   * over, already done, stopped), or give it back (`skip`: this runner may not run it).
   */
  private async admit(
    job: Job<JobData>,
    token: string,
    source: Source,
    accept?: (a: Action) => boolean,
  ): Promise<Held | 'skip' | undefined> {
    const data = job.data;
    const id = job.id!;
    if (!data?.action || typeof data.action.id !== 'string') {
      await job.moveToFailed(new Error('not a Keel action (no action in its data)'), token, false).catch(() => {});
      return undefined;
    }
    if (this.signer && !this.signer.verify(`action ${JSON.stringify(data.action)}`, data.sig)) {
      if (++this.unsigned <= 5 || this.unsigned % 1000 === 0) {
        const p = `Queue: refused job ${id} (${this.unsigned} so far): its signature is missing or wrong (queueRedisSigningKey). Something without the key writes to this Redis, or a machine runs with another key or none.`;
        this.problems.push(p);
        this.log.error(p);
      }
      await job.moveToFailed(new Error('refused: its signature is missing or wrong (queueRedisSigningKey)'), token, false).catch(() => {});
      return undefined;
    }
    const action = copy(data.action);
    const now = this.now();
    if (expiresAt(action) <= now) {
      await job.moveToFailed(new Error('ttl expired'), token, false).catch(() => {});
      await job.remove().catch(() => {});
      this.forget(id);
      this.publish({ k: 'gone', id, o: this.origin });
      this.log.warn(`Queue: removed ${id}: its TTL of ${action.metadata.ttl} ms passed before it could run.`);
      return undefined;
    }
    // Marks are looked for only on a job that was taken before (a retry, or back from a runner that is gone).
    const rerun = job.attemptsStarted > 1 || (job.stalledCounter ?? 0) > 0;
    const marks = rerun ? await this.redis.mget(this.key(`q:done:${id}`), this.key(`q:stop:${id}`)) : [null, null];
    const done = marks[0] ?? null;
    const stop = marks[1] ?? null;
    if (done !== null) {
      // Finished by a runner whose move to `completed` was lost: settle it from its mark, do not run it again.
      await this.settle(id, 'completion', () => job.moveToCompleted(done, token, false));
      this.settled({ ...action, status: 'completed', result: done, settledAt: new Date(now).toISOString() });
      this.log.info(`Queue: ${id} had finished on a runner whose record was lost; completed from its done mark, not run again.`);
      return undefined;
    }
    if (stop !== null) {
      const reason = stopReasonOf(stop);
      await this.settle(id, 'failure', () => job.moveToFailed(new Error(reason), token, false));
      this.settled({ ...action, status: 'failed', error: reason, settledAt: new Date(now).toISOString() });
      return undefined;
    }
    if (accept && !accept(action)) {
      await job.moveToDelayed(now + 1000, token).catch(() => {});
      if (source.adoptedFrom) {
        // This runner cannot carry that conversation (its channel is not here): leave the queue to another, and do
        // not take it back for a while, so that a runner that can carry it gets it.
        this.declined.set(source.adoptedFrom, now + this.leaseMs * 5);
        await this.redis.del(this.key(`q:adopt:${source.adoptedFrom}`)).catch(() => {});
        await this.dropSource(source.name);
      }
      return 'skip';
    }
    if (rerun) this.log.warn(`Queue: ${id} was running on a runner that is gone; it runs again here.`);
    return { job, token, source, action };
  }

  private settled(a: Action): void {
    this.held.delete(a.id);
    this.dueRetries.delete(a.id);
    this.remember(a);
    this.publish({ k: 'settle', a, o: this.origin });
    this.countsStale();
    this.emit();
  }

  private heldOrThrow(id: string): Held {
    const h = this.held.get(id);
    if (!h || h.parked) {
      const a = this.known.get(id);
      if (!a) throw new KeelError(ErrorCodes.ACTION_NOT_FOUND, `No pending or executing action has id ${id}.`, { id });
      throw new KeelError(
        ErrorCodes.ACTION_NOT_EXECUTING,
        a.status === 'executing'
          ? `Action ${id} is no longer this runner's: its hold lapsed and another runner took the action over, so this result is not recorded.`
          : `Action ${id} is ${a.status}, not executing: only a taken action can be settled.`,
        { id },
      );
    }
    return h;
  }

  async complete(id: string, result: string): Promise<void> {
    this.assertOwner('complete');
    const h = this.heldOrThrow(id);
    const done = this.key(`q:done:${id}`);
    try {
      // One write when all is well: BullMQ's move to `completed`, which hands the next job back in the same call (as
      // its own workers do). When it is slow (Redis away) or fails, the done mark is written beside it until it
      // lands, so that a job whose hold lapses meanwhile is completed from the mark by whoever takes it, not run again.
      let marking: Promise<void> | undefined;
      const mark = () =>
        (marking ??= (async () => {
          for (let wait = 100; !this.closed; wait = Math.min(wait * 2, 2000)) {
            try {
              await this.redis.set(done, result, 'EX', DAY_S);
              return;
            } catch {
              await new Promise((r) => setTimeout(r, wait));
            }
          }
        })());
      for (let attempt = 1, wait = 100; ; attempt++, wait = Math.min(wait * 2, 2000)) {
        const move = h.job.moveToCompleted(result, h.token, !this.closed && h.source.worker !== undefined).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
        let timer: NodeJS.Timeout | undefined;
        const slow = new Promise<'slow'>((r) => {
          timer = setTimeout(() => r('slow'), SLOW_SETTLE_MS);
        });
        let out = await Promise.race([move, slow]);
        clearTimeout(timer);
        if (out === 'slow') {
          void mark();
          out = await move;
        }
        if (!('error' in out)) {
          this.prefetch(h, out.value);
          break;
        }
        if (lostLock(out.error)) {
          // A move that landed but whose answer was lost (and was sent again): the job is completed with this result.
          const now = (await h.source.queue.getJob(id).catch(() => undefined)) as Job<JobData> | undefined;
          if (now?.finishedOn && now.returnvalue === result && !now.failedReason) break;
          throw new KeelError(
            ErrorCodes.ACTION_NOT_EXECUTING,
            `Action ${id} is no longer this runner's: its hold lapsed and another runner took the action over, so this completion is not recorded.`,
            { id },
          );
        }
        if (this.closed) throw this.unreachable(out.error, 'completion');
        void mark();
        if (attempt === 1 || attempt % 20 === 0)
          this.log.warn(`Queue: recording the completion of ${id} failed (${errorMessage(out.error)}); trying again until Redis takes it.`);
        await new Promise((r) => setTimeout(r, wait));
      }
    } catch (e) {
      this.held.delete(id);
      throw e;
    }
    this.settled({ ...h.action, status: 'completed', result, settledAt: new Date(this.now()).toISOString() });
  }

  /** Keeps the job BullMQ handed back with a completion (taken, locked with the same token) for the next take. */
  private prefetch(h: Held, next: unknown): void {
    if (!Array.isArray(next) || !next[0] || typeof next[1] !== 'string') return;
    const make = (h.source.worker as unknown as { createJob?: (data: unknown, id: string) => Job<JobData> } | undefined)?.createJob;
    if (typeof make !== 'function') return;
    const job = make.call(h.source.worker, next[0], next[1]);
    job.token = h.token;
    this.prefetched.push({ job, token: h.token, source: h.source });
  }

  async fail(id: string, error: string): Promise<'retry' | 'failed'> {
    this.assertOwner('fail');
    const h = this.heldOrThrow(id);
    const a = h.action;
    const now = this.now();
    const { retries, maxRetries } = a.metadata;
    const notBefore = now + backoffMs(retries + 1);
    const retry = retries < maxRetries && !this.stops.has(id);
    const inTime = notBefore < expiresAt(a);
    try {
      if (retry && inTime) {
        const next: Action = { ...a, status: 'pending', error, metadata: { ...a.metadata, retries: retries + 1, notBefore } };
        await this.settle(id, 'retry', async () => {
          await h.job.updateData(this.dataOf(next));
          await h.job.moveToDelayed(notBefore, h.token);
        });
        this.held.delete(id);
        this.dueRetries.set(id, notBefore);
        this.remember(next);
        this.publish({ k: 'settle', a: next, o: this.origin });
        this.countsStale();
        this.emit();
        return 'retry';
      }
      const text = retry ? `${error} (not retried: the next retry would start after the action's TTL of ${a.metadata.ttl} ms)` : error;
      await this.settle(id, 'failure', () => h.job.moveToFailed(new Error(text), h.token, false));
      this.settled({ ...a, status: 'failed', error: text, settledAt: new Date(now).toISOString() });
      return 'failed';
    } catch (e) {
      this.held.delete(id);
      throw e;
    }
  }

  // ------------------------------------------------------------------ any process

  async push(input: PushInput, options: PushOptions = {}): Promise<Action> {
    this.assertOpen();
    let action = createAction(input, this.now());
    let target: Source;
    const inbound = inboundOf(action);
    try {
      // One action per idempotency key and per inbound message, whichever machine pushes first.
      for (const k of [
        options.idempotencyKey !== undefined ? { key: this.key(`q:idem:${options.idempotencyKey}`), ttl: DAY_S } : undefined,
        inbound ? { key: this.key(`inbound:${inbound.channel}:${inbound.messageId}`), ttl: INBOUND_TTL_S } : undefined,
      ]) {
        if (!k) continue;
        const set = await this.redis.set(k.key, action.id, 'EX', k.ttl, 'NX');
        if (set === 'OK') continue;
        const first = await this.redis.get(k.key);
        if (!first || first === action.id) continue;
        const existing = await this.fetch(first);
        if (existing) return existing;
        // The first push's write was lost after its key was set: this push queues it, under the first id.
        action = { ...action, id: first };
      }
      if (options.idempotencyKey !== undefined) action.metadata = { ...action.metadata, idempotencyKey: options.idempotencyKey };
      target = await this.targetOf(action);
      await target.queue.add('action', this.dataOf(action), this.jobOptions(action));
      delete target.emptyAt;
    } catch (e) {
      throw this.unreachable(e, 'push');
    }
    this.remember(action);
    this.publish({ k: 'push', a: action, o: this.origin, s: target.name });
    this.countsStale();
    this.emit();
    return copy(action);
  }

  async adopt(action: Action): Promise<void> {
    this.assertOpen();
    const a: Action = { ...action, status: 'pending', metadata: { ...action.metadata } };
    delete a.result;
    delete a.settledAt;
    const target = await this.targetOf(a);
    await target.queue.add('action', this.dataOf(a), this.jobOptions(a));
    delete target.emptyAt;
    this.remember(a);
    this.publish({ k: 'push', a, o: this.origin });
    this.countsStale();
    this.emit();
  }

  async amend(id: string, change: { task: string; metadata?: Record<string, unknown> }): Promise<boolean> {
    this.assertOpen();
    if (typeof change.task !== 'string' || !change.task.trim())
      throw new KeelError(ErrorCodes.TASK_EMPTY, 'The task is empty: give the instruction to carry out as text.');
    const found = await this.findJob(id);
    if (!found || this.held.has(id)) return false;
    const a = found.job.data.action;
    const next: Action = { ...a, task: change.task, metadata: { ...a.metadata, ...(change.metadata ?? {}) } as Action['metadata'] };
    const jobKey = `${this.bullPrefix}:${found.source.name}:${id}`;
    const activeKey = `${this.bullPrefix}:${found.source.name}:active`;
    const ok = (await this.redis.eval(AMEND_LUA, 2, jobKey, activeKey, id, JSON.stringify(this.dataOf(next)))) === 1;
    if (!ok) return false;
    this.remember({ ...next, status: 'pending' });
    this.publish({ k: 'push', a: { ...next, status: 'pending' }, o: this.origin });
    this.emit();
    return true;
  }

  async remove(id: string, reason: string): Promise<boolean> {
    this.assertOpen();
    const found = await this.findJob(id);
    if (!found) return false;
    try {
      await found.job.remove();
    } catch {
      // Taken meanwhile (locked): it is not pending any more.
      return false;
    }
    this.forget(id);
    this.log.debug(`Queue: removed ${id}: ${reason}`);
    this.publish({ k: 'gone', id, o: this.origin });
    this.countsStale();
    this.emit();
    return true;
  }

  async stop(id: string, reason: string): Promise<boolean> {
    this.assertOpen();
    const a = await this.fetch(id);
    if (!a || a.status !== 'executing') return false;
    const set = await this.redis.set(this.key(`q:stop:${id}`), JSON.stringify({ reason, at: this.now() }), 'EX', DAY_S, 'NX');
    if (set !== 'OK') return false;
    this.publish({ k: 'stop', id, reason, o: this.origin });
    this.noteStop(id, reason);
    return true;
  }

  async sweep(): Promise<Action[]> {
    this.assertOpen();
    const now = this.now();
    const expired: Action[] = [];
    for (const s of [...this.sources.values()]) {
      const jobs = (await s.queue.getJobs(['failed'], 0, this.failedLimit - 1)) as Array<Job<JobData> | undefined>;
      for (const j of jobs) {
        const a = j && this.actionOf(j, 'failed');
        if (!a || expiresAt(a) > now) continue;
        await j.remove().catch(() => {});
        this.forget(a.id);
        this.publish({ k: 'gone', id: a.id, o: this.origin });
        expired.push(a);
      }
    }
    if (expired.length) this.emit();
    return expired;
  }

  async compact(): Promise<boolean> {
    return true;
  }

  /** For the migration (bull-migrate.ts): the command connection and the key prefix. */
  internals(): { redis: RedisClient; prefix: string; log: Logger; add: (a: Action) => Promise<void> } {
    return {
      redis: this.redis,
      prefix: this.prefix,
      log: this.log,
      add: async (a) => {
        const target = await this.targetOf(a);
        await target.queue.add('action', this.dataOf(a), this.jobOptions(a));
      },
    };
  }

  /** Gives back what runs here (it runs again elsewhere at once), releases the lease, closes the connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    for (const h of [...this.held.values(), ...this.prefetched.splice(0)]) await h.job.moveToWait(h.token).catch(() => {});
    this.held.clear();
    for (const name of [...this.sources.keys()]) await this.dropSource(name);
    if (this.worker) await this.redis?.del(this.leaseKey(this.worker)).catch(() => {});
    this.sub?.disconnect();
    await this.redis?.quit().catch(() => this.redis?.disconnect());
    await this.bullConnection?.quit().catch(() => this.bullConnection?.disconnect());
    this.listeners.clear();
    this.stopListeners.clear();
  }

  /** Drops everything without a word to Redis, as a killed process would (tests). */
  crash(): void {
    this.closed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.outbox.clear();
    for (const t of this.timers) clearInterval(t);
    for (const s of this.sources.values()) {
      void s.worker?.close(true).catch(() => {});
    }
    this.sub?.disconnect();
    this.redis?.disconnect();
    this.bullConnection?.disconnect();
  }
}

function stopReasonOf(mark: string): string {
  try {
    const v = JSON.parse(mark) as { reason?: unknown };
    if (typeof v.reason === 'string') return v.reason;
  } catch {
    // an older or hand-written mark: its text is the reason
  }
  return mark;
}

/** A runner holding a lease on the shared queue, as `keel status` lists it. */
export interface SharedRunner {
  id: string;
  host?: string;
  pid?: number;
  since?: string;
}

/** The runners whose lease on the shared queue is alive (for `keel status`). */
export async function sharedQueueRunners(backend: SharedQueueOptions): Promise<SharedRunner[]> {
  const redis = await connectRedis(backend.url, quiet, backend.connectTimeoutMs);
  const prefix = `${backend.prefix ?? 'keel:'}queue:worker:`;
  try {
    const keys = await scanKeys(redis, `${prefix}*`);
    if (keys.length === 0) return [];
    const values = await redis.mget(...keys);
    return keys
      .map((k, i) => {
        const r: SharedRunner = { id: k.slice(prefix.length) };
        try {
          const v = JSON.parse(values[i] ?? '{}') as { host?: unknown; pid?: unknown; since?: unknown };
          if (typeof v.host === 'string') r.host = v.host;
          if (typeof v.pid === 'number') r.pid = v.pid;
          if (typeof v.since === 'string') r.since = v.since;
        } catch {
          // a lease written by something else: its id is all there is to show
        }
        return r;
      })
      .sort((a, b) => a.id.localeCompare(b.id));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** `keel push` to the shared queue: one job added, without reading the queue. */
export async function pushToShared(backend: SharedQueueOptions, input: PushInput, options: PushOptions = {}): Promise<Action> {
  const q = await BullQueue.open({ ...backend, owner: false, light: true, log: quiet });
  try {
    return await q.push(input, options);
  } finally {
    await q.close();
  }
}
