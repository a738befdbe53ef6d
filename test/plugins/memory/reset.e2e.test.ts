/** `keel reset --memory` through the built CLI (dist/cli.js), each run with its own KEEL_HOME. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rm, tmp } from '../../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');
let home: string;

function keel(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, KEEL_HOME: home }, timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

function fill(): void {
  for (const f of ['memory.json', 'memory.journal', 'USER.md', 'LEARNING.md', 'JOURNAL.md', 'actions.json'])
    writeFileSync(join(home, f), 'x');
  // A valid config file: plugin commands read it (pluginAllowList/pluginDenyList) before any plugin code runs.
  writeFileSync(join(home, 'keel.config.yaml'), 'modelName: gpt-4o-mini\n');
  mkdirSync(join(home, 'daily'));
  writeFileSync(join(home, 'daily', '2026-01-01.md'), 'x');
  mkdirSync(join(home, 'contacts'));
  writeFileSync(join(home, 'contacts', '1@s.whatsapp.net.json'), '{}');
  mkdirSync(join(home, 'knowledge'));
  writeFileSync(join(home, 'knowledge', 'index.json'), '{}');
}

beforeEach(() => {
  home = tmp('keel-memory-reset-');
});
afterEach(() => rm(home));

describe('keel reset --memory', () => {
  it('with --yes removes memory and keeps config, queue and knowledge', async () => {
    fill();
    const r = await keel('reset', '--memory', '--yes');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /Memory cleared .*Removed: memory\.json, memory\.journal, USER\.md, LEARNING\.md, JOURNAL\.md, daily\/ \(1 file\), contacts\/ \(1 file\)/,
    );
    expect(readdirSync(home).sort()).toEqual(['actions.json', 'keel.config.yaml', 'knowledge']);
    const again = await keel('reset', '--memory', '-y');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to remove');
  });

  it('needs --memory (usage, exit 2) and a confirmation (no terminal and no --yes: exit 2, nothing removed)', async () => {
    fill();
    const bare = await keel('reset');
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('keel reset --memory');
    const unconfirmed = await keel('reset', '--memory');
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');
    expect(existsSync(join(home, 'USER.md'))).toBe(true);
  });

  it('refuses while Keel runs on this home (exit 1)', async () => {
    fill();
    mkdirSync(join(home, 'run'));
    // This test process stands in for a running agent: its pid is alive.
    writeFileSync(
      join(home, 'run', 'agent.pid'),
      JSON.stringify({ pid: process.pid, name: 'agent', mode: 'foreground', startedAt: new Date().toISOString(), version: '0' }),
    );
    const r = await keel('reset', '--memory', '--yes');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Keel is running .*agent, pid \d+.*keel stop/);
    expect(existsSync(join(home, 'memory.json'))).toBe(true);
  });
});
