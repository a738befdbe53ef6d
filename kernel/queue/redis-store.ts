/**
 * A queue store in Redis, for several runners (on several machines) sharing one queue (docs/scaling.md).
 *
 * - The op stream is a Redis stream (`<prefix>queue:ops`, one entry per op, appended with XADD); the base is one
 *   key (`<prefix>queue:base`: the snapshot and the id of the last entry it absorbed). Every process folds the
 *   same stream in the same order, which is what makes a claim unambiguous: of two `start` ops for one action, the
 *   first in the stream wins everywhere (state.ts), and the loser sees that it lost once its own op comes back.
 * - An append resolves once Redis has acknowledged the entries and this process has applied everything up to them.
 *   How durable that is depends on Redis's persistence: with `appendonly yes` and `appendfsync always` an
 *   acknowledged push survives a crash of Redis as a file-store push survives `kill -9`; the store says at open
 *   when Redis keeps the queue in memory only.
 * - Compaction writes the base and trims the stream in one script, and only entries older than `trimLagMs` (so a
 *   connected reader never misses one). A reader that was away longer finds out from the stream's
 *   `max-deleted-entry-id` and reloads from the base.
 * - Runners hold leases (`<prefix>queue:worker:<id>`, renewed at a third of their length); an executing action
 *   whose runner's lease is gone is requeued by any other runner (queue.ts).
 *
 * ioredis is imported only when this store is opened.
 */
import { hostname } from 'node:os';
import type { Redis as RedisClient } from 'ioredis';
import type { Action, Logger } from '../../sdk/types.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';
import { type Signer, signerOf } from '../../sdk/signing.js';
import { decodeOp, encodeOp, isActionLike, type QueueOp } from './ops.js';
import type { QueueSnapshot, QueueStore, StoreChange, StoreLoad } from './store.js';

export interface RedisStoreOptions {
  /** `redis://[:password@]host:port[/db]` (or `rediss://` for TLS). */
  url: string;
  /** Key prefix, so that several Keel deployments can share one Redis (default `keel:`). */
  prefix?: string;
  /** A runner: takes actions, holds a lease, may compact. */
  owner: boolean;
  /** Read once and write nothing (`keel status`, `keel tasks`). */
  readOnly?: boolean;
  log: Logger;
  /** How long a runner's lease lasts without renewal (default 15 s). */
  leaseMs?: number;
  /** Stream entries younger than this are kept when compacting (default 10 minutes). */
  trimLagMs?: number;
  /** Compact once this many ops (and more than twice the live actions) follow the base (default 10,000). */
  compactMinOps?: number;
  /** How long to wait for Redis at open before giving up with a clear error (default 5 s). */
  connectTimeoutMs?: number;
  /** queueRedisSigningKey: ops and the base are signed with it, and what lacks a valid signature is ignored. */
  signingKey?: string;
}

interface Base {
  v: 1;
  /** The id of the last stream entry folded into `snapshot` (`0-0`: none). */
  lastId: string;
  snapshot: QueueSnapshot;
  /** With queueRedisSigningKey: the signature of `lastId` and the snapshot's JSON (signing.ts). */
  sig?: string;
}

/** What a base's signature covers: the id it absorbed up to and the snapshot, as JSON. */
const basePayload = (lastId: string, snapshot: QueueSnapshot) => `base ${lastId} ${JSON.stringify(snapshot)}`;

/** The stream entry's fields for one op: its JSON, and its signature when the queue is signed. */
function opFields(op: QueueOp, signer: Signer | undefined): string[] {
  const json = encodeOp(op).trimEnd();
  return signer ? ['op', json, 's', signer.sign(json)] : ['op', json];
}

const EMPTY: QueueSnapshot = { actions: [], completed: [], failed: [] };

/** How long every machine remembers that an inbound chat message was queued (knowsInbound). */
const INBOUND_TTL_S = 7 * 24 * 3600;

/** The chat message an action answers (set by the channel kit's `receive`), if any. */
function inboundOf(a: Action): { channel: string; messageId: string } | undefined {
  const i = a.metadata.inbound as { channel?: unknown; messageId?: unknown } | undefined;
  return i && typeof i.channel === 'string' && typeof i.messageId === 'string' ? { channel: i.channel, messageId: i.messageId } : undefined;
}

/** Stream ids (`<ms>-<seq>`) in order. Both parts stay below 2^53 (milliseconds since 1970, a per-ms counter). */
export function compareIds(a: string, b: string): number {
  const ai = a.indexOf('-');
  const bi = b.indexOf('-');
  const d = Number(a.slice(0, ai)) - Number(b.slice(0, bi));
  if (d !== 0) return d < 0 ? -1 : 1;
  const e = Number(a.slice(ai + 1)) - Number(b.slice(bi + 1));
  return e === 0 ? 0 : e < 0 ? -1 : 1;
}

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

/**
 * Writes the base and trims what it absorbed, atomically, and only forward: another runner may have compacted
 * further meanwhile (then nothing is written and the script returns 0). Entries younger than the lag stay, so a
 * connected reader that has not read them yet still finds them.
 * KEYS: base, stream. ARGV: lastId, base JSON, lag ms.
 */
const COMPACT_LUA = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, obj = pcall(cjson.decode, cur)
  if ok and type(obj) == 'table' and type(obj.lastId) == 'string' then
    local cm, cs = string.match(obj.lastId, '^(%d+)-(%d+)$')
    local nm, ns = string.match(ARGV[1], '^(%d+)-(%d+)$')
    if cm and nm then
      cm, cs, nm, ns = tonumber(cm), tonumber(cs), tonumber(nm), tonumber(ns)
      if cm > nm or (cm == nm and cs >= ns) then return 0 end
    end
  end
end
redis.call('SET', KEYS[1], ARGV[2])
local t = redis.call('TIME')
local lagMs = tonumber(ARGV[3])
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local m, s = string.match(ARGV[1], '^(%d+)-(%d+)$')
m, s = tonumber(m), tonumber(s)
local cut = nowMs - lagMs
local minid
if cut <= m then minid = string.format('%d-0', cut) else minid = string.format('%d-%d', m, s + 1) end
if cut > 0 then redis.call('XTRIM', KEYS[2], 'MINID', minid) end
return 1
`;

export class RedisStore implements QueueStore {
  /** This runner's id in leases and claims: host, pid and a random part. */
  readonly worker: string | undefined;
  private readonly prefix: string;
  private readonly streamKey: string;
  private readonly baseKey: string;
  private readonly leaseMs: number;
  private readonly trimLagMs: number;
  private readonly compactMinOps: number;
  private readonly signer: Signer | undefined;
  /** Entries refused for want of a valid signature (reported in full for the first few, then counted). */
  private unsigned = 0;
  private redis: RedisClient | undefined;
  private reader: RedisClient | undefined;
  private lastSeen = '0-0';
  private opsSinceBase = 0;
  private onChange: (c: StoreChange) => void = () => {};
  /** One delivery at a time, in stream order. */
  private chain: Promise<unknown> = Promise.resolve();
  private leaseTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readLoop: Promise<void> | undefined;
  private batch: { ops: QueueOp[]; promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | undefined;
  private flushing = false;
  /** The write in flight, for close to wait on. */
  private flushed: Promise<void> = Promise.resolve();

  constructor(private readonly o: RedisStoreOptions) {
    this.prefix = o.prefix ?? 'keel:';
    this.streamKey = `${this.prefix}queue:ops`;
    this.baseKey = `${this.prefix}queue:base`;
    this.leaseMs = o.leaseMs ?? 15_000;
    this.trimLagMs = o.trimLagMs ?? 600_000;
    this.compactMinOps = o.compactMinOps ?? 10_000;
    this.signer = signerOf(o.signingKey, this.prefix);
    this.worker = o.owner && !o.readOnly ? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}` : undefined;
  }

  private leaseKey(worker: string): string {
    return `${this.prefix}queue:worker:${worker}`;
  }

  /** Opens a connection, or fails with a message naming the URL (password hidden). */
  async connect(): Promise<RedisClient> {
    const { Redis } = await import('ioredis');
    const where = redactRedisUrl(this.o.url);
    const client = new Redis(this.o.url, {
      lazyConnect: true,
      connectTimeout: this.o.connectTimeoutMs ?? 5000,
      // A write waits through a short outage, then fails: an append that cannot be stored must say so.
      maxRetriesPerRequest: 3,
      enableAutoPipelining: true,
      retryStrategy: (n) => Math.min(200 * n, 2000),
    });
    // ioredis reports every failed reconnect; one line per outage is enough.
    let down = false;
    let opened = false;
    const lost = (why: string) => {
      if (down || this.closed || !opened) return;
      down = true;
      this.o.log.warn(`Queue: lost the connection to Redis at ${where} (${why}); reconnecting.`);
    };
    client.on('error', (e) => lost(errorMessage(e)));
    client.on('close', () => lost('connection closed'));
    client.on('ready', () => {
      if (!down) return;
      down = false;
      this.o.log.info(`Queue: connected to Redis at ${where} again.`);
      // Whatever was missed while away is read again (and a gap past a compaction reloads the base).
      if (client === this.redis && !this.o.readOnly) void this.serial(() => this.resync()).catch(() => {});
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

  /** Runs `fn` after everything queued before it: deliveries never interleave. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => {});
    return run;
  }

  private listener(change: StoreChange): void {
    try {
      this.onChange(change);
    } catch (e) {
      this.o.log.error(`Queue: applying ops failed: ${errorMessage(e)}`);
    }
  }

  private parseBase(raw: string | null, problems: string[]): Base {
    if (!raw) return { v: 1, lastId: '0-0', snapshot: EMPTY };
    try {
      const b = JSON.parse(raw) as Partial<Base>;
      const s = b.snapshot;
      if (
        typeof b.lastId === 'string' &&
        s &&
        [s.actions, s.completed, s.failed].every((l) => Array.isArray(l) && l.every((a) => isActionLike(a)))
      ) {
        if (this.signer && !this.signer.verify(basePayload(b.lastId, s), b.sig))
          throw new Error('its signature is missing or wrong (queueRedisSigningKey): it was not written by a Keel with this key');
        return b as Base;
      }
      throw new Error('unexpected shape');
    } catch (e) {
      // Without a base the stream alone is all there is; say so instead of pretending the queue is empty.
      problems.push(`Queue: the base in Redis (${this.baseKey}) is unreadable (${errorMessage(e)}); only the ops after it are used.`);
      return { v: 1, lastId: '0-0', snapshot: EMPTY };
    }
  }

  private decodeEntries(entries: Array<[string, string[]]>, problems: string[]): { ops: QueueOp[]; last: string | undefined } {
    const ops: QueueOp[] = [];
    let last: string | undefined;
    for (const [id, fields] of entries) {
      last = id;
      const i = fields.indexOf('op');
      const json = i >= 0 ? fields[i + 1]! : '';
      if (this.signer) {
        const s = fields.indexOf('s');
        if (!this.signer.verify(json, s >= 0 ? fields[s + 1] : undefined)) {
          // Not written by a Keel holding the key: never applied. Said in full a few times, then counted.
          if (++this.unsigned <= 5 || this.unsigned % 1000 === 0)
            problems.push(
              `Queue: ignored stream entry ${id} (${this.unsigned} so far): its signature is missing or wrong (queueRedisSigningKey). Something without the key writes to this Redis (${this.streamKey}), or a machine runs with another key or none.`,
            );
          continue;
        }
      }
      try {
        ops.push(decodeOp(json));
      } catch (e) {
        problems.push(`Queue: skipped stream entry ${id}: ${errorMessage(e)}`);
      }
    }
    return { ops, last };
  }

  async load(onChange: (change: StoreChange) => void): Promise<StoreLoad> {
    this.onChange = onChange;
    const redis = await this.connect();
    this.redis = redis;
    const problems: string[] = [];
    if (!this.o.readOnly) await this.checkPersistence(redis);
    const { base, ops } = await this.read(problems);
    for (const p of problems) this.o.log.error(p);
    if (this.worker) await this.renewLease(true);
    if (!this.o.readOnly) {
      this.reader = redis.duplicate();
      // The main connection reports outages; the reader's own errors only retry (follow()).
      this.reader.on('error', () => {});
      this.readLoop = this.follow();
    }
    return { snapshot: base.snapshot, ops, problems };
  }

  /** The base and every op after it. */
  private async read(problems: string[]): Promise<{ base: Base; ops: QueueOp[] }> {
    const redis = this.redis!;
    let raw = await redis.get(this.baseKey);
    let base = this.parseBase(raw, problems);
    let entries: Array<[string, string[]]>;
    for (;;) {
      entries = (await redis.xrange(this.streamKey, `(${base.lastId}`, '+')) as Array<[string, string[]]>;
      // A compaction between the two reads may have trimmed entries after the base just read: read both again.
      const now = await redis.get(this.baseKey);
      if (now === raw) break;
      raw = now;
      problems.length = 0;
      base = this.parseBase(raw, problems);
    }
    const { ops, last } = this.decodeEntries(entries, problems);
    this.lastSeen = last ?? base.lastId;
    this.opsSinceBase = entries.length;
    return { base, ops };
  }

  /** Says once, at open, when an acknowledged push would not survive a restart of Redis. */
  private async checkPersistence(redis: RedisClient): Promise<void> {
    try {
      const [, aof] = (await redis.config('GET', 'appendonly')) as string[];
      const [, fsync] = (await redis.config('GET', 'appendfsync')) as string[];
      if (aof !== 'yes')
        this.o.log.warn(
          'Queue: Redis keeps the queue in memory only (appendonly is off): a restart of Redis loses queued actions. Set appendonly yes and appendfsync always for the durability of the file queue.',
        );
      else if (fsync !== 'always')
        this.o.log.info(
          `Queue: Redis syncs its log ${fsync === 'everysec' ? 'once a second' : 'when the system decides'} (appendfsync ${fsync}): a crash of the Redis host can lose the last ${fsync === 'everysec' ? 'second' : 'moments'} of pushes. appendfsync always closes that window.`,
        );
    } catch {
      // CONFIG is often disabled on managed Redis: nothing to say then.
    }
  }

  /**
   * Follows the stream on a connection of its own (XREAD BLOCK), handing other processes' ops over in order. Own
   * ops usually arrive first through `append`'s catch-up; whatever was delivered already is skipped by id.
   */
  private async follow(): Promise<void> {
    const reader = this.reader!;
    while (!this.closed) {
      try {
        const res = (await reader.xread('COUNT', 1000, 'BLOCK', 2000, 'STREAMS', this.streamKey, this.lastSeen)) as Array<
          [string, Array<[string, string[]]>]
        > | null;
        if (!res || this.closed) continue;
        const entries = res[0]![1];
        await this.serial(async () => this.deliver(entries));
      } catch (e) {
        if (this.closed) return;
        this.o.log.debug(`Queue: reading the Redis stream failed (${errorMessage(e)}); trying again.`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Hands entries newer than what was delivered to the listener. Runs inside `serial`. */
  private deliver(entries: Array<[string, string[]]>): void {
    const fresh = entries.filter(([id]) => compareIds(id, this.lastSeen) > 0);
    if (fresh.length === 0) return;
    const problems: string[] = [];
    const { ops, last } = this.decodeEntries(fresh, problems);
    this.lastSeen = last!;
    this.opsSinceBase += fresh.length;
    for (const p of problems) this.o.log.error(p);
    if (ops.length || problems.length) this.listener({ ops, ...(problems.length ? { problems } : {}) });
  }

  /** Reads from `lastSeen` up to `upTo` (everything, when absent). Runs inside `serial`. */
  private async catchUp(upTo?: string): Promise<void> {
    if (upTo && compareIds(this.lastSeen, upTo) >= 0) return;
    const entries = (await this.redis!.xrange(this.streamKey, `(${this.lastSeen}`, upTo ?? '+')) as Array<[string, string[]]>;
    this.deliver(entries);
  }

  /**
   * After a reconnect: when the queue was compacted past what this process had read (entries it never saw may be
   * trimmed), the state is rebuilt from the base; otherwise it just reads on.
   */
  private async resync(): Promise<void> {
    const problems: string[] = [];
    const base = this.parseBase(await this.redis!.get(this.baseKey), problems);
    if (compareIds(base.lastId, this.lastSeen) <= 0) return this.catchUp();
    const read = await this.read(problems);
    this.o.log.warn('Queue: this process was away from Redis while the queue was compacted; its view was reloaded.');
    this.listener({ reset: read.base.snapshot, ops: read.ops, ...(problems.length ? { problems } : {}) });
  }

  /**
   * Appends from one turn of the event loop, and those made while a write is in flight, share one write (group
   * commit): one MULTI with every entry and a read of everything after what this process has applied (its own
   * entries included), so the ops are handed over in stream order in the same round trip.
   */
  append(ops: QueueOp[]): Promise<void> {
    if (this.closed) return Promise.reject(new KeelError(ErrorCodes.QUEUE_CLOSED, 'The queue is closed; open it again to continue.'));
    if (this.o.readOnly) return Promise.reject(new KeelError(ErrorCodes.QUEUE_CLOSED, 'This queue was opened read-only.'));
    if (ops.length === 0) return Promise.resolve();
    if (!this.batch) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.batch = { ops: [], promise, resolve, reject };
      if (!this.flushing)
        queueMicrotask(() => {
          this.flushed = this.flush();
        });
    }
    this.batch.ops.push(...ops);
    return this.batch.promise;
  }

  private async flush(): Promise<void> {
    const batch = this.batch;
    if (!batch || this.flushing) return;
    this.batch = undefined;
    this.flushing = true;
    try {
      const multi = this.redis!.multi();
      for (const op of batch.ops) multi.xadd(this.streamKey, '*', ...opFields(op, this.signer));
      multi.xrange(this.streamKey, `(${this.lastSeen}`, '+');
      // The inbound chat messages these pushes answer, for every machine's dedupe (knowsInbound), in the same
      // transaction as the pushes: after it, the message is known everywhere exactly when its action exists.
      for (const op of batch.ops) {
        if (op.op !== 'push') continue;
        const inbound = inboundOf(op.action);
        if (inbound) multi.set(this.inboundKey(inbound.channel, inbound.messageId), op.action.id, 'EX', INBOUND_TTL_S);
      }
      const res = await multi.exec();
      if (!res) throw new KeelError(ErrorCodes.QUEUE_UNREACHABLE, 'Redis discarded the queue write; nothing was stored.');
      let last = '0-0';
      for (let i = 0; i < batch.ops.length; i++) {
        const [err, id] = res[i]!;
        if (err) throw new KeelError(ErrorCodes.QUEUE_UNREACHABLE, `Redis refused the queue write: ${errorMessage(err)}`);
        last = String(id);
      }
      const [err, entries] = res[batch.ops.length]!;
      await this.serial(async () => {
        if (!err) this.deliver(entries as Array<[string, string[]]>);
        await this.catchUp(last);
      });
      batch.resolve();
    } catch (e) {
      // Whatever Redis or its client said (a lost connection, retries used up), for callers it is one thing: the
      // write was not stored, and trying again later may work.
      batch.reject(
        e instanceof KeelError
          ? e
          : new KeelError(ErrorCodes.QUEUE_UNREACHABLE, `The shared queue's Redis did not take the write: ${errorMessage(e)}`),
      );
    } finally {
      this.flushing = false;
      if (this.batch) this.flushed = this.flush();
    }
  }

  async compact(snapshot: () => QueueSnapshot): Promise<boolean> {
    if (!this.worker || this.closed) return false;
    return this.serial(async () => {
      await this.catchUp();
      if (this.opsSinceBase === 0) return true;
      const snap = snapshot();
      const base: Base = {
        v: 1,
        lastId: this.lastSeen,
        snapshot: snap,
        ...(this.signer ? { sig: this.signer.sign(basePayload(this.lastSeen, snap)) } : {}),
      };
      const done = (await this.redis!.eval(
        COMPACT_LUA,
        2,
        this.baseKey,
        this.streamKey,
        this.lastSeen,
        JSON.stringify(base),
        this.trimLagMs,
      )) as number;
      // Written, or another runner's base is newer already: either way the stream after the base is short now.
      this.opsSinceBase = 0;
      return done === 1;
    });
  }

  private inboundKey(channel: string, messageId: string): string {
    return `${this.prefix}inbound:${channel}:${messageId}`;
  }

  async knowsInbound(channel: string, messageId: string): Promise<boolean> {
    if (!this.redis || this.closed) return false;
    return (await this.redis.exists(this.inboundKey(channel, messageId))) === 1;
  }

  wantsCompaction(liveActions: number): boolean {
    return this.opsSinceBase >= this.compactMinOps && this.opsSinceBase > 2 * liveActions;
  }

  /** Workers whose lease is alive (this one included). */
  async liveWorkers(): Promise<Set<string>> {
    if (!this.redis) return new Set();
    const keys = await scanKeys(this.redis, this.leaseKey('*'));
    return new Set(keys.map((k) => k.slice(this.leaseKey('').length)));
  }

  private async renewLease(first = false): Promise<void> {
    const key = this.leaseKey(this.worker!);
    const value = JSON.stringify({ host: hostname(), pid: process.pid, since: new Date().toISOString() });
    const set = await this.redis!.set(key, value, 'PX', this.leaseMs, 'XX');
    if (set === null) {
      await this.redis!.set(key, value, 'PX', this.leaseMs);
      if (!first)
        this.o.log.warn(
          `Queue: this runner's lease had lapsed (no renewal for ${this.leaseMs} ms: a pause or a lost connection); other runners may have taken over its actions.`,
        );
    }
    if (first && !this.leaseTimer) {
      this.leaseTimer = setInterval(
        () => {
          this.renewLease().catch((e) => this.o.log.warn(`Queue: renewing this runner's lease failed: ${errorMessage(e)}`));
        },
        Math.max(200, Math.floor(this.leaseMs / 3)),
      );
      this.leaseTimer.unref();
    }
  }

  /** How long a lease lasts: how long a dead runner's actions wait before another runner takes them over. */
  get leaseDurationMs(): number {
    return this.leaseMs;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    // Writes already handed over finish first (a push in flight is acknowledged or fails, never cut off).
    while (this.flushing || this.batch) await this.flushed.catch(() => {});
    await this.chain.catch(() => {});
    // Gone on purpose: the lease goes with it, so the others take over this runner's actions at once.
    if (this.worker) await this.redis?.del(this.leaseKey(this.worker)).catch(() => {});
    this.reader?.disconnect();
    await this.readLoop?.catch(() => {});
    await this.redis?.quit().catch(() => this.redis?.disconnect());
  }

  /** Drops the connections without releasing the lease, as a killed process would (for tests). */
  crash(): void {
    this.closed = true;
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.reader?.disconnect();
    this.redis?.disconnect();
  }
}

/** Every key matching `pattern` (SCAN, so a large Redis is not blocked). */
async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys;
}

/** A connection for a one-off CLI command (its failure is the clear KEEL_E_QUEUE_UNREACHABLE of `connect`). */
function quietClient(backend: Omit<RedisStoreOptions, 'owner' | 'readOnly' | 'log'>): Promise<RedisClient> {
  const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
  return new RedisStore({ ...backend, owner: false, log: quiet }).connect();
}

/**
 * `keel push` to a shared queue: one XADD, without reading the queue (its cost does not depend on the queue's
 * length). The runners pick it up from the stream at once.
 */
export async function pushToRedis(backend: Omit<RedisStoreOptions, 'owner' | 'readOnly' | 'log'>, action: Action): Promise<void> {
  const redis = await quietClient(backend);
  try {
    const prefix = backend.prefix ?? 'keel:';
    await redis.xadd(`${prefix}queue:ops`, '*', ...opFields({ op: 'push', action }, signerOf(backend.signingKey, prefix)));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** A runner holding a lease on the shared queue, as `keel status` lists it. */
export interface SharedRunner {
  id: string;
  host?: string;
  pid?: number;
  since?: string;
}

/** The runners whose lease on the shared queue is alive (for `keel status`). */
export async function sharedQueueRunners(backend: Omit<RedisStoreOptions, 'owner' | 'readOnly' | 'log'>): Promise<SharedRunner[]> {
  const redis = await quietClient(backend);
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
          // a lease value this version does not read: the id is enough
        }
        return r;
      })
      .sort((a, b) => a.id.localeCompare(b.id));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
