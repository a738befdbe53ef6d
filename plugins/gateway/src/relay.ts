/**
 * Live events across processes when the queue is shared through Redis (queueRedisUrl, docs/scaling.md): every
 * process's agent events (thinking, skill calls and results, the actions' lifecycle) are published on one Redis
 * channel, and a gateway that serves re-emits the others' to its WebSocket clients and the dashboard, each marked
 * with the `host` it came from. Without it, a dashboard showed only what its own process's runner did.
 *
 * - A process whose gateway does not serve (`keel run` alone) only publishes; nothing is published when no
 *   queue is shared.
 * - Events come from the publishing process's own bus, so texts are already capped and its secrets masked.
 * - Best effort, like the WebSocket itself: a lost connection loses events, never actions (the queue is the record;
 *   a client that reconnects reads `GET /api/tasks`).
 * ioredis is imported only when a queue is shared.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis as RedisClient } from 'ioredis';
import { errorMessage } from '../../../sdk/errors.js';
import type { Logger } from '../../../sdk/index.js';
import type { EventBus } from './events.js';

/** What is relayed: what the agent does. Configuration, plugin and log events stay with their process. */
export const RELAYED_EVENTS: ReadonlySet<string> = new Set([
  'thinking',
  'action',
  'observation',
  'action.queued',
  'action.amended',
  'action.started',
  'action.completed',
  'action.retry',
  'action.failed',
  'action.removed',
]);

export interface Relay {
  stop(): Promise<void>;
}

/** The shared queue's Redis settings, when a queue is shared (the gateway declares `queueRedisUrl` as a secret it reads). */
export function relaySettings(config: { get(key: string): unknown }): { url: string; prefix: string } | undefined {
  const url = config.get('queueRedisUrl');
  if (typeof url !== 'string' || !url) return undefined;
  const prefix = config.get('queueRedisPrefix');
  return { url, prefix: typeof prefix === 'string' && prefix ? prefix : 'keel:' };
}

/**
 * Publishes `bus`'s agent events and, with `receive`, emits other processes' on it.
 * @example const relay = await startRelay({ ...relaySettings(ctx.config)!, bus, receive: true, log: ctx.log });
 */
export async function startRelay(o: { url: string; prefix: string; bus: EventBus; receive: boolean; log: Logger }): Promise<Relay> {
  const { Redis } = await import('ioredis');
  const channel = `${o.prefix}events`;
  const origin = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const host = hostname();
  const connect = async (): Promise<RedisClient> => {
    const c = new Redis(o.url, { lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 1 });
    c.on('error', () => {}); // best effort: the queue reports Redis outages
    // Not left dialling on its own after a failed first connection.
    await c.connect().catch((e: unknown) => {
      c.disconnect();
      throw e;
    });
    return c;
  };
  const pub = await connect();
  /** Events this process received from another one: never published again. */
  const foreign = new WeakSet<object>();
  let warned = false;
  const unsubscribe = o.bus.subscribe((e) => {
    if (!RELAYED_EVENTS.has(e.event) || foreign.has(e.data)) return;
    pub.publish(channel, JSON.stringify({ origin, host, event: e.event, data: e.data })).catch((err: unknown) => {
      if (warned) return;
      warned = true;
      o.log.warn(`gateway: could not relay live events through Redis (${errorMessage(err)}); they stay with this process.`);
    });
  });
  let sub: RedisClient | undefined;
  if (o.receive) {
    // The second connection failing leaves nothing of the first behind (the caller goes on without a relay).
    const undo = (e: unknown): never => {
      unsubscribe();
      sub?.disconnect();
      pub.disconnect();
      throw e;
    };
    sub = await connect().catch(undo);
    sub.on('message', (_channel: string, raw: string) => {
      let m: { origin?: unknown; host?: unknown; event?: unknown; data?: unknown };
      try {
        m = JSON.parse(raw) as typeof m;
      } catch {
        return;
      }
      if (m.origin === origin || typeof m.event !== 'string' || !RELAYED_EVENTS.has(m.event)) return;
      if (!m.data || typeof m.data !== 'object' || Array.isArray(m.data)) return;
      const data = { ...(m.data as Record<string, unknown>), host: typeof m.host === 'string' ? m.host : 'another process' };
      foreign.add(data);
      o.bus.emit(m.event, data);
    });
    await sub.subscribe(channel).catch(undo);
  }
  return {
    async stop() {
      unsubscribe();
      sub?.disconnect();
      await pub.quit().catch(() => pub.disconnect());
    },
  };
}
