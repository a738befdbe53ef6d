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
 */
import type { Redis as RedisClient } from 'ioredis';
import { errorMessage } from '../errors.js';
import type { Json, Logger } from '../types.js';

/** What the ledger needs of its shared copy. */
export interface SharedLedger {
  /**
   * Stores `chunks` under `key` unless the key is there already, and returns what is stored: the chunks (as first
   * stored, on whichever machine) and the platform ids of those already confirmed.
   */
  claim(key: string, chatId: string, chunks: Json[]): Promise<{ chatId: string; chunks: Json[]; sent: Map<number, string> }>;
  /** Records that chunk `index` of `key` was confirmed with `platformId` (written behind). */
  mark(key: string, index: number, platformId: string): void;
  close(): Promise<void>;
}

const TTL_S = 7 * 24 * 3600;

/** KEYS[1]: the key's hash. ARGV: chat id, chunks JSON, TTL. Returns the hash's fields (empty when just stored). */
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'chat', ARGV[1], 'chunks', ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return {}
`;

export class RedisSharedLedger implements SharedLedger {
  private client: Promise<RedisClient> | undefined;

  constructor(private readonly o: { url: string; prefix: string; channel: string; log: Logger }) {}

  private redis(): Promise<RedisClient> {
    this.client ??= (async () => {
      const { Redis } = await import('ioredis');
      const c = new Redis(this.o.url, { lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 3 });
      c.on('error', () => {}); // reported through the calls that fail
      await c.connect();
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

  async claim(key: string, chatId: string, chunks: Json[]) {
    const redis = await this.redis();
    const fields = (await redis.eval(CLAIM, 1, this.hash(key), chatId, JSON.stringify(chunks), TTL_S)) as string[];
    if (fields.length === 0) return { chatId, chunks, sent: new Map<number, string>() };
    const h = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) h.set(fields[i]!, fields[i + 1]!);
    const sent = new Map<number, string>();
    for (const [f, v] of h) if (f.startsWith('sent:')) sent.set(Number(f.slice(5)), v);
    return { chatId: h.get('chat') ?? chatId, chunks: JSON.parse(h.get('chunks') ?? '[]') as Json[], sent };
  }

  mark(key: string, index: number, platformId: string): void {
    this.redis()
      .then((r) => r.hset(this.hash(key), `sent:${index}`, platformId))
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
  return new RedisSharedLedger({ url, prefix: typeof prefix === 'string' && prefix ? prefix : 'keel:', channel, log: ctx.log });
}
