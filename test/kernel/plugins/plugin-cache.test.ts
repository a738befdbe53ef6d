/**
 * User plugins are compiled into $KEEL_HOME/.cache/plugins/<folder>/ under a name that changes with each edit. The
 * cache keeps the current version of each module (and any version written in the last minute, which another Keel
 * process may be about to import), and nothing of a plugin folder that is gone.
 */
import { cpSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverUserPlugins } from '../../../kernel/plugins/discover.js';
import { rm, tmp } from '../../helpers.js';

const GREETER = join(import.meta.dirname, '..', '..', '..', 'examples', 'plugins', 'greeter');

describe('the compiled copies of user plugins', () => {
  let home = '';
  afterEach(() => rm(home));

  const cached = (folder: string) => readdirSync(join(home, '.cache', 'plugins', folder)).sort();
  const loadGreeter = async () => {
    const found = (await discoverUserPlugins(home)).find((c) => c.id === 'greeter');
    expect(found?.error).toBeUndefined();
    return found!.load();
  };
  /** Makes every compiled file of `folder` look `ms` old. */
  const age = (folder: string, ms: number) => {
    const when = new Date(Date.now() - ms);
    for (const f of cached(folder)) utimesSync(join(home, '.cache', 'plugins', folder, f), when, when);
  };

  it('keep one version of each module after edits, and a version written in the last minute', async () => {
    home = tmp('keel-plugin-cache-');
    const dir = join(home, 'plugins', 'greeter');
    cpSync(GREETER, dir, { recursive: true });
    await loadGreeter();
    const first = cached('greeter');
    expect(first.map((f) => f.replace(/-[0-9a-f]{16}\.mjs$/, ''))).toEqual(['index', 'manifest']);

    // An edit a moment after another process compiled the old one: both stay.
    const edit = (n: number) =>
      writeFileSync(
        join(dir, 'index.ts'),
        readFileSync(join(GREETER, 'index.ts'), 'utf8').replace('greeter ready', `greeter ready (${n})`),
      );
    edit(1);
    await loadGreeter();
    expect(cached('greeter')).toHaveLength(3);

    // Two minutes on, the next edit leaves only the newest index beside the manifest.
    age('greeter', 120_000);
    edit(2);
    await loadGreeter();
    const now = cached('greeter');
    expect(now).toHaveLength(2);
    expect(now.filter((f) => f.startsWith('manifest-'))).toEqual(first.filter((f) => f.startsWith('manifest-')));
    const index = now.find((f) => f.startsWith('index-'))!;
    expect(first).not.toContain(index);
    expect(readFileSync(join(home, '.cache', 'plugins', 'greeter', index), 'utf8')).toContain('greeter ready (2)');
  }, 60_000);

  it('drop the copies of a plugin folder that was removed, and keep those of a folder the lists refuse', async () => {
    home = tmp('keel-plugin-cache-');
    cpSync(GREETER, join(home, 'plugins', 'greeter'), { recursive: true });
    cpSync(GREETER, join(home, 'plugins', 'other'), { recursive: true });
    await loadGreeter();
    await (await discoverUserPlugins(home)).find((c) => c.dir.endsWith('other'))!.load();
    expect(readdirSync(join(home, '.cache', 'plugins')).sort()).toEqual(['greeter', 'other']);

    // Refused by the deny list: its code is not compiled or run, but the folder is still there (its copies stay).
    const denied = await discoverUserPlugins(home, { deny: ['other'] });
    expect(denied.find((c) => c.dir.endsWith('other'))?.disabled).toBeDefined();
    expect(readdirSync(join(home, '.cache', 'plugins')).sort()).toEqual(['greeter', 'other']);

    rmSync(join(home, 'plugins', 'other'), { recursive: true });
    await discoverUserPlugins(home);
    expect(readdirSync(join(home, '.cache', 'plugins'))).toEqual(['greeter']);
  }, 60_000);
});
