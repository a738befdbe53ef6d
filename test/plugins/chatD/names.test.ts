/**
 * chatD's people names (plugins/chatD/src/names.ts): which name Slack shows, which ids a text mentions, and that a
 * lookup that does not answer never holds a message longer than its deadline (fake timers: no wall-clock wait).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mentionedIds, shownName, SlackNames } from '../../../plugins/chatD/src/names.js';

const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() } as never;

afterEach(() => {
  vi.useRealTimers();
});

describe('chatD names', () => {
  it('the name Slack shows: the display name, else the real name, else the handle', () => {
    expect(shownName({ name: 'ann', real_name: 'Ann Bell', profile: { display_name: 'Ann B.', real_name: 'Ann Bell' } })).toBe('Ann B.');
    expect(shownName({ name: 'ann', real_name: 'Ann Bell', profile: { display_name: '  ', real_name: 'Ann Bell' } })).toBe('Ann Bell');
    expect(shownName({ name: 'ann' })).toBe('ann');
    expect(shownName({})).toBeUndefined();
  });

  it('the ids a text mentions, once each, in order (old and new forms; not channels or groups)', () => {
    expect(mentionedIds('<@U0B> and <@W0C|carl> and <@U0B> in <#C0D|general> <!subteam^S0E|@team>')).toEqual(['U0B', 'W0C']);
  });

  it('a lookup that does not answer is given up after 3 s; the answer, when it comes, is kept for the next message', async () => {
    vi.useFakeTimers();
    let answer!: (v: unknown) => void;
    const info = vi.fn(() => new Promise((r) => (answer = r)));
    const names = new SlackNames({ client: { users: { info } } as never, log });
    const first = names.of(['U0SLOW001', 'U0SLOW001', 'C0NOTAUSER']);
    await vi.advanceTimersByTimeAsync(3000);
    expect(await first).toEqual(new Map());
    expect(info).toHaveBeenCalledTimes(1);
    answer({ ok: true, user: { name: 'slow' } });
    await vi.advanceTimersByTimeAsync(0);
    expect(await names.of(['U0SLOW001'])).toEqual(new Map([['U0SLOW001', 'slow']]));
    expect(info).toHaveBeenCalledTimes(1);
  });
});
