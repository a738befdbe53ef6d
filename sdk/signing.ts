/**
 * Signatures of the shared queue's writes (queueRedisSigningKey): every op in the Redis stream and the compacted
 * base carry an HMAC-SHA256 of their bytes under a key every Keel machine has and Redis does not, so that whatever
 * else can write to that Redis (another application, a leaked password) cannot queue a task, settle one or rewrite
 * the queue: entries without a valid signature are ignored and reported. The queue's prefix is signed too, so an op
 * of one deployment is not accepted by another one sharing the Redis.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface Signer {
  sign(payload: string): string;
  /** Whether `sig` is the signature of `payload` (constant-time comparison). */
  verify(payload: string, sig: string | undefined): boolean;
}

/** The signer for `key` under `prefix`, or undefined when no key is set (nothing is signed or checked). */
export function signerOf(key: string | undefined, prefix: string): Signer | undefined {
  if (!key) return undefined;
  const mac = (payload: string) => createHmac('sha256', key).update(prefix).update('\n').update(payload).digest();
  return {
    sign: (payload) => mac(payload).toString('base64url'),
    verify(payload, sig) {
      if (typeof sig !== 'string' || sig.length !== 43) return false;
      const want = mac(payload);
      const got = Buffer.from(sig, 'base64url');
      return got.length === want.length && timingSafeEqual(got, want);
    },
  };
}
