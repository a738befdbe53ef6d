/**
 * What system_check and `keel doctor` say about the deny list's enforcement: ok where the operating system
 * isolates commands, a warning with the reason where it does not (forced here with commandIsolation off, the
 * documented switch), and the interpreter warning that says what the deny list cannot mean.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { strictIsolationSupport } from '../../../sdk/command-isolation.js';
import { namespaceSupport } from '../../../sdk/namespaces.js';
import { rm, tmp } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CLI = join(ROOT, 'dist', 'cli.js');

interface Finding {
  area: string;
  level: 'ok' | 'warn' | 'error';
  message: string;
  fix?: string;
}
interface Report {
  findings: Finding[];
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function kernel(overrides: Record<string, unknown>): Promise<Kernel> {
  const home = tmp('keel-iso-');
  const empty = tmp('keel-iso-builtins-');
  const extra = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'doctor' || c.id === 'system');
  const k = await startKernel({
    home,
    builtinDir: empty,
    extraPlugins: extra,
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
    overrides,
  });
  cleanups.push(async () => {
    await k.stop();
    rm(empty);
    rm(home);
  });
  return k;
}

const isolation = (r: Report) => r.findings.find((f) => /commandDenyList/.test(f.message) && !/interpreters/.test(f.message));

describe('system_check: the deny list and the operating system', () => {
  it('reports the isolation as it is on this machine', async () => {
    const ns = await namespaceSupport(['mount', 'pid']);
    const strict = await strictIsolationSupport();
    const k = await kernel({});
    const report = JSON.parse((await k.execute('system_check', {}, k.operator)).result) as Report;
    const f = isolation(report);
    if (strict.available) {
      // The default (auto) is strict wherever it can be set up, and the doctor says which applies.
      expect(f?.level).toBe('ok');
      expect(f?.message).toMatch(/private mount and pid namespace/);
      expect(f?.message).toContain('nothing runs from a place the command can write (strict isolation)');
    } else if (ns.available) {
      expect(f?.level).toBe('warn');
      expect(f?.message).toContain(`Strict isolation cannot be set up here (${strict.reason})`);
    } else {
      expect(f?.level).toBe('warn');
      expect(f?.message).toContain(ns.reason);
    }
  });

  it('warns, with the reason and the fix, when the isolation is unavailable (commandIsolation off)', async () => {
    const k = await kernel({ commandIsolation: 'off' });
    const report = JSON.parse((await k.execute('system_check', {}, k.operator)).result) as Report;
    const f = isolation(report);
    expect(f?.level).toBe('warn');
    expect(f?.message).toMatch(/commandIsolation is off: the operating system does not enforce commandDenyList/);
    expect(f?.message).toMatch(/a script or an interpreter a command runs can start programs on commandDenyList/);
    expect(f?.fix).toBe('keel config set commandIsolation auto');
    // run_command says so in its result, too.
    await k.config.set('autoExecuteCommands', true, { kind: 'operator' });
    const r = await k.execute('run_command', { command: 'echo', args: ['hi'] }, k.operator);
    expect(r.result).toContain('Isolation: none (commandIsolation is off)');
  });

  it('warns when commandIsolation is required (the stubs alone), saying what that leaves open', async () => {
    const ns = await namespaceSupport(['mount', 'pid']);
    const k = await kernel({ commandIsolation: 'required' });
    const report = JSON.parse((await k.execute('system_check', {}, k.operator)).result) as Report;
    const f = isolation(report);
    if (!ns.available) {
      expect(f?.level).toBe('error');
      return;
    }
    expect(f?.level).toBe('warn');
    expect(f?.message).toMatch(/and nothing more \(commandIsolation is required\): a copy of a denied program .* can run/);
    expect(f?.fix).toMatch(/^keel config set commandIsolation auto/);
  });

  it('warns when interpreters are on commandAllowList, saying what the deny list cannot stop', async () => {
    const k = await kernel({ commandAllowList: ['git', 'python3', 'node'] });
    const report = JSON.parse((await k.execute('system_check', {}, k.operator)).result) as Report;
    const f = report.findings.find((x) => /interpreters/.test(x.message));
    expect(f?.level).toBe('warn');
    expect(f?.message).toContain('(python3, node)');
    expect(f?.message).toMatch(/os\.remove/);
    expect(f?.fix).toBe('keel config set commandAllowList git');
  });
});

describe('keel doctor (configuration only)', () => {
  it('warns when commandIsolation is off (KEEL_COMMAND_ISOLATION)', async () => {
    const home = tmp('keel-iso-cli-');
    cleanups.push(() => rm(home));
    writeFileSync(join(home, 'keel.config.yaml'), 'commandAllowList:\n  - git\n', { mode: 0o600 });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('KEEL_')) env[k] = v;
    const stdout = await new Promise<string>((resolve) => {
      execFile(
        process.execPath,
        [CLI, 'doctor', '--json'],
        { env: { ...env, KEEL_HOME: home, KEEL_COMMAND_ISOLATION: 'off' }, timeout: 30_000 },
        (_e, out) => resolve(out),
      );
    });
    const f = isolation(JSON.parse(stdout) as Report);
    expect(f?.level).toBe('warn');
    expect(f?.fix).toBe('keel config set commandIsolation auto');
  });
});
