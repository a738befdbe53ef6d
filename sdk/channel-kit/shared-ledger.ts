/**
 * The delivery ledger's copy in Redis, when the queue is shared by several machines (queueRedisUrl,
 * docs/scaling.md). A reply's ledger key is the same on every machine (`<action id>:r<n>`), but each machine's
 * ledger is in its own `KEEL_HOME`: after a runner dies in the middle of a reply, the runner that takes the action
 * over would send the whole reply again (its model may even word it differently). With this copy, the first
 * machine to send under a key stores its chunks in Redis, and marks each chunk there once the platform confirmed
 * it; a machine that comes to the same key later sends the stored chunks that are not marked, and nothing else.
 *
 * - One round trip per reply (a script that stores the chunks or returns the stored ones), before its first
 *   chunk; marks are written behind, without waiting. Nothing of this runs on the file queue.
 * - The duplicate window is the local ledger's, across machines: a chunk the platform accepted from a runner that
 *   died before its mark reached Redis is sent again.
 * - Kept 7 days.
 * - Signed with `queueRedisSigningKey` when it is set, as the queue's ops are: the stored chunks and each mark carry
 *   an HMAC, and what does not verify is not believed (stored chunks: this machine's own are sent instead; a mark:
 *   the chunk counts as unsent), so whatever else can write to the Redis cannot make a bot say its words or keep a
 *   chunk from being sent.
 * - Fenced, when the delivery is (the channel's Redis lease, lease.ts): the claim's script first checks that the
 *   lease still holds the sender's hold, in the same round trip, and stores nothing when it does not
 *   (`KEEL_E_LEASE_LOST`). A mark is not fenced: it records a chunk the platform accepted, which is true whoever
 *   holds the lease now (refusing it would have the chunk sent again).
 */
import type { Redis as RedisClient } from 'ioredis';
import { errorMessage } from '../errors.js';
import { type Signer, signerOf } from '../signing.js';
import type { Json, Logger } from '../types.js';
import { type LeaseHold, LeaseLostError } from './lease.js';

/** What the ledger needs of its shared copy. */
export interface SharedLedger {
  /**
   * Stores `chunks` under `key` unless the key is there already, and returns what is stored: the chunks (as first
   * stored, on whichever machine) and the platform ids of those already confirmed. With `hold`, refused
   * (`LeaseLostError`, nothing stored) unless the connection's lease still holds it.
   */
  claim(
    key: string,
    chatId: string,
    chunks: Json[],
    hold?: LeaseHold,
  ): Promise<{ chatId: string; chunks: Json[]; sent: Map<number, string> }>;
  /** Records that chunk `index` of `key` was confirmed with `platformId` (written behind). */
  mark(key: string, index: number, platformId: string): void;
  close(): Promise<void>;
}

const TTL_S = 7 * 24 * 3600;

/**
 * Fenced claims: KEYS[2] the channel's lease, ARGV[5] the sender's hold of it; -1 (nothing stored) when the lease
 * holds anything else.
 */
const FENCE = `if #KEYS > 1 and redis.call('GET', KEYS[2]) ~= ARGV[5] then return -1 end`;

/** KEYS[1]: the key's hash. ARGV: chat id, chunks JSON, TTL. Returns the hash's fields (empty when just stored). */
const CLAIM = `${FENCE}
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'chat', ARGV[1], 'chunks', ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {}
`;

/** CLAIM, storing the chunks' signature (ARGV[4]) beside them. */
const CLAIM_SIGNED = `${FENCE}
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'chat', ARGV[1], 'chunks', ARGV[2], 'sig', ARGV[4])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {}
`;

export class RedisSharedLedger implements SharedLedger {
  private client: Promise<RedisClient> | undefined;
  private readonly signer: Signer | undefined;

  constructor(private readonly o: { url: string; prefix: string; channel: string; log: Logger; signingKey?: string }) {
    this.signer = signerOf(o.signingKey, o.prefix);
  }

  /** What the stored chunks' signature covers: the channel, the key, the chat and the chunks' JSON. */
  private chunksPayload(key: string, chatId: string, chunksJson: string): string {
    return `ledger ${this.o.channel} ${key} ${chatId} ${chunksJson}`;
  }

  private markPayload(key: string, index: number, platformId: string): string {
    return `mark ${this.o.channel} ${key} ${index} ${platformId}`;
  }

  private redis(): Promise<RedisClient> {
    this.client ??= (async () => {
      const { Redis } = await import('ioredis');
      const c = new Redis(this.o.url, { lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 3 });
      c.on('error', () => {}); // reported through the calls that fail
      // Not left dialling on its own after a failed first connection (the next call makes a new client).
      await c.connect().catch((e: unknown) => {
        c.disconnect();
        throw e;
      });
      return c;
    })();
    this.client.catch(() => {
      this.client = undefined;
    });
    return this.client;
  }

  private hash(key: string): string {
    return `${this.o.prefix}ledger:${this.o.channel}:${key}`;
  }

  async claim(key: string, chatId: string, chunks: Json[], hold?: LeaseHold) {
    const redis = await this.redis();
    const json = JSON.stringify(chunks);
    const sig = this.signer ? this.signer.sign(this.chunksPayload(key, chatId, json)) : '';
    // Signed: the chunks' signature rides with them (ARGV[2] stays the chunks alone; the script stores the rest).
    const fields = (await redis.eval(
      this.signer ? CLAIM_SIGNED : CLAIM,
      hold ? 2 : 1,
      this.hash(key),
      ...(hold ? [hold.key] : []),
      chatId,
      json,
      TTL_S,
      ...(this.signer || hold ? [sig] : []),
      ...(hold ? [hold.value] : []),
    )) as string[] | number;
    if (fields === -1)
      throw new LeaseLostError(
        `${this.o.channel}: send refused: this process no longer holds the connection's lease with the newest fencing token (it held token ${hold?.token}; another process took the lease, or it lapsed). Nothing of the message was stored or sent.`,
      );
    if (typeof fields === 'number' || fields.length === 0) return { chatId, chunks, sent: new Map<number, string>() };
    const h = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) h.set(fields[i]!, fields[i + 1]!);
    const storedChat = h.get('chat') ?? chatId;
    const storedJson = h.get('chunks') ?? '[]';
    if (this.signer && !this.signer.verify(this.chunksPayload(key, storedChat, storedJson), h.get('sig'))) {
      // Not stored by a Keel with the key: this machine's own chunks are what it sends.
      this.o.log.error(
        `Shared ledger: the stored reply under ${this.hash(key)} has no valid signature (queueRedisSigningKey); it is ignored and this machine's own reply is sent. Something without the key writes to this Redis, or a machine runs with another key or none.`,
      );
      return { chatId, chunks, sent: new Map<number, string>() };
    }
    const sent = new Map<number, string>();
    for (const [f, v] of h) {
      if (!f.startsWith('sent:')) continue;
      const index = Number(f.slice(5));
      if (!this.signer) {
        sent.set(index, v);
        continue;
      }
      // `<platform id> <signature>`: a mark that does not verify leaves the chunk unsent (sent again, not lost).
      const at = v.lastIndexOf(' ');
      const id = at > 0 ? v.slice(0, at) : '';
      if (at > 0 && this.signer.verify(this.markPayload(key, index, id), v.slice(at + 1))) sent.set(index, id);
    }
    return { chatId: storedChat, chunks: JSON.parse(storedJson) as Json[], sent };
  }

  mark(key: string, index: number, platformId: string): void {
    const value = this.signer ? `${platformId} ${this.signer.sign(this.markPayload(key, index, platformId))}` : platformId;
    this.redis()
      .then((r) => r.hset(this.hash(key), `sent:${index}`, value))
      .catch((e: unknown) => this.o.log.warn(`Shared ledger: could not record a sent chunk in Redis: ${errorMessage(e)}`));
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (!c) return;
    const r = await c.catch(() => undefined);
    await r?.quit().catch(() => r.disconnect());
  }
}

/**
 * The shared copy for a channel's ledger when the queue is shared through Redis, else undefined. A plugin that did
 * not declare `queueRedisUrl` in its manifest's `permissions.secrets` cannot read it, and keeps its ledger local.
 * @example const ledger = new DeliveryLedger(store, sharedLedger(ctx, 'chatA'));
 */
export function sharedLedger(ctx: { config: { get(key: string): unknown }; log: Logger }, channel: string): SharedLedger | undefined {
  let url: unknown;
  try {
    url = ctx.config.get('queueRedisUrl');
  } catch {
    return undefined;
  }
  if (typeof url !== 'string' || !url) return undefined;
  const prefix = ctx.config.get('queueRedisPrefix');
  let signingKey: unknown;
  try {
    signingKey = ctx.config.get('queueRedisSigningKey');
  } catch {
    // not declared in the plugin's permissions.secrets: unsigned (as every machine must agree on this, say so)
    ctx.log.warn(
      `Shared ledger of ${channel}: queueRedisSigningKey is not readable (not in the manifest's permissions.secrets); its entries are not signed.`,
    );
  }
  return new RedisSharedLedger({
    url,
    prefix: typeof prefix === 'string' && prefix ? prefix : 'keel:',
    channel,
    log: ctx.log,
    ...(typeof signingKey === 'string' && signingKey ? { signingKey } : {}),
  });
}
