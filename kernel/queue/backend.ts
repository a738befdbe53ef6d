/**
 * Where the queue lives, as the CLI's short commands (`keel push`, `keel status`, `keel tasks`) need to know it
 * without loading the whole configuration: the environment first, then `keel.config.yaml`, as ConfigStore orders
 * them. The file is parsed only when it mentions a queue key, so `keel push` stays light on the file queue.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SharedQueueOptions } from './bull-queue.js';

export type RedisBackend = SharedQueueOptions;

/** Builds the shared queue's options from the queue keys (undefined when no URL is set). */
export function redisBackend(url: unknown, prefix: unknown, leaseSeconds: unknown, signingKey?: unknown): RedisBackend | undefined {
  if (typeof url !== 'string' || url === '') return undefined;
  return {
    url,
    ...(typeof prefix === 'string' && prefix ? { prefix } : {}),
    ...(typeof leaseSeconds === 'number' && leaseSeconds > 0 ? { leaseMs: leaseSeconds * 1000 } : {}),
    ...(typeof signingKey === 'string' && signingKey ? { signingKey } : {}),
  };
}

/** The shared queue's settings from the environment and the config file, or undefined for the file queue. */
export async function queueBackendOf(
  home: string,
  env: NodeJS.ProcessEnv = process.env,
  configFile?: string,
): Promise<RedisBackend | undefined> {
  let file: Record<string, unknown> = {};
  const path = configFile ?? join(home, 'keel.config.yaml');
  if (existsSync(path)) {
    const text = readFileSync(path, 'utf8');
    if (/\bqueue(Redis|WorkerLease)/.test(text)) {
      const { parse } = await import('yaml');
      const doc = parse(text) as unknown;
      if (doc && typeof doc === 'object') file = doc as Record<string, unknown>;
    }
  }
  const lease = env.KEEL_QUEUE_WORKER_LEASE_SECONDS ? Number(env.KEEL_QUEUE_WORKER_LEASE_SECONDS) : file.queueWorkerLeaseSeconds;
  return redisBackend(
    env.KEEL_QUEUE_REDIS_URL || file.queueRedisUrl,
    env.KEEL_QUEUE_REDIS_PREFIX || file.queueRedisPrefix,
    lease,
    env.KEEL_QUEUE_REDIS_SIGNING_KEY || file.queueRedisSigningKey,
  );
}
