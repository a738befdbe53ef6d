/**
 * Every plugin Keel ships (built-ins, the examples, the test fake agent) goes through the same contract checks
 * the host applies to users' plugins, and then some: a valid manifest, a clean start alone, a handler for each
 * declared skill, a clean stop.
 */
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startKernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { discoverBuiltins, discoverUserPlugins } from '../../kernel/plugins/discover.js';
import { validateManifest } from '../../kernel/plugins/manifest-schema.js';
import { rm, tmp } from '../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');

function folders(base: string): string[] {
  return existsSync(base) ? readdirSync(base).map((d) => join(base, d)) : [];
}

/** Built-ins are checked where they are; the others are installed as a user would install them. */
const plugins: Array<{ dir: string; builtin: boolean }> = [
  ...folders(join(ROOT, 'plugins')).map((dir) => ({ dir, builtin: true })),
  ...folders(join(ROOT, 'examples', 'plugins')).map((dir) => ({ dir, builtin: false })),
  { dir: join(ROOT, 'testing', 'fake-agent'), builtin: false },
].filter(({ dir }) => existsSync(join(dir, 'index.ts')) || existsSync(join(dir, 'index.js')));

describe('plugin conformance', () => {
  it('finds the plugins to check', () => {
    expect(plugins.length).toBeGreaterThan(0);
  });

  for (const { dir, builtin } of plugins) {
    it(`${dir.slice(ROOT.length + 1)} honours the plugin contract`, async () => {
      const empty = tmp('keel-conformance-');
      const home = tmp();
      try {
        let candidate;
        if (builtin) {
          candidate = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.dir === dir);
        } else {
          cpSync(dir, join(home, 'plugins', 'p'), { recursive: true });
          candidate = (await discoverUserPlugins(home))[0];
        }
        expect(candidate, 'a manifest and an entry').toBeDefined();
        expect(candidate!.error).toBeUndefined();
        const manifest = validateManifest(candidate!.manifest, dir);
        for (const [key, spec] of Object.entries(manifest.config ?? {})) {
          expect(spec.description.length, `${key} has a description`).toBeGreaterThan(10);
          // A secret has no default value; the empty string (SPEC's default of usagePingToken) holds no secret.
          if (spec.secret) expect([undefined, ''], `${key} is secret and has no default`).toContain(spec.default);
        }
        const kernel = await startKernel({
          home,
          builtinDir: empty,
          builtinOnly: builtin,
          ...(builtin ? { extraPlugins: [candidate!] } : {}),
          env: {},
          watchSkills: false,
          logs: new LogSink({ quiet: true }),
        });
        try {
          const status = kernel.host.status(manifest.id);
          expect(status?.state, status?.reason).toBe('loaded');
          for (const s of manifest.skills ?? []) {
            expect(kernel.registry.skills.get(s.name)?.handler, `handler for ${s.name}`).toBeTypeOf('function');
          }
        } finally {
          await kernel.stop();
        }
        expect(kernel.host.status(manifest.id)?.state).toBe('stopped');
      } finally {
        rm(empty);
        rm(home);
      }
    });
  }
});
