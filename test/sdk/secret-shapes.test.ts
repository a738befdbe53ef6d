/**
 * sdk/secret-shapes.ts: what counts as a credential in a log line or an error, and what must stay readable.
 */
import { describe, expect, it } from 'vitest';
import { LogSink } from '../../kernel/log.js';
import { hasSecretShape, scrubSecretShapes } from '../../sdk/secret-shapes.js';

describe('secret shapes', () => {
  it.each([
    ['a Slack bot token', 'xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx'],
    ['a Slack app token', 'xapp-1-A0123456789-1234567890123-abcdef0123456789'],
    ['a GitHub token', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['a fine-grained GitHub token', 'github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789'],
    ['a Telegram bot token', '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw'],
    ['a Discord bot token', 'MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.abcdefghijklmnopqrstuvwxyz012345'],
    ['an OpenAI key', 'sk-proj-abcdefghijklmnop'],
    ['an Anthropic key', 'sk-ant-api03-abcdefghijkl'],
    ['a Google key', 'AIzaSyA1234567890abcdefgh'],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE'],
    ['a JSON Web Token', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ])('%s is redacted wherever it stands', (_what, token) => {
    expect(scrubSecretShapes(`use ${token}, please`)).toBe('use [redacted], please');
    expect(scrubSecretShapes(`(${token})`)).toBe('([redacted])');
    // Asked twice in a row (the shapes are global regexes: no state may leak from one call to the next).
    expect([hasSecretShape(`a ${token}`), hasSecretShape(`b ${token}`)]).toEqual([true, true]);
  });

  it('keeps the label of a labelled credential, and takes a private key whole', () => {
    expect(scrubSecretShapes('GET /v1?key=abc123&q=1')).toBe('GET /v1?key=[redacted]&q=1');
    expect(scrubSecretShapes('Authorization: Bearer abcdef123456')).toBe('Authorization: Bearer [redacted]');
    expect(scrubSecretShapes('sent with bearer abcdef123456 ok')).toBe('sent with bearer [redacted] ok');
    const pem = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----';
    expect(scrubSecretShapes(`my key:\n${pem}\nthanks`)).toBe('my key:\n[redacted private key]\nthanks');
    expect(scrubSecretShapes('cut off -----BEGIN RSA PRIVATE KEY-----\nMIIE')).toBe('cut off [redacted private key]');
  });

  it('leaves ids, times and ordinary words alone', () => {
    const plain = [
      'Running act_1795727587369_3fahp1ca (priority 5): what went wrong?',
      'chatC: message 1180000000000000001 in 1180000000000000002 by 420000000000000042',
      'chatD: C0GENERAL1:1700000000.000100 from U0ADMIN01 in thread 1699999999.000001',
      'chatA: -1001234567890:42 from 123456789',
      'the task key is k1; skip-to-end; sketch ask-me-later; the token was refused (invalid_auth)',
      'https://example.com/page?id=5&lang=en at 2026-11-26T10:00:00.000Z',
      'Basic configuration is done; Authorization failed for U0ADMIN01',
    ];
    for (const line of plain) {
      expect(scrubSecretShapes(line)).toBe(line);
      expect(hasSecretShape(line)).toBe(false);
    }
  });

  it('a token pasted into a chat reaches no log line, the ring or the log file', () => {
    const written: string[] = [];
    const sink = new LogSink({ quiet: true, write: (e) => written.push(e.message) });
    sink.logger('runner').info('Running act_1 (priority 5): deploy with xoxb-1234567890-0987654321-AbCdEfGhIjKl');
    expect(sink.recent()[0]!.message).toBe('Running act_1 (priority 5): deploy with [redacted]');
    expect(written).toEqual(['Running act_1 (priority 5): deploy with [redacted]']);
  });
});
