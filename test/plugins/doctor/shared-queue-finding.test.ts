/**
 * The doctor's findings on the shared queue's Redis (queueRedisUrl): no password (anyone who reaches it queues
 * tasks as the operator), no TLS and no signing key beyond loopback; never the password or the key itself.
 */
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { buildReport, type DoctorSources } from '../../../plugins/doctor/src/report.js';

function sources(values: Record<string, unknown>): DoctorSources {
  return { source: 'config', home: tmpdir(), get: (k) => values[k], declared: (k) => k in values };
}

const KEY = 'a-long-random-signing-key-0123456789';
const redisFindings = async (url?: string, signingKey?: string) =>
  (
    await buildReport(sources(url === undefined ? {} : { queueRedisUrl: url, ...(signingKey ? { queueRedisSigningKey: signingKey } : {}) }))
  ).findings.filter((f) => /shared queue's Redis/.test(f.message));

describe('doctor: the shared queue', () => {
  it('warns about a Redis without a password, without TLS and without a signing key beyond loopback', async () => {
    const f = await redisFindings('redis://10.0.0.5:6379/0');
    expect(f.map((x) => x.level)).toEqual(['warn', 'warn', 'warn']);
    expect(f[0]!.message).toMatch(/without a password: anyone who can reach it can queue tasks as the operator/);
    expect(f[0]!.fix).toMatch(/requirepass/);
    expect(f[1]!.message).toMatch(/without TLS/);
    expect(f[1]!.fix).toMatch(/rediss:\/\//);
    expect(f[2]!.message).toMatch(/holds unsigned ops: anything else that can write to that Redis .* can queue tasks as the operator/);
    expect(f[2]!.fix).toMatch(/queueRedisSigningKey/);
  });

  it('says nothing of a password-protected, signed Redis over TLS, or on loopback, and never shows the password or key', async () => {
    expect(await redisFindings('rediss://:s3cret-pass@redis.internal:6380', KEY)).toEqual([]);
    expect(await redisFindings('redis://:s3cret-pass@127.0.0.1:6379')).toEqual([]);
    expect(await redisFindings()).toEqual([]);
    const plain = await buildReport(sources({ queueRedisUrl: 'redis://:s3cret-pass@10.0.0.5:6379', queueRedisSigningKey: KEY }));
    expect(JSON.stringify(plain)).not.toContain('s3cret-pass');
    expect(JSON.stringify(plain)).not.toContain(KEY);
    expect(plain.findings.filter((f) => /shared queue's Redis/.test(f.message))).toHaveLength(1);
    // Over TLS with a password but unsigned: the one finding left is the signing key's.
    expect((await redisFindings('rediss://:s3cret-pass@redis.internal:6380')).map((x) => x.message)).toEqual([
      expect.stringMatching(/holds unsigned ops/),
    ]);
  });
});
