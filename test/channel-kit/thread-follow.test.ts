/**
 * The kit's ThreadFollow: a thread is followed once a message addressed to the bot was recorded there (persisted,
 * so across a restart) or the bot posted in or under it (in memory); not after 7 days, not when turned off; prune()
 * deletes what is older.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChannelStore, partKey, SWEEP_ACTIVE_MS, ThreadFollow } from '../../sdk/channel-kit/index.js';
import { rm, tmp } from '../helpers.js';

let home: string | undefined;
let store: ChannelStore | undefined;
afterEach(() => {
  vi.useRealTimers();
  store?.close();
  if (home) rm(home);
  store = undefined;
  home = undefined;
});
const open = () => {
  home ??= tmp('keel-threads-');
  store = ChannelStore.open(home, 'test');
  return store;
};

describe('ThreadFollow', () => {
  it('follows a thread whose entry was written (across a restart) or that the bot posted in; not others, not when off', () => {
    let on = true;
    const s = open();
    const threads = new ThreadFollow(s, () => on);
    expect(threads.follows('C1:100.1')).toBe(false);
    const e = threads.entry('C1:100.1');
    expect(e.key).toBe('part:C1:100.1');
    s.setValue(e.key, e.value());
    threads.posted('C1:200.2');
    expect(threads.follows('C1:100.1')).toBe(true);
    expect(threads.follows('C1:200.2')).toBe(true);
    expect(threads.follows('C1:300.3')).toBe(false);
    on = false;
    expect(threads.follows('C1:100.1')).toBe(false);
    on = true;
    s.close();
    // A new process: the written entry holds, what was only in memory does not.
    const again = new ThreadFollow(open(), () => true);
    expect(again.follows('C1:100.1')).toBe(true);
    expect(again.follows('C1:200.2')).toBe(false);
  });

  it('a thread not taken part in for 7 days is no longer followed, and prune() deletes its entry', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(10 * SWEEP_ACTIVE_MS);
    const s = open();
    const threads = new ThreadFollow(s, () => true);
    s.setValue(partKey('old'), String(Date.now() - SWEEP_ACTIVE_MS - 1));
    s.setValue(partKey('new'), String(Date.now() - 1000));
    threads.posted('mine');
    vi.setSystemTime(10 * SWEEP_ACTIVE_MS + 1000);
    expect(threads.follows('old')).toBe(false);
    expect(threads.follows('new')).toBe(true);
    expect(threads.follows('mine')).toBe(true);
    threads.prune();
    expect(s.getValue(partKey('old'))).toBeUndefined();
    expect(s.getValue(partKey('new'))).toBeDefined();
    vi.setSystemTime(11 * SWEEP_ACTIVE_MS + 2000);
    expect(threads.follows('mine')).toBe(false);
  });

  it('keeps the last 2,000 threads the bot posted in', () => {
    const threads = new ThreadFollow(open(), () => true);
    for (let i = 0; i < 2001; i++) threads.posted(`t${i}`);
    expect(threads.follows('t0')).toBe(false);
    expect(threads.follows('t1')).toBe(true);
    expect(threads.follows('t2000')).toBe(true);
  });
});
