/**
 * Housekeeping (docs/housekeeping.md): old downloads are removed (never what a link points to), a log file past
 * logFileMaxMB moves to <name>.1, the token usage log rotates as it is written, and the channel stores are pruned
 * daily, not only at start.
 */
import { existsSync, lutimesSync, mkdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Housekeeping, logLimitBeforeStart, rotateInPlace, sweepFolder } from '../../kernel/housekeeping.js';
import { UsageLog } from '../../plugins/agent/src/usage.js';
import { ChannelStore } from '../../sdk/channel-kit/index.js';
import { rm, tmp } from '../helpers.js';

const DAY = 24 * 3600 * 1000;
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) rm(d);
});
const home = () => {
  const d = tmp('keel-housekeeping-');
  dirs.push(d);
  return d;
};
/** Writes a file last modified `days` ago. */
function file(path: string, days: number, text = 'x'): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  const t = new Date(Date.now() - days * DAY);
  utimesSync(path, t, t);
  return path;
}
const logged = () => {
  const lines: string[] = [];
  const log = { debug() {}, info: (m: string) => lines.push(m), warn: (m: string) => lines.push(`warn: ${m}`), error() {} };
  return { log, lines };
};

describe('downloads sweep', () => {
  it('removes files not written for downloadsKeepDays and the folders left empty; keeps newer ones, the root, and link targets', async () => {
    const h = home();
    const dl = join(h, 'downloads');
    const old1 = file(join(dl, 'chatA', '1_old.jpg'), 40, 'a'.repeat(1000));
    const old2 = file(join(dl, 'email', 'deep', 'er', 'old.pdf'), 31);
    const fresh = file(join(dl, 'chatA', '2_new.jpg'), 1);
    const screenshot = file(join(dl, 'screenshot-1.png'), 45);
    // a link to a file outside downloads: the link goes, what it points to stays
    const outside = file(join(h, 'precious.txt'), 100, 'keep me');
    const link = join(dl, 'link-to-precious');
    symlinkSync(outside, link);
    const t = new Date(Date.now() - 50 * DAY);
    lutimesSync(link, t, t);

    const r = await sweepFolder(dl, Date.now() - 30 * DAY);
    expect(r.files).toBe(4);
    expect(r.bytes).toBe(1000 + 1 + 1);
    for (const gone of [old1, old2, screenshot, link]) expect(existsSync(gone), gone).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    expect(readFileSync(outside, 'utf8')).toBe('keep me');
    expect(existsSync(join(dl, 'email'))).toBe(false); // emptied folders go, all the way up
    expect(existsSync(join(dl, 'chatA'))).toBe(true);
    expect(existsSync(dl)).toBe(true);
    // no downloads folder at all: nothing to do, no error
    expect(await sweepFolder(join(h, 'nope'), Date.now())).toEqual({ files: 0, bytes: 0, folders: 0 });
  });

  it('Housekeeping follows downloadsKeepDays (0 keeps everything) and says what it removed', async () => {
    const h = home();
    const old = file(join(h, 'downloads', 'chatB', 'voice.ogg'), 10);
    const settings: Record<string, unknown> = { downloadsKeepDays: 0 };
    const { log, lines } = logged();
    const hk = new Housekeeping({ home: h, config: { get: (k) => settings[k] }, log, downloads: true });
    expect(await hk.sweepDownloads()).toBeUndefined();
    expect(existsSync(old)).toBe(true);
    settings.downloadsKeepDays = 30;
    expect((await hk.sweepDownloads())?.files).toBe(0);
    expect(existsSync(old)).toBe(true);
    settings.downloadsKeepDays = 7;
    expect((await hk.sweepDownloads())?.files).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect(lines.join('\n')).toMatch(/Removed 1 file\(s\) \(0\.0 MB\) from downloads\/ not written for 7 day\(s\) \(downloadsKeepDays\)/);
    await hk.stop();
  });
});

describe('log rotation', () => {
  it('a log past the limit moves to <name>.1 (one old copy) and starts empty; under the limit, or with 0, nothing changes', () => {
    const h = home();
    const log = join(h, 'daemon.log');
    writeFileSync(log, 'first run\n'.repeat(200)); // 2,000 bytes
    expect(rotateInPlace(log, 0)).toBe(false);
    expect(rotateInPlace(log, 5000)).toBe(false);
    expect(statSync(log).size).toBe(2000);
    expect(rotateInPlace(log, 1000)).toBe(true);
    expect(statSync(log).size).toBe(0);
    expect(readFileSync(`${log}.1`, 'utf8')).toBe('first run\n'.repeat(200));
    writeFileSync(log, 'second run\n'.repeat(200));
    expect(rotateInPlace(log, 1000)).toBe(true);
    expect(readFileSync(`${log}.1`, 'utf8')).toBe('second run\n'.repeat(200));
    expect(rotateInPlace(join(h, 'missing.log'), 1)).toBe(false);
  });

  it('before the configuration loads, the limit comes from the environment, else the config file, else 10 MB', async () => {
    const h = home();
    expect(await logLimitBeforeStart(h, undefined, {})).toBe(10 * 1048576);
    writeFileSync(join(h, 'keel.config.yaml'), 'modelName: x\nlogFileMaxMB: 3\n');
    expect(await logLimitBeforeStart(h, undefined, {})).toBe(3 * 1048576);
    expect(await logLimitBeforeStart(h, undefined, { KEEL_LOG_FILE_MAX_MB: '0' })).toBe(0);
    const other = join(h, 'other.yaml');
    writeFileSync(other, 'logFileMaxMB: 2\n');
    expect(await logLimitBeforeStart(h, other, {})).toBe(2 * 1048576);
    writeFileSync(join(h, 'keel.config.yaml'), 'logFileMaxMB: [not, valid\n');
    expect(await logLimitBeforeStart(h, undefined, {})).toBe(10 * 1048576);
  });

  it('Housekeeping rotates the log file this process writes to, by logFileMaxMB', async () => {
    const h = home();
    const log = join(h, 'gateway.log');
    writeFileSync(log, Buffer.alloc(1024 * 1024 + 10, 'a'));
    const { log: logger, lines } = logged();
    const hk = new Housekeeping({
      home: h,
      config: { get: (k) => (k === 'logFileMaxMB' ? 1 : undefined) },
      log: logger,
      downloads: false,
      logFile: log,
    });
    hk.rotateLog();
    expect(statSync(log).size).toBe(0);
    expect(statSync(`${log}.1`).size).toBe(1024 * 1024 + 10);
    expect(lines.join('\n')).toMatch(/gateway\.log passed 1 MB; the earlier lines are in .*gateway\.log\.1/);
    await hk.stop();
  });

  it('the token usage log moves to .1 past its limit before the next append; the summary keeps the totals', async () => {
    const h = home();
    const paths = () => ({ log: join(h, 'token-usage.log'), summary: join(h, 'token-usage-summary.json') });
    const errors: unknown[] = [];
    const usage = new UsageLog(
      paths,
      (e) => errors.push(e),
      () => 600,
    );
    const rec = (i: number) => ({
      timestamp: new Date().toISOString(),
      provider: 'providerA',
      model: 'gpt-4o-mini',
      purpose: 'main',
      ok: true,
      inputTokens: i,
      outputTokens: 1,
      durationMs: 5,
    });
    for (let i = 0; i < 10; i++) await usage.record(rec(i));
    expect(errors).toEqual([]);
    const kept = readFileSync(paths().log, 'utf8').trim().split('\n');
    const before = readFileSync(`${paths().log}.1`, 'utf8').trim().split('\n');
    expect(statSync(`${paths().log}.1`).size).toBeGreaterThan(600);
    // the newest records are in the log, the ones just before them in .1: in order, none lost between, none twice
    const n = (lines: string[]) => lines.map((l) => JSON.parse(l).inputTokens as number);
    const all = [...n(before), ...n(kept)];
    expect(all.at(-1)).toBe(9);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => 10 - all.length + i));
    expect(kept.length).toBeLessThan(10);
    const summary = JSON.parse(readFileSync(paths().summary, 'utf8'));
    expect(summary.total.calls).toBe(10);
    expect(summary.total.inputTokens).toBe(45);
  });
});

describe('token usage from two processes', () => {
  it('adds up: every call of each process is in the summary and in the logs, across rotations', async () => {
    const h = home();
    const paths = () => ({ log: join(h, 'token-usage.log'), summary: join(h, 'token-usage-summary.json') });
    const errors: unknown[] = [];
    // Two UsageLogs on one home: the agent's process and a separate gateway (each serialises only its own writes).
    const [agent, gateway] = [0, 1].map(
      () =>
        new UsageLog(
          paths,
          (e) => errors.push(e),
          () => 2000,
        ),
    );
    const rec = (who: string, i: number) => ({
      timestamp: new Date().toISOString(),
      provider: who,
      model: 'm',
      purpose: 'main',
      ok: true,
      inputTokens: i,
      outputTokens: 1,
      durationMs: 5,
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => [agent!.record(rec('agent', i)), gateway!.record(rec('gateway', i))]).flat());
    expect(errors).toEqual([]);
    const summary = JSON.parse(readFileSync(paths().summary, 'utf8'));
    expect(summary.total.calls).toBe(80);
    expect(summary.providers.agent.inputTokens).toBe(780);
    expect(summary.providers.gateway.inputTokens).toBe(780);
    // The current log and its one older copy hold the newest lines of both, none twice.
    const lines = [`${paths().log}.1`, paths().log].flatMap((f) => readFileSync(f, 'utf8').trim().split('\n'));
    const keys = lines.map((l) => `${JSON.parse(l).provider}:${JSON.parse(l).inputTokens}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toContain('agent:39');
    expect(keys).toContain('gateway:39');
    expect(existsSync(`${paths().summary}.lock`)).toBe(false);
  });
});

describe('channel store pruning', () => {
  it('pruneDaily drops handled messages and sent replies older than the setting, at once and again each day', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const h = home();
    const store = ChannelStore.open(h, 'test');
    try {
      const now = Date.now();
      const inbound = store.db.prepare(
        "INSERT INTO inbound (message_id, chat_id, payload, state, recorded_at, done_at) VALUES (?, 'c', '{}', ?, ?, ?)",
      );
      inbound.run('old-done', 'done', now - 40 * DAY, now - 40 * DAY);
      inbound.run('old-waiting', 'recorded', now - 40 * DAY, null); // not handled yet: kept whatever its age
      inbound.run('recent-done', 'done', now - 5 * DAY, now - 5 * DAY);
      const ids = () =>
        (store.db.prepare('SELECT message_id FROM inbound ORDER BY seq').all() as Array<{ message_id: string }>).map((r) => r.message_id);
      let days = 30;
      const stop = store.pruneDaily(
        () => days,
        (e) => {
          throw e;
        },
      );
      expect(ids()).toEqual(['old-waiting', 'recent-done']);
      days = 3;
      vi.advanceTimersByTime(DAY);
      expect(ids()).toEqual(['old-waiting']);
      stop();
      inbound.run('later', 'done', Date.now() - 10 * DAY, Date.now() - 10 * DAY);
      vi.advanceTimersByTime(2 * DAY);
      expect(ids()).toEqual(['old-waiting', 'later']); // stopped: no more pruning
    } finally {
      store.close();
    }
  });
});
