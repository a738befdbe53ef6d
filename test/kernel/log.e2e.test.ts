import { spawn } from 'node:child_process';
import { join } from 'node:path';
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

  it('a log whose standard error can no longer be written (closed pipe, full disk) does not end the process', async () => {
    const script = [
      `import { LogSink } from ${JSON.stringify(join(import.meta.dirname, '..', '..', 'kernel', 'log.ts'))};`,
      "const log = new LogSink({ level: 3 }).logger('t');",
      'process.stdin.once("data", async () => {',
      '  for (let i = 0; i < 50; i++) { log.info(`line ${i} ${"x".repeat(2000)}`); await new Promise((r) => setTimeout(r, 5)); }',
      '  process.stdout.write("still running\\n");',
      '  process.stdin.destroy();',
      '});',
      'process.stdout.write("ready\\n");',
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await expect.poll(() => out, { timeout: 20_000 }).toContain('ready');
    // The reading end of its standard error goes away: every later write fails with EPIPE.
    child.stderr.destroy();
    child.stdin.end('go\n');
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(out).toContain('still running');
    expect(code).toBe(0);
  }, 60_000);
});
