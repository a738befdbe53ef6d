/**
 * Issue 35.2 (Keel's side) and 35.5: a `keel` process never opens an inspector on SIGUSR1, and a `keel` started by a
 * Node older than the one it needs runs on the pinned Node or refuses in one line, instead of running without
 * node:sqlite (email, knowledge, timelines lost in silence).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, nodeIsSupported, pinnedNode, wrongNodeMessage } from '../../kernel/cli/node-guard.js';
import { KEEL_CLI, rm, tmp } from '../helpers.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rm(d);
});
function tmpDir(): string {
  const d = tmp('keel-guard-');
  dirs.push(d);
  return d;
}

/** A Node older than Keel needs, found on this machine outside any node_modules (Debian's own, the bootstrap one). */
function oldNode(): { path: string; version: string } | undefined {
  for (const p of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    if (!existsSync(p)) continue;
    const v = spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (v && !nodeIsSupported(v)) return { path: p, version: v };
  }
  return undefined;
}
const old = oldNode();

describe('which Node runs Keel', () => {
  it('knows the versions it runs on, and finds the pinned Node of the package', () => {
    expect(nodeIsSupported(process.versions.node)).toBe(true);
    expect(nodeIsSupported('20.20.2')).toBe(false);
    expect(nodeIsSupported(`${MIN_NODE_MAJOR}.0.0`)).toBe(true);
    const pinned = pinnedNode(KEEL_CLI);
    expect(pinned).toMatch(/node_modules\/node\/bin\/node$/);
    expect(execFileSync(pinned!, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim().split('.')[0]).toBe(
      String(process.versions.node.split('.')[0]),
    );
    expect(wrongNodeMessage('20.1.0')).toMatch(/Node 24 or newer.*Node 20\.1\.0.*npx keel/);
  });

  it.skipIf(!old)(`started by an old Node (${old?.path} ${old?.version}), it runs on the pinned Node: node:sqlite works`, () => {
    const home = tmpDir();
    // `keel trace` reads timeline/timeline.db through node:sqlite: on Node 20 it crashed with "No such built-in module".
    const r = spawnSync(old!.path, [KEEL_CLI, 'trace', 'act_none', '--json'], {
      env: { ...process.env, KEEL_HOME: home },
      encoding: 'utf8',
    });
    expect(r.stderr).not.toMatch(/No such built-in module|node:sqlite/);
    expect(r.status).toBe(1); // "nothing recorded for this id": the command itself ran
    expect(`${r.stdout}${r.stderr}`).toMatch(/act_none/);
  });

  it.skipIf(!old)('started by an old Node with no pinned Node beside it, it refuses in one line and exits 1', () => {
    const copy = join(tmpDir(), 'dist');
    cpSync(join(KEEL_CLI, '..'), copy, { recursive: true });
    const r = spawnSync(old!.path, [join(copy, 'cli.js'), 'tasks', '--json'], {
      env: { ...process.env, KEEL_HOME: tmpDir() },
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/needs Node 24 or newer, and this is Node 20/);
    expect(r.stderr).toMatch(/npx keel/);
  });
});

describe('SIGUSR1', () => {
  it('a running keel process ignores it: no inspector opens', async () => {
    const home = tmpDir();
    const child = spawn(process.execPath, [KEEL_CLI, 'gateway', '-h', '127.0.0.1', '-p', '0'], {
      env: { ...process.env, KEEL_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      out += c;
    });
    try {
      await waitFor(() => /listening|http:\/\/127\.0\.0\.1:\d+/i.test(out), 20_000);
      child.kill('SIGUSR1');
      await waitFor(() => /SIGUSR1 ignored|Debugger listening/.test(out), 10_000);
      expect(out).toMatch(/SIGUSR1 ignored/);
      expect(out).not.toMatch(/Debugger listening/);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });
});

async function waitFor(ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}
