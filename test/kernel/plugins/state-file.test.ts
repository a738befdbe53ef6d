/**
 * plugins-state.json is shared by the agent's process, a separate `keel gateway` and `keel plugins enable`: each
 * one's change must survive the others' later writes, and each one must see the others' changes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PluginStateFile } from '../../../kernel/plugins/state-file.js';
import { rm, tmp } from '../../helpers.js';

describe('plugins-state.json across processes', () => {
  let home = '';
  afterEach(() => rm(home));

  it('an enable in one process is not undone by another that started before it, and no quarantine is erased', () => {
    home = tmp('keel-plugin-state-');
    const daemon = new PluginStateFile(home);
    const gateway = new PluginStateFile(home);
    daemon.setQuarantine('weather', 'health check failed 3 times');
    expect(gateway.quarantine('weather')?.reason).toBe('health check failed 3 times');

    // `keel plugins enable weather`, a third process.
    new PluginStateFile(home).clearQuarantine('weather');
    // The daemon's next write (another plugin's failure) must not bring the quarantine back.
    expect(daemon.fail('mailer')).toBe(1);
    // The gateway quarantines a third plugin; the daemon's next reset must not erase it.
    gateway.setQuarantine('scraper', 'setup failed 3 times');
    daemon.reset('mailer');

    const onDisk = JSON.parse(readFileSync(join(home, 'plugins-state.json'), 'utf8'));
    expect(Object.keys(onDisk.quarantined)).toEqual(['scraper']);
    expect(onDisk.failures).toEqual({});
    for (const p of [daemon, gateway, new PluginStateFile(home)]) {
      expect(p.quarantine('weather')).toBeUndefined();
      expect(p.quarantinedIds()).toEqual(['scraper']);
    }
  });

  it('counts failures from both processes in one count', () => {
    home = tmp('keel-plugin-state-');
    const a = new PluginStateFile(home);
    const b = new PluginStateFile(home);
    expect(a.fail('weather')).toBe(1);
    expect(b.fail('weather')).toBe(2);
    expect(a.failures('weather')).toBe(2);
  });
});
