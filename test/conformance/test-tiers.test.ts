/**
 * Issue 39.4: the unit tier is honest. A unit-tier file (test/tiers.ts: `*.test.ts` that is not `.int`, `.e2e`
 * or `.browser`) imports nothing that starts a child process, a browser or a server, and listens on no socket;
 * test/unit-guard.ts fails the same at run time, for what goes through code under test.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { selectedTier, TIER_GLOBS, tierOf } from '../tiers.js';

const ROOT = join(import.meta.dirname, '..', '..');

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...testFiles(p));
    else if (e.name.endsWith('.test.ts')) out.push(relative(ROOT, p));
  }
  return out.sort();
}

/** What a unit-tier file may not import: module specifiers, and names imported from the test helpers. */
const FORBIDDEN_MODULES: ReadonlyArray<[RegExp, string]> = [
  [/^(node:)?child_process$/, 'child processes'],
  [/^(node:)?(net|dgram|tls|cluster|worker_threads)$/, 'sockets or threads'],
  [/^playwright(-core)?$/, 'a browser'],
  [/^(ioredis|bullmq|imapflow)$/, 'a server (Redis, IMAP)'],
  [/(^|\/)redis-server(\.js)?$/, 'a redis-server'],
  [/(^|\/)shared-redis(\.js)?$/, 'the shared redis-server'],
  [/\/email\/servers(\.js)?$/, 'dovecot and SMTP servers'],
  [/\/browser\/harness(\.js)?$/, 'Chromium and fixture servers'],
  [/\/dashboard\/browser(\.js)?$/, 'Chromium'],
  [/(^|\/)fakes\/[a-z-]+-(server|gateway)(\.js)?$/, 'a loopback fake server'],
];
const FORBIDDEN_NAMES = ['keelCli', 'KEEL_CLI', 'createServer', 'startGateway'];
/** Calls that start a server or a process whatever module they come from. */
const FORBIDDEN_CALLS: ReadonlyArray<[RegExp, string]> = [
  [/\.listen\(/, 'listens on a socket'],
  [/\bcreateServer\(/, 'creates a server'],
  [/\b(spawn|spawnSync|execFile|execFileSync|fork)\(/, 'starts a child process'],
  [/\blaunch(PersistentContext)?\(/, 'launches a browser'],
];

function tierProblems(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const m of text.matchAll(/\bimport\s+(?:type\s+)?([^'"]*?)\s*(?:from\s*)?['"]([^'"]+)['"]/g)) {
    const [, names = '', spec = ''] = m;
    if (/^\s*type\s/.test(m[0].slice(6))) continue; // `import type` starts nothing
    for (const [re, what] of FORBIDDEN_MODULES) if (re.test(spec)) problems.push(`${file}: imports ${spec} (${what})`);
    for (const n of FORBIDDEN_NAMES) if (new RegExp(`\\b${n}\\b`).test(names)) problems.push(`${file}: imports ${n} from ${spec}`);
  }
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    for (const [re, what] of FORBIDDEN_MODULES) if (re.test(m[1] ?? '')) problems.push(`${file}: imports ${m[1]} (${what})`);
  }
  for (const [re, what] of FORBIDDEN_CALLS) if (re.test(text)) problems.push(`${file}: ${what} (${re.source})`);
  return problems;
}

describe('test tiers', () => {
  const files = testFiles(join(ROOT, 'test'));

  it('every unit-tier file starts no child process, browser or server', () => {
    // This file holds the forbidden lines as cases of the scan.
    const unit = files.filter((f) => tierOf(f) === 'unit' && f !== 'test/conformance/test-tiers.test.ts');
    expect(unit.length).toBeGreaterThan(50);
    const problems = unit.flatMap((f) => tierProblems(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(problems).toEqual([]);
  });

  it('the scan catches what it is for (a spawn, a listen, a private Redis, a browser, a fake server, the CLI)', () => {
    const cases = [
      "import { spawn } from 'node:child_process';",
      "import { createServer } from 'node:http';\nconst s = createServer(); s.listen(0);",
      "import { privateRedis } from '../redis-server.js';",
      "import { chromium } from 'playwright-core';",
      "import { startTelegram } from '../../fakes/telegram-server.js';",
      "import { keelCli, tmp } from '../helpers.js';",
      "const { spawn } = await import('node:child_process');",
    ];
    for (const c of cases) expect(tierProblems('x.test.ts', c), c).not.toEqual([]);
    expect(tierProblems('x.test.ts', "import { tmp, waitFor } from '../helpers.js';\nimport type { Server } from 'node:net';")).toEqual([]);
  });

  it('the tiers split the files by name, each file in exactly one, and every tier has files', () => {
    for (const f of files) expect(['unit', 'int', 'e2e']).toContain(tierOf(f));
    expect(files.some((f) => tierOf(f) === 'int')).toBe(true);
    expect(files.some((f) => tierOf(f) === 'e2e')).toBe(true);
    expect(TIER_GLOBS.unit.exclude).toEqual(['test/**/*.int.test.ts', 'test/**/*.e2e.test.ts', 'test/**/*.browser.test.ts']);
  });

  // Only where test/unit-guard.ts is loaded: `npm run test:unit`.
  it.skipIf(selectedTier() !== 'unit')('the unit run refuses a child process and a listening server, naming the tiers', () => {
    expect(() => spawn(process.execPath, ['-e', '0'])).toThrow(/child_process\.spawn in a unit test.*\*\.e2e\.test\.ts/);
    expect(() => execFileSync('true')).toThrow(/child_process\.execFileSync in a unit test/);
    expect(() => createServer().listen(0, '127.0.0.1')).toThrow(/A server listening in a unit test.*\*\.int\.test\.ts/);
  });

  it('KEEL_TEST_TIER picks one tier, all or nothing means every tier, anything else is a clear error', () => {
    expect(selectedTier({ KEEL_TEST_TIER: 'unit' })).toBe('unit');
    expect(selectedTier({})).toBeUndefined();
    expect(selectedTier({ KEEL_TEST_TIER: 'all' })).toBeUndefined();
    expect(() => selectedTier({ KEEL_TEST_TIER: 'fast' })).toThrow(/unit, int, e2e or all, not "fast"/);
  });

  it('package.json has a script per tier and `npm test` runs them all', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.test).toBe('vitest run');
    expect(pkg.scripts['test:unit']).toMatch(/KEEL_TEST_TIER=unit vitest run/);
    expect(pkg.scripts['test:int']).toMatch(/KEEL_TEST_TIER=int vitest run/);
    expect(pkg.scripts['test:e2e']).toMatch(/KEEL_TEST_TIER=e2e vitest run/);
  });
});
