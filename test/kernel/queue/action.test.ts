import { describe, expect, it } from 'vitest';
import { ErrorCodes, isKeelError } from '../../../kernel/errors.js';
import { createAction, normalizePriority, truncateForLog } from '../../../kernel/queue/index.js';

const NOW = Date.UTC(2025, 5, 1, 8, 30, 0, 123);

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return isKeelError(e) ? e.code : 'not a KeelError';
  }
  return undefined;
}

describe('createAction', () => {
  it('fills the SPEC defaults', () => {
    const a = createAction({ task: 'water the plants' }, NOW);
    expect(a.id).toMatch(new RegExp(`^act_${NOW}_[0-9a-z]{8}$`));
    expect(a).toMatchObject({
      task: 'water the plants',
      priority: 5,
      status: 'pending',
      createdAt: '2025-06-01T08:30:00.123Z',
      source: 'cli',
      metadata: { retries: 0, maxRetries: 3, ttl: 3_600_000 },
    });
  });

  it('keeps actor, source, maxRetries, ttl and extra metadata, but not forged bookkeeping', () => {
    const a = createAction(
      {
        task: 't',
        source: 'chatA',
        actor: { kind: 'user', channel: 'chatA', userId: '42' },
        maxRetries: 1,
        ttl: 5000,
        metadata: { replyTo: { chatId: 7 }, retries: 99 },
      },
      NOW,
    );
    expect(a.source).toBe('chatA');
    expect(a.metadata).toMatchObject({ retries: 0, maxRetries: 1, ttl: 5000, actor: { userId: '42' }, replyTo: { chatId: 7 } });
  });

  it('clamps and rounds priorities, accepts numeric strings', () => {
    expect(normalizePriority(undefined)).toBe(5);
    expect(normalizePriority(0)).toBe(1);
    expect(normalizePriority(15)).toBe(10);
    expect(normalizePriority(-3)).toBe(1);
    expect(normalizePriority(7.6)).toBe(8);
    expect(normalizePriority('7')).toBe(7);
    expect(normalizePriority(' 12 ')).toBe(10);
  });

  it('rejects priorities that are not numbers, saying what is expected', () => {
    for (const bad of ['abc', Number.NaN, {}, [], true, '']) {
      expect(codeOf(() => normalizePriority(bad))).toBe(ErrorCodes.PRIORITY_INVALID);
    }
    expect(() => createAction({ task: 't', priority: 'abc' }, NOW)).toThrow(/number from 1 to 10/);
  });

  it('rejects a blank or missing task', () => {
    for (const task of ['', '   ', '\n\t', undefined, 42]) {
      expect(codeOf(() => createAction({ task } as never, NOW))).toBe(ErrorCodes.TASK_EMPTY);
    }
    expect(() => createAction({ task: '  ' }, NOW)).toThrow(/task is empty/i);
  });

  it('rejects nonsense retries and TTL', () => {
    expect(codeOf(() => createAction({ task: 't', maxRetries: -1 }, NOW))).toBe(ErrorCodes.INVALID_INPUT);
    expect(codeOf(() => createAction({ task: 't', ttl: 0 }, NOW))).toBe(ErrorCodes.INVALID_INPUT);
  });

  it('gives 10,000 actions created in the same millisecond distinct ids', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(createAction({ task: `t${i}` }, NOW).id);
    expect(ids.size).toBe(10_000);
    for (const id of ids) expect(id).toMatch(/^act_\d+_[0-9a-z]{8}$/);
  });

  it('keeps long tasks whole; truncateForLog shortens only the log line', () => {
    const long = 'x'.repeat(5000);
    const a = createAction({ task: long }, NOW);
    expect(a.task).toHaveLength(5000);
    const line = truncateForLog(a.task);
    expect(line.startsWith('x'.repeat(1000))).toBe(true);
    expect(line.length).toBeLessThan(1100);
    expect(line).toMatch(/4000 more characters/);
    expect(truncateForLog('short')).toBe('short');
  });
});
