/**
 * The doors a user plugin has, and the ones it must not have:
 * - pluginAllowList / pluginDenyList apply by folder (and skill file) name before ANY code of a user plugin runs,
 *   its manifest.ts included: a denied plugin's module side effects never happen (kernel, offline CLI view, dist CLI);
 * - user plugins import the SDK subpaths built-ins use (`keel/sdk/vendors/<name>`, `keel/sdk/testing`), from
 *   source and from the built dist/, and nothing else under `keel/sdk/`;
 * - agent-written skills from before the coder:sandbox capability are rewritten to use it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { offlineView } from '../../kernel/cli/offline.js';
import { LogSink } from '../../kernel/log.js';
import { renderSkillFile, upgradeSkillFile, parseSkillFile } from '../../plugins/coder/src/skill-file.js';
import { rm, tmp } from '../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'cli.js');

let kernel: Kernel | undefined;
let dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  kernel = undefined;
  dirs.forEach(rm);
  dirs = [];
});

function home(config = ''): string {
  const h = tmp('keel-doors-');
  dirs.push(h);
  if (config) writeFileSync(join(h, 'keel.config.yaml'), config, { mode: 0o600 });
  return h;
}

/** A user plugin whose manifest.ts and index.ts each leave a file behind when they run. */
function sneaky(h: string): { manifestRan: string; entryRan: string } {
  const dir = join(h, 'plugins', 'sneaky');
  mkdirSync(dir, { recursive: true });
  const manifestRan = join(h, 'manifest-ran');
  const entryRan = join(h, 'entry-ran');
  writeFileSync(
    join(dir, 'manifest.ts'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(manifestRan)}, 'ran');\nexport default { id: 'sneaky', version: '1.0.0', kind: 'service', description: 'leaves a trace' };\n`,
  );
  writeFileSync(
    join(dir, 'index.ts'),
    `import { writeFileSync } from 'node:fs';\nimport manifest from './manifest';\nwriteFileSync(${JSON.stringify(entryRan)}, 'ran');\nexport default { manifest, setup() {} };\n`,
  );
  return { manifestRan, entryRan };
}

/** A user plugin built on the SDK subpaths the built-ins use. */
function usesSdk(h: string): void {
  const dir = join(h, 'plugins', 'uses-sdk');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'manifest.ts'),
    [
      "import { existsSync } from 'node:fs';",
      "import { Type, type PluginManifest } from 'keel/sdk';",
      "import { DEFAULT_RETRIES } from 'keel/sdk/vendors/common';",
      "import { FAKE_AGENT_DIR } from 'keel/sdk/testing';",
      'const manifest: PluginManifest = {',
      "  id: 'uses-sdk', version: '1.0.0', kind: 'skill', description: 'imports SDK subpaths',",
      "  skills: [{ name: 'sdk_probe', category: 'test', parameters: Type.Object({}),",
      '    description: `retries=${DEFAULT_RETRIES} fakeAgent=${existsSync(FAKE_AGENT_DIR)}` }],',
      '};',
      'export default manifest;',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'index.ts'),
    [
      "import { existsSync } from 'node:fs';",
      "import { definePlugin } from 'keel/sdk';",
      "import { DEFAULT_RETRIES } from 'keel/sdk/vendors/common';",
      "import { FAKE_AGENT_DIR } from 'keel/sdk/testing';",
      "import manifest from './manifest';",
      'export default definePlugin({ manifest, setup(ctx) {',
      "  ctx.skills.register('sdk_probe', () => ({ retries: DEFAULT_RETRIES, fakeAgent: existsSync(FAKE_AGENT_DIR) }));",
      '} });',
      '',
    ].join('\n'),
  );
}

async function boot(h: string, watchSkills = false): Promise<Kernel> {
  const builtins = tmp('keel-builtins-');
  dirs.push(builtins);
  kernel = await startKernel({ home: h, builtinDir: builtins, env: {}, watchSkills, logs: new LogSink({ quiet: true }) });
  return kernel;
}

function keel(h: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, KEEL_HOME: h }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code) || 1 : 0, stdout, stderr });
    });
  });
}

describe('allow and deny lists apply before any user plugin code runs', () => {
  it('control: a permitted plugin runs its manifest.ts and index.ts', async () => {
    const h = home();
    const trace = sneaky(h);
    const k = await boot(h);
    expect(k.host.status('sneaky')?.state).toBe('loaded');
    expect(existsSync(trace.manifestRan)).toBe(true);
    expect(existsSync(trace.entryRan)).toBe(true);
  });

  for (const [what, config] of [
    ['pluginDenyList', 'pluginDenyList:\n  - sneaky\n'],
    ['pluginAllowList', 'pluginAllowList:\n  - someone-else\n'],
  ] as const) {
    it(`${what}: the folder is disabled and neither its manifest.ts nor its index.ts runs`, async () => {
      const h = home(config);
      const trace = sneaky(h);
      const k = await boot(h);
      const status = k.host.status('sneaky');
      expect(status?.state).toBe('disabled');
      expect(status?.reason).toMatch(new RegExp(`folder sneaky: .*${what}.*none of its code was run`));
      expect(existsSync(trace.manifestRan)).toBe(false);
      expect(existsSync(trace.entryRan)).toBe(false);

      // The CLI's view without a kernel (keel plugins, keel skills, keel config) runs no code of it either.
      await k.stop();
      kernel = undefined;
      const view = await offlineView(h);
      expect(view.statuses.find((s) => s.id === 'sneaky')).toMatchObject({ state: 'disabled' });
      expect(existsSync(trace.manifestRan)).toBe(false);
    });
  }

  it('a denied custom skill file is not compiled or imported', async () => {
    const h = home('pluginDenyList:\n  - skill-evil\n');
    mkdirSync(join(h, 'skills'), { recursive: true });
    const ran = join(h, 'skill-ran');
    writeFileSync(
      join(h, 'skills', 'evil.ts'),
      `import { writeFileSync } from 'node:fs';\nimport { defineSkill, Type } from 'keel/sdk';\nwriteFileSync(${JSON.stringify(ran)}, 'ran');\n` +
        "export default defineSkill({ name: 'evil', description: 'leaves a trace', parameters: Type.Object({}), run: () => 'x' });\n",
    );
    writeFileSync(
      join(h, 'skills', 'fine.ts'),
      "import { defineSkill, Type } from 'keel/sdk';\nexport default defineSkill({ name: 'fine', description: 'a permitted skill', parameters: Type.Object({}), run: () => 'fine' });\n",
    );
    const k = await boot(h, true);
    expect(k.host.status('skill-fine')?.state).toBe('loaded');
    expect(k.host.status('skill-evil')).toMatchObject({ state: 'disabled' });
    expect(k.host.status('skill-evil')?.reason).toMatch(/evil\.ts: .*pluginDenyList.*not run/);
    expect(existsSync(ran)).toBe(false);
  });

  it('the built CLI lists a denied folder without running its manifest.ts', async () => {
    const h = home('pluginDenyList:\n  - sneaky\n');
    const trace = sneaky(h);
    const r = await keel(h, ['plugins', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('sneaky');
    expect(existsSync(trace.manifestRan)).toBe(false);
  });
});

describe('user plugins reach the SDK subpaths the built-ins use', () => {
  it('from source: keel/sdk/vendors/<name> and keel/sdk/testing resolve in manifest.ts and index.ts', async () => {
    const h = home();
    usesSdk(h);
    const k = await boot(h);
    expect(k.host.status('uses-sdk')?.state, k.host.status('uses-sdk')?.reason).toBe('loaded');
    const r = await k.execute('sdk_probe', {}, k.operator);
    expect(JSON.parse(r.result)).toEqual({ retries: 3, fakeAgent: true });
  });

  it('from the built dist/: the same imports resolve (keel skills compiles the manifest against dist/sdk)', async () => {
    const h = home();
    usesSdk(h);
    const r = await keel(h, ['skills', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const skills = (JSON.parse(r.stdout) as { skills: Array<{ name: string; description: string }> }).skills;
    expect(skills.find((s) => s.name === 'sdk_probe')?.description).toBe('retries=3 fakeAgent=true');
  });

  it('any other keel/sdk/ path is refused with a clear error', async () => {
    const h = home();
    const dir = join(h, 'plugins', 'reaches-in');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({ id: 'reaches-in', version: '1.0.0', kind: 'service', description: 'reaches into the kernel' }),
    );
    writeFileSync(
      join(dir, 'index.ts'),
      "import { ErrorCodes } from 'keel/sdk/../kernel/errors';\nexport default { manifest: { id: 'reaches-in' }, setup() { void ErrorCodes; } };\n",
    );
    const k = await boot(h);
    const status = k.host.status('reaches-in');
    expect(status?.state).toBe('failed');
    expect(status?.reason).toMatch(/not part of the Keel SDK/);
  });
});

describe('agent-written skill files', () => {
  it('written with the old global slot are rewritten to use the coder:sandbox capability, spec and code kept', () => {
    const spec = {
      name: 'adder',
      description: 'adds',
      parameters: { type: 'object', properties: {} },
      code: 'return 1 + 1;',
      adminOnly: false,
      network: false,
    };
    const current = renderSkillFile(spec);
    expect(current).toContain('ctx.use<Runner>("coder:sandbox")');
    expect(current).not.toContain('Symbol.for');
    expect(upgradeSkillFile(current)).toBeUndefined();
    const old = current.replace(
      'ctx.use<Runner>("coder:sandbox")',
      '(globalThis as Record<symbol, unknown>)[Symbol.for("keel.coder.sandbox")] as Runner | undefined',
    );
    const upgraded = upgradeSkillFile(old);
    expect(upgraded).toBe(current);
    expect(parseSkillFile(upgraded!)).toEqual(spec);
  });
});
