/**
 * The kit's `alive` mark: when a channel was last known connected, written only while connected (now, every minute,
 * and at a clean stop), read back by the next start; a fallback only when the store has no mark.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ALIVE_EVERY_MS, ALIVE_KEY, AliveMark, ChannelStore } from '../../sdk/channel-kit/index.js';
import { rm, tmp } from '../helpers.js';

const log = { debug() {}, info() {}, warn() {}, error() {} };
let home: string | undefined;
let store: ChannelStore | undefined;
afterEach(() => {
  vi.useRealTimers();
  store?.close();
  if (home) rm(home);
  store = undefined;
  home = undefined;
});

function open(): ChannelStore {
  home ??= tmp('keel-alive-');
  store = ChannelStore.open(home, 'test');
  return store;
}

describe('AliveMark', () => {
  it('is written only while connected: at once when asked, every minute, and at a clean stop; read back after a restart', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(1_000_000);
    const s = open();
    let up = false;
    const alive = new AliveMark({ store: s, log, connected: () => up, channel: 'test' });
    expect(alive.last()).toBeUndefined();
    expect(alive.last(() => 42)).toBe(42);

    alive.start();
    vi.advanceTimersByTime(ALIVE_EVERY_MS);
    expect(s.getValue(ALIVE_KEY)).toBeUndefined(); // not connected: nothing written

    alive.mark(true); // the caller knows the connection just came up
    expect(alive.last()).toBe(1_000_000 + ALIVE_EVERY_MS);
    up = true;
    vi.advanceTimersByTime(ALIVE_EVERY_MS);
    expect(alive.last()).toBe(1_000_000 + 2 * ALIVE_EVERY_MS);
    expect(alive.last(() => 42)).toBe(1_000_000 + 2 * ALIVE_EVERY_MS);

    up = false;
    vi.advanceTimersByTime(5 * ALIVE_EVERY_MS);
    expect(alive.last()).toBe(1_000_000 + 2 * ALIVE_EVERY_MS); // a lost connection keeps the last time it was up
    up = true;
    vi.setSystemTime(9_000_000);
    alive.stop();
    vi.advanceTimersByTime(5 * ALIVE_EVERY_MS); // no more minutely marks after stop
    vi.setSystemTime(20_000_000);
    vi.advanceTimersByTime(ALIVE_EVERY_MS);
    s.close();

    const again = new AliveMark({ store: open(), log, connected: () => false, channel: 'test' });
    expect(again.last()).toBe(9_000_000);
  });

  it('a store that cannot be written to is noted at debug level, not thrown', () => {
    const s = open();
    const debug: string[] = [];
    const alive = new AliveMark({
      store: s,
      log: { ...log, debug: (m: string) => void debug.push(m) },
      connected: () => true,
      channel: 'chatX',
    });
    s.db.exec('DROP TABLE kv');
    expect(() => alive.mark()).not.toThrow();
    expect(debug[0]).toMatch(/^chatX: could not note the time: /);
  });

  it('held, the mark does not move (not now, not every minute, not at a stop) until released', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(1_000_000);
    const s = open();
    const alive = new AliveMark({ store: s, log, connected: () => true, channel: 'test' });
    alive.mark();
    alive.start();
    alive.hold();
    vi.setSystemTime(5_000_000);
    alive.mark(true);
    vi.advanceTimersByTime(3 * ALIVE_EVERY_MS);
    alive.stop();
    expect(alive.last()).toBe(1_000_000);
    alive.release();
    expect(alive.last()).toBe(5_000_000 + 3 * ALIVE_EVERY_MS);
    alive.hold();
    alive.release(false); // released while not connected: no write, and the next marks go on
    expect(alive.last()).toBe(5_000_000 + 3 * ALIVE_EVERY_MS);
    vi.setSystemTime(9_000_000);
    alive.mark();
    expect(alive.last()).toBe(9_000_000);
  });
});
