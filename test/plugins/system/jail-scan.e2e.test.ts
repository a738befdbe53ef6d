/**
 * How the jail finds a denied program under other names: copies and hard links that exist before the command
 * (in a folder on PATH), busybox applets, hard links it cannot see, and denied names of allowed programs. Then
 * the jail built with that PATH refuses each of them for real.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DENIED_EXIT, DENIED_TEXT, DenyJail } from '../../../plugins/system/src/deny-jail.js';
import { childEnv, runArgv } from '../../../plugins/system/src/exec.js';
import { scanDenied } from '../../../plugins/system/src/jail-scan.js';
import { namespaceSupport } from '../../../sdk/namespaces.js';
import { rm, tmp } from '../../helpers.js';

const RM = spawnSync('sh', ['-c', 'readlink -f "$(which rm)"'], { encoding: 'utf8' }).stdout.trim();
const TRUE = spawnSync('sh', ['-c', 'readlink -f "$(which true)"'], { encoding: 'utf8' }).stdout.trim();
const BUSYBOX = spawnSync('sh', ['-c', 'readlink -f "$(which busybox)"'], { encoding: 'utf8' }).stdout.trim();

const root = tmp('keel-jail-scan-');
afterAll(() => rm(root));
const bin = join(root, 'bin');
const elsewhere = join(root, 'elsewhere');
mkdirSync(bin);
mkdirSync(elsewhere);
copyFileSync(RM, join(bin, 'rm')); // the denied name
linkSync(join(bin, 'rm'), join(bin, 'zap')); // a hard link under another name
copyFileSync(RM, join(bin, 'wipe')); // a byte-identical copy under another name
symlinkSync(join(bin, 'rm'), join(bin, 'rmlink')); // a symbolic link (leads to the stubbed file)
linkSync(join(bin, 'rm'), join(elsewhere, 'hidden')); // a hard link outside the searched folders
copyFileSync(TRUE, join(bin, 'systemctl'));
symlinkSync(join(bin, 'systemctl'), join(bin, 'reboot')); // a denied name of an allowed program
for (const f of ['rm', 'wipe', 'systemctl']) spawnSync('chmod', ['755', join(bin, f)]);

describe('scanDenied', () => {
  it('finds the program by name, hard link and copy; notes what it cannot replace', () => {
    const scan = scanDenied(['rm', 'reboot'], ['systemctl'], [bin]);
    const byPath = Object.fromEntries(scan.targets.map((t) => [t.path, t]));
    expect(byPath[join(bin, 'rm')]).toMatchObject({ program: 'rm' });
    expect(byPath[join(bin, 'zap')]).toMatchObject({ program: 'rm', why: 'hard link' });
    expect(byPath[join(bin, 'wipe')]).toMatchObject({ program: 'rm', why: 'copy' });
    expect(byPath[join(bin, 'systemctl')]).toBeUndefined();
    expect(scan.notes.some((n) => n.includes('has 3 names on disk') && n.includes('a hard link elsewhere is not replaced'))).toBe(true);
    expect(scan.notes.some((n) => n.includes(`${join(bin, 'reboot')} leads to ${join(bin, 'systemctl')}`))).toBe(true);
  });

  it('replaces the allowed program behind a denied name once the allow list no longer names it', () => {
    const scan = scanDenied(['reboot'], [], [bin]);
    expect(scan.targets.map((t) => t.path)).toContain(join(bin, 'systemctl'));
  });

  it.skipIf(!BUSYBOX)('replaces busybox when it carries a denied applet, not when it does not', () => {
    const dir = join(BUSYBOX, '..');
    expect(scanDenied(['rm'], [], [dir]).targets.find((t) => t.path === BUSYBOX)).toMatchObject({ why: 'applet' });
    expect(scanDenied(['keel-no-such-applet'], [], [dir]).targets.find((t) => t.path === BUSYBOX)).toBeUndefined();
  });
});

describe.skipIf(!(await namespaceSupport(['mount', 'pid'])).available)('the jail with that folder on PATH', () => {
  it('refuses the hard link, the copy and the symbolic link that existed before the command', async () => {
    const work = join(root, 'work');
    mkdirSync(work);
    const env = { ...childEnv(), PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const jail = new DenyJail();
    try {
      const j = await jail.prepare({ deny: ['rm'], allow: [] }, 'auto', env);
      if (!j.isolated) throw new Error(j.reason);
      for (const name of ['zap', 'wipe', 'rmlink', join(bin, 'zap')]) {
        writeFileSync(join(work, 'sentinel'), 'x');
        const r = await runArgv(j.wrap([name, 'sentinel']), { cwd: work, timeoutMs: 10_000, retries: 0, maxBytes: 65_536, env });
        expect(r.exitCode, `${name}: ${r.stderr}`).toBe(DENIED_EXIT);
        expect(r.stderr).toContain(DENIED_TEXT);
        expect(existsSync(join(work, 'sentinel')), name).toBe(true);
      }
      // The control: outside the jail the hard link deletes.
      const r = await runArgv([join(bin, 'zap'), 'sentinel'], { cwd: work, timeoutMs: 10_000, retries: 0, maxBytes: 65_536, env });
      expect(r.exitCode).toBe(0);
      expect(existsSync(join(work, 'sentinel'))).toBe(false);
    } finally {
      jail.close();
    }
  });
});
