import { describe, expect, it, vi } from 'vitest';
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

  it('spends nothing on a debug line that is not printed (not formatted, not scrubbed); at debug level it is scrubbed', () => {
    const secrets = vi.fn(() => ['sk-ant-very-secret-value-42']);
    new LogSink({ quiet: true, secrets }).logger('t').debug('hot path', { big: 'object' });
    expect(secrets).not.toHaveBeenCalled();
    const printed: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      new LogSink({ level: 4, secrets }).logger('t').debug('key sk-ant-very-secret-value-42 and xoxb-1234567890-abcdefghij');
    } finally {
      spy.mockRestore();
    }
    expect(printed.join('')).toContain('key sk-**** and [redacted]');
  });

  it('prints a message that starts with its own tag without repeating it, and keeps it whole for the ring', () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    const sink = new LogSink();
    try {
      sink.logger('chatC').info('chatC: connected as keel.');
      sink.logger('config').warn('the chatC: key is odd');
    } finally {
      spy.mockRestore();
    }
    const lines = printed.join('').split('\n').filter(Boolean);
    expect(lines.find((l) => l.includes('connected as keel'))).toMatch(/\[chatC\] connected as keel\.$/);
    expect(lines.find((l) => l.includes('is odd'))).toMatch(/\[config\] the chatC: key is odd$/);
    expect(sink.recent()[0]).toMatchObject({ tag: 'chatC', message: 'chatC: connected as keel.' });
  });
});
