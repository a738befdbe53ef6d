/**
 * system_check in a real kernel, and `keel doctor [--json]` through the built dist/cli.js.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { chatReply, errorReply, startOpenAIFake } from '../../fakes/openai-server.js';
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
  ok: boolean;
  summary: { ok: number; warn: number; error: number };
  findings: Finding[];
  text?: string;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function kernel(overrides: Record<string, unknown>): Promise<Kernel> {
  const home = tmp('keel-doctor-');
  const empty = tmp('keel-doctor-builtins-');
  const extra = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'doctor' || c.id === 'gateway');
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

const security = (r: Report) => r.findings.filter((f) => f.area === 'security' && f.level !== 'ok');

describe('system_check', () => {
  it('reports risky settings, each with the command that fixes it', async () => {
    const k = await kernel({
      sudoMode: true,
      overrideMode: true,
      commandAllowList: ['git', 'bash', 'python3', 'ls'],
      gatewayHost: '0.0.0.0',
    });
    const r = await k.execute('system_check', {}, k.operator);
    expect(r.success, r.result).toBe(true);
    const report = JSON.parse(r.result) as Report;
    const risky = security(report);
    const find = (re: RegExp) => risky.find((f) => re.test(f.message));
    expect(find(/sudoMode is on/)?.fix).toBe('keel config set sudoMode false');
    expect(find(/overrideMode is on/)?.fix).toBe('keel config set overrideMode false');
    const interp = find(/commandAllowList contains interpreters \(bash, python3\)/);
    expect(interp?.fix).toBe('keel config set commandAllowList git,ls');
    const gw = find(/binds to 0\.0\.0\.0.*without gatewayApiKey/);
    expect(gw?.level).toBe('warn');
    expect(gw?.fix).toMatch(/^keel config set gatewayHost 127\.0\.0\.1/);
    // The rest of the report is there too.
    for (const area of ['kernel', 'plugins', 'disk', 'errors'])
      expect(
        report.findings.some((f) => f.area === area),
        area,
      ).toBe(true);
    expect(report.findings.find((f) => f.area === 'kernel')?.message).toContain(`Keel ${k.version}`);
    expect(report.text).toMatch(/WARN {2}sudoMode is on/);
  });

  it('calls the gateway an error when it starts with the agent, and never prints the key', async () => {
    // A stand-in that owns the gateway keys, so nothing really listens on 0.0.0.0 during the test.
    const home = tmp('keel-doctor-');
    const empty = tmp('keel-doctor-builtins-');
    const { writePlugin } = await import('../../helpers.js');
    const key = (type: string, policy: string) => ({ schema: { type }, policy, description: `stand-in for the gateway key (${type})` });
    writePlugin(join(home, 'plugins'), {
      id: 'fakegw',
      manifest: {
        kind: 'service',
        config: {
          gatewayHost: { ...key('string', 'LOCKED'), default: '0.0.0.0' },
          gatewayApiKey: { ...key('string', 'LOCKED'), secret: true },
          gatewayAutoStart: { ...key('boolean', 'APPROVAL'), default: false },
        },
      },
    });
    const extra = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'doctor');
    const exposed = await startKernel({
      home,
      builtinDir: empty,
      extraPlugins: extra,
      env: {},
      watchSkills: false,
      logs: new LogSink({ quiet: true }),
      overrides: { gatewayAutoStart: true },
    });
    cleanups.push(async () => {
      await exposed.stop();
      rm(empty);
      rm(home);
    });
    expect(exposed.host.status('fakegw')?.state).toBe('loaded');
    const r1 = JSON.parse((await exposed.execute('system_check', {}, exposed.operator)).result) as Report;
    const gw = security(r1).find((f) => /without gatewayApiKey/.test(f.message));
    expect(gw?.level).toBe('error');
    expect(gw?.message).toMatch(/gatewayAutoStart starts it with the agent/);
    expect(r1.ok).toBe(false);

    const keyed = await kernel({ gatewayHost: '0.0.0.0', gatewayApiKey: 'sup3r-secret-gateway-key', commandAllowList: ['git'] });
    const r2 = await keyed.execute('system_check', {}, keyed.operator);
    expect(r2.result).not.toContain('sup3r-secret-gateway-key');
    const report = JSON.parse(r2.result) as Report;
    expect(security(report)).toEqual([]);
    expect(report.findings.find((f) => f.area === 'security')?.message).toBe('No risky settings found.');
  });

  it('reports a failed plugin with its reason, and is admin-only', async () => {
    const home = tmp('keel-doctor-');
    const empty = tmp('keel-doctor-builtins-');
    const { writePlugin } = await import('../../helpers.js');
    writePlugin(join(home, 'plugins'), { id: 'broken', setup: `throw new Error('cannot reach the frobnicator');` });
    const extra = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'doctor');
    const k = await startKernel({
      home,
      builtinDir: empty,
      extraPlugins: extra,
      env: {},
      watchSkills: false,
      logs: new LogSink({ quiet: true }),
      overrides: { commandAllowList: [] },
    });
    cleanups.push(async () => {
      await k.stop();
      rm(empty);
      rm(home);
    });
    const report = JSON.parse((await k.execute('system_check', {}, k.operator)).result) as Report;
    const p = report.findings.find((f) => f.area === 'plugins' && f.level !== 'ok');
    expect(p?.message).toMatch(/Plugin broken is failed.*frobnicator/);
    expect(report.findings.some((f) => f.area === 'errors' && f.level === 'warn')).toBe(true);
    const refused = await k.execute('system_check', {}, { kind: 'user', channel: 'chatA', userId: '5' });
    expect(refused.success).toBe(false);
  });
});

function keel(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('KEEL_')) env[k] = v;
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...env, KEEL_HOME: home }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('keel doctor', () => {
  it('prints the report as JSON and exits 1 when a finding is an error', async () => {
    const home = tmp('keel-doctor-cli-');
    cleanups.push(() => rm(home));
    writeFileSync(join(home, 'keel.config.yaml'), 'sudoMode: true\ngatewayAutoStart: true\ncommandAllowList:\n  - git\n  - bash\n', {
      mode: 0o600,
    });
    const out = await keel(home, ['doctor', '--json']);
    expect(out.code, out.stderr).toBe(1);
    const report = JSON.parse(out.stdout) as Report;
    expect(report.ok).toBe(false);
    const risky = security(report);
    expect(risky.find((f) => /sudoMode is on/.test(f.message))?.fix).toBe('keel config set sudoMode false');
    expect(risky.find((f) => /interpreters \(bash\)/.test(f.message))?.fix).toBe('keel config set commandAllowList git');
    expect(risky.find((f) => /binds to 0\.0\.0\.0/.test(f.message))?.level).toBe('error');
    // Doctor does not start Keel: no process was left running, nothing listens.
    const text = await keel(home, ['doctor']);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/ERROR The gateway binds to 0\.0\.0\.0/);
    expect(text.stdout).toContain('fix: keel config set sudoMode false');
  });

  it('exits 0 on a safe configuration', async () => {
    const home = tmp('keel-doctor-cli-');
    cleanups.push(() => rm(home));
    writeFileSync(join(home, 'keel.config.yaml'), 'gatewayHost: 127.0.0.1\nmodelName: gpt-4o-mini\ncommandAllowList:\n  - git\n  - ls\n', {
      mode: 0o600,
    });
    const out = await keel(home, ['doctor', '--json']);
    expect(out.code, out.stdout + out.stderr).toBe(0);
    const report = JSON.parse(out.stdout) as Report;
    expect(report.ok).toBe(true);
    expect(security(report)).toEqual([]);
    // Why a reverse proxy in front of it would get 403, said where an operator looks.
    const local = report.findings.find((f) => f.area === 'security' && /serves this machine only/.test(f.message));
    expect(local?.level).toBe('ok');
    expect(local?.message).toMatch(/reverse proxy.*set gatewayApiKey/);
  });

  it('is an error when no model is configured, naming modelName, the provider keys and providerG', async () => {
    const home = tmp('keel-doctor-cli-');
    cleanups.push(() => rm(home));
    writeFileSync(join(home, 'keel.config.yaml'), 'gatewayHost: 127.0.0.1\n', { mode: 0o600 });
    const out = await keel(home, ['doctor', '--json']);
    expect(out.code, out.stdout + out.stderr).toBe(1);
    const report = JSON.parse(out.stdout) as Report;
    const f = report.findings.find((x) => /No model is configured/.test(x.message));
    expect(f?.level).toBe('error');
    expect(f?.message).toMatch(/modelName/);
    expect(f?.message).toMatch(/providerAApiKey/);
    expect(f?.message).toMatch(/providerG/);
    expect(f?.fix).toMatch(/keel config set modelName/);
    // The same home with a model: the finding is gone.
    writeFileSync(join(home, 'keel.config.yaml'), 'gatewayHost: 127.0.0.1\nmodelName: gpt-4o-mini\n', { mode: 0o600 });
    const ok = JSON.parse((await keel(home, ['doctor', '--json'])).stdout) as Report;
    expect(ok.findings.find((x) => /No model is configured/.test(x.message))).toBeUndefined();
    expect(ok.findings.find((x) => x.area === 'config' && /Model: gpt-4o-mini/.test(x.message))?.level).toBe('ok');
  });

  it('--probe calls the configured model once: ok when it answers; a refused key is an error naming the key to fix (exit 1)', async () => {
    const fake = await startOpenAIFake();
    cleanups.push(() => void fake.close());
    const home = tmp('keel-doctor-cli-');
    cleanups.push(() => rm(home));
    const key = 'sk-doctor-probe-0123456789';
    writeFileSync(
      join(home, 'keel.config.yaml'),
      `gatewayHost: 127.0.0.1\nmodelName: gpt-4o-mini\nproviderAApiKey: ${key}\nproviderABaseUrl: ${fake.url}\n`,
      { mode: 0o600 },
    );
    const chats = () => fake.requests.filter((r) => r.url.endsWith('/chat/completions')).length;
    // without --probe nothing is sent
    expect((await keel(home, ['doctor', '--json'])).code).toBe(0);
    expect(chats()).toBe(0);

    fake.script(chatReply({ text: 'OK' }));
    const ok = await keel(home, ['doctor', '--probe', '--json']);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    const report = JSON.parse(ok.stdout) as Report & { modelProbe: any };
    expect(report.modelProbe).toMatchObject({ ok: true, provider: 'providerA', model: 'gpt-4o-mini', reply: 'OK' });
    expect(report.findings.find((f) => /The model answered: gpt-4o-mini on providerA/.test(f.message))?.level).toBe('ok');
    expect(chats()).toBe(1);

    fake.script(errorReply(401, 'Incorrect API key provided.'));
    const bad = await keel(home, ['doctor', '--probe']);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/ERROR The model check failed \(gpt-4o-mini on providerA\): providerA: HTTP 401/);
    expect(bad.stdout).toContain('fix: providerA refused the credentials: check providerAApiKey (or PROVIDERA_API_KEY).');
    expect(bad.stdout + bad.stderr).not.toContain(key);
    expect(chats()).toBe(2);
  });
});
