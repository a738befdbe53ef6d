import { describe, expect, it } from 'vitest';
import { LogSink } from '../../kernel/log.js';

describe('log sink', () => {
  it('scrubs secret values from every line and keeps a bounded ring filtered by level', () => {
    const secret = 'sk-ant-very-secret-value-42';
    const sink = new LogSink({ quiet: true, capacity: 3, secrets: () => [secret] });
    const log = sink.logger('test');
    log.info(`calling with key ${secret}`);
    log.warn('careful');
    log.error('bad', { key: secret });
    log.info('four');
    const all = sink.recent();
    expect(all).toHaveLength(3);
    expect(all.map((e) => e.message).join('\n')).not.toContain(secret);
    expect(sink.recent({ level: 'error' })[0]!.message).toMatch(/sk-\*\*\*\*/);
    expect(sink.recent({ level: 'warn' })).toHaveLength(1);
    expect(sink.recent({ limit: 1 })[0]!.message).toBe('four');
    expect(all[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
