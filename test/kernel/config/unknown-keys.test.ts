/**
 * The warning about keys in keel.config.yaml that nothing declares comes once every plugin has declared its keys:
 * a plugin's own key (here `greeterName`) is never reported, a misspelt one is, with the nearest known key. Before,
 * the kernel warned while only its own keys were known, so every plugin key of a real config was reported as
 * unknown at each start.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import { Type, type PluginManifest } from '../../../sdk/index.js';
import { rm, tmp } from '../../helpers.js';

const manifest: PluginManifest = {
  id: 'greeter',
  version: '1.0.0',
  kind: 'service',
  description: 'declares one key',
  config: { greeterName: { schema: Type.String(), default: 'world', policy: 'SAFE', description: 'who to greet' } },
};
const greeter: PluginCandidate = {
  id: 'greeter',
  origin: 'user',
  dir: '/test/greeter',
  manifest,
  load: async () => ({ manifest, setup: () => undefined }),
};

describe('unknown keys in the configuration file', () => {
  let kernel: Kernel | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await kernel?.stop();
    kernel = undefined;
    for (const d of dirs.splice(0)) rm(d);
  });

  it('are reported after the plugins declared theirs: a plugin key is known, a misspelt one is reported once', async () => {
    const home = tmp('keel-unknown-keys-');
    const builtins = tmp('keel-unknown-keys-builtins-');
    dirs.push(home, builtins);
    writeFileSync(join(home, 'keel.config.yaml'), 'greeterName: Ada\ngreeterNam: Bob\nsafeMode: true\n');
    const logs = new LogSink({ quiet: true });
    kernel = await startKernel({
      home,
      builtinDir: builtins,
      extraPlugins: [greeter],
      env: {},
      watchSkills: false,
      watchConfig: false,
      logs,
    });
    expect(logs.recent({ level: 'error' })).toEqual([]);
    expect(kernel.config.get('greeterName')).toBe('Ada');
    const warnings = logs
      .recent({ level: 'warn', limit: 1000 })
      .map((e) => e.message)
      .filter((m) => m.includes('no loaded plugin declares'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/"greeterNam"/);
    expect(warnings[0]).toMatch(/greeterName/);
    expect(warnings.join('\n')).not.toMatch(/"greeterName"|"safeMode"/);
  });
});
