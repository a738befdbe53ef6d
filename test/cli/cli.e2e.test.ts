/**
 * The `keel` CLI through real child processes of the built dist/cli.js, each with its own KEEL_HOME.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installFakeAgent } from '../../testing/index.js';
import { keelCli, rm, tmp, waitFor } from '../helpers.js';

const keel = keelCli;

const homes: string[] = [];
afterEach(async () => {
  for (const h of homes.splice(0)) {
    await keel(h, ['stop', '--timeout', '3000']);
    rm(h);
  }
});

function home(): string {
  const h = tmp('keel-cli-');
  homes.push(h);
  return h;
}

async function tasks(h: string) {
  const out = await keel(h, ['tasks', '--json']);
  if (out.code !== 0) throw new Error(`keel tasks failed (${out.code}): ${out.stderr}`);
  return JSON.parse(out.stdout) as {
    pending: Array<{ id: string }>;
    completed: Array<{ id: string; result: string }>;
    failed: Array<{ id: string }>;
  };
}

describe('keel CLI', () => {
  it('has --help on every command and exits 2 on usage mistakes', async () => {
    const h = home();
    const help = await keel(h, ['--help']);
    expect(help.code).toBe(0);
    for (const c of ['push', 'run', 'status', 'stop', 'config', 'plugins', 'skills', 'cancel']) expect(help.stdout).toContain(c);
    for (const c of ['push', 'run', 'status', 'stop', 'config set', 'config get', 'plugins', 'skills', 'tasks', 'cancel']) {
      const r = await keel(h, [...c.split(' '), '--help']);
      expect(r.code, c).toBe(0);
      expect(r.stdout).toMatch(/Usage: keel/);
    }
    expect((await keel(h, ['frobnicate'])).code).toBe(2);
    expect((await keel(h, ['push'])).code).toBe(2);
  });

  it('lists and runs commands that plugins declare in their manifests', async () => {
    const h = home();
    const dir = join(h, 'plugins', 'hello');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({
        id: 'hello',
        version: '1.0.0',
        kind: 'service',
        description: 'says hello from the CLI',
        cli: [{ name: 'hello <who>', description: 'Greets someone', options: [{ flags: '--shout', description: 'upper case' }] }],
      }),
    );
    writeFileSync(
      join(dir, 'index.js'),
      `export default { setup() {}, commands: { hello(ctx) { const t = 'hello ' + ctx.args[0]; console.log(ctx.options.shout ? t.toUpperCase() : t); return 0; } } };`,
    );
    const help = await keel(h, ['--help']);
    expect(help.stdout).toMatch(/hello \[options\] <who>\s+Greets someone \[plugin hello\]/);
    const run = await keel(h, ['hello', 'world', '--shout']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('HELLO WORLD');
  });

  it('push prints the task, id and clamped priority; bad input queues nothing', async () => {
    const h = home();
    const r = await keel(h, ['push', 'write the report', '-p', '15']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/"write the report" as act_\d+_[a-z0-9]+ with priority 10/);
    const low = await keel(h, ['push', 'tidy up', '--priority', '0', '--json']);
    expect(JSON.parse(low.stdout)).toMatchObject({
      task: 'tidy up',
      priority: 1,
      status: 'pending',
      source: 'cli',
      metadata: { retries: 0, maxRetries: 3, ttl: 3600000 },
    });
    const bad = await keel(h, ['push', 'x', '-p', 'abc']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/priority/i);
    const blank = await keel(h, ['push', '   ']);
    expect(blank.code).toBe(2);
    const t = await tasks(h);
    expect(t.pending).toHaveLength(2);
  });

  it('status reports not running (exit 3) and why actions wait', async () => {
    const h = home();
    await keel(h, ['push', 'something']);
    const s = await keel(h, ['status', '--json']);
    expect(s.code).toBe(3);
    const j = JSON.parse(s.stdout) as { running: boolean; queue: { pending: number }; waiting: string };
    expect(j.running).toBe(false);
    expect(j.queue.pending).toBe(1);
    expect(j.waiting).toMatch(/keel run/);
  });

  it('run --daemon keeps daemon.log within logFileMaxMB: what earlier runs left moves to daemon.log.1', async () => {
    const h = home();
    installFakeAgent(h);
    writeFileSync(join(h, 'keel.config.yaml'), 'logFileMaxMB: 1\n', { mode: 0o600 });
    const earlier = 'an earlier run wrote this line\n'.repeat(40_000); // 1.2 MB
    writeFileSync(join(h, 'daemon.log'), earlier);
    const started = await keel(h, ['run', '--daemon']);
    expect(started.code, started.stderr).toBe(0);
    await waitFor(() => /is running/.test(readFileSync(join(h, 'daemon.log'), 'utf8')), 'the daemon to log its start');
    expect(readFileSync(join(h, 'daemon.log.1'), 'utf8')).toBe(earlier);
    const now = readFileSync(join(h, 'daemon.log'), 'utf8');
    expect(now).not.toContain('an earlier run');
    // a log file says when each line happened
    expect(now).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[info\] \[kernel\] Keel .* is running/m);
    for (const line of now.trim().split('\n')) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z \[(info|warn|error)\] /);
    expect((await keel(h, ['stop'])).code).toBe(0);
  });

  it('run --daemon carries out pushed tasks; status sees it; stop stops it', async () => {
    const h = home();
    installFakeAgent(h);
    const started = await keel(h, ['run', '--daemon']);
    expect(started.code, started.stderr).toBe(0);
    const again = await keel(h, ['run']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already running/);
    const st = JSON.parse((await keel(h, ['status', '--json'])).stdout) as { running: boolean; pid: number };
    expect(st.running).toBe(true);
    // The long-running process replaced itself (same pid) with a small V8 young generation (kernel/cli/tune.ts).
    expect(readFileSync(`/proc/${st.pid}/cmdline`, 'utf8').split('\0')).toContain('--max-semi-space-size=2');
    const pushed = JSON.parse((await keel(h, ['push', 'hello there', '--json'])).stdout) as { id: string };
    const done = await waitFor(
      async () => (await tasks(h)).completed.find((a) => a.id === pushed.id),
      'the daemon to complete the pushed task',
    );
    expect(done.result).toBe('done: hello there');
    expect(existsSync(join(h, 'daemon.log'))).toBe(true);
    const stop = await keel(h, ['stop']);
    expect(stop.code).toBe(0);
    expect(stop.stdout).toMatch(/Stopped agent/);
    expect((await keel(h, ['status'])).code).toBe(3);
    // The runner compacts on stop: the snapshot holds the queue as { actions: [...] } plus the history groups.
    const snapshot = JSON.parse(readFileSync(join(h, 'actions.json'), 'utf8')) as { actions: unknown[]; completed: Array<{ id: string }> };
    expect(Array.isArray(snapshot.actions)).toBe(true);
    expect(snapshot.completed.map((a) => a.id)).toContain(pushed.id);
  });

  it('cancel: removes a waiting task, stops the one the daemon runs (failed, not retried), says what it did', async () => {
    const h = home();
    installFakeAgent(h);
    expect((await keel(h, ['run', '--daemon'])).code).toBe(0);
    const long = JSON.parse((await keel(h, ['push', 'sleep:30000 long', '--json'])).stdout) as { id: string };
    await waitFor(async () => (await keel(h, ['tasks', '--json'])).stdout.includes('"executing"'), 'the daemon to start it');
    const waiting = JSON.parse((await keel(h, ['push', 'sleep:30000 waiting', '--json'])).stdout) as { id: string };
    const removed = await keel(h, ['cancel', waiting.id]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`Removed ${waiting.id} from the queue.\n`);
    // The running one: this process is not the runner; the daemon stops it when it reads the stop.
    const stopped = await keel(h, ['cancel', long.id, '--reason', 'wrong task', '--json']);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ id: long.id, outcome: 'stopping' });
    const failed = await waitFor(
      async () =>
        (
          JSON.parse((await keel(h, ['tasks', '--json'])).stdout) as {
            failed: Array<{ id: string; error: string; metadata: { retries: number } }>;
          }
        ).failed.find((a) => a.id === long.id),
      'the daemon to stop it',
    );
    expect(failed).toMatchObject({ error: 'wrong task', metadata: { retries: 0 } });
    expect((await tasks(h)).pending).toEqual([]);
    // Already settled: nothing to do (exit 1); unknown: invalid input (exit 2), nothing changed.
    const again = await keel(h, ['cancel', long.id]);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/has already failed; nothing to cancel/);
    const unknown = await keel(h, ['cancel', 'act_0_nope', '--json']);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: 'KEEL_E_ACTION_NOT_FOUND' });
  });

  it('run --with-gateway serves the REST API from the agent process (what npm start does)', async () => {
    const h = home();
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const env = { KEEL_GATEWAY_PORT: String(port), KEEL_GATEWAY_HOST: '127.0.0.1' };
    const started = await keel(h, ['run', '--daemon', '--with-gateway'], env);
    expect(started.code, started.stderr).toBe(0);
    const status = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as { running: boolean; version: string };
    expect(status.running).toBe(true);
    expect(status.version).toMatch(/^\d+\.\d+\.\d+/);
    const pushed = (await (
      await fetch(`http://127.0.0.1:${port}/api/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ task: 'from REST' }),
      })
    ).json()) as { taskId: string };
    const listed = await tasks(h);
    expect(listed.pending.map((a) => a.id)).toContain(pushed.taskId);
    expect((await keel(h, ['stop'])).code).toBe(0);
  });

  it('concurrent keel push processes while keel run runs: every action runs exactly once', async () => {
    const h = home();
    installFakeAgent(h);
    expect((await keel(h, ['run', '--daemon'])).code).toBe(0);
    const pushes = await Promise.all(
      Array.from({ length: 4 }, (_, p) =>
        (async () => {
          const ids: string[] = [];
          for (let i = 0; i < 5; i++) {
            const r = await keel(h, ['push', `p${p} task ${i}`, '--json']);
            expect(r.code).toBe(0);
            ids.push((JSON.parse(r.stdout) as { id: string }).id);
          }
          return ids;
        })(),
      ),
    );
    const all = pushes.flat();
    await waitFor(async () => (await tasks(h)).completed.length === all.length, 'all pushed tasks to complete', 20_000);
    const ran = readFileSync(join(h, 'fake-agent.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ran.sort()).toEqual([...all].sort());
  });

  it('kill -9 of the daemon in the middle of a burst of pushes loses no acknowledged action', async () => {
    const h = home();
    installFakeAgent(h);
    expect((await keel(h, ['run', '--daemon'], { FAKE_AGENT_NOT_READY: '1' })).code).toBe(0);
    const daemon = JSON.parse(readFileSync(join(h, 'run', 'agent.pid'), 'utf8')) as { pid: number };
    const acked: string[] = [];
    const burst = (async () => {
      for (let i = 0; i < 30; i++) {
        const r = await keel(h, ['push', `burst ${i}`, '--json']);
        if (r.code === 0) acked.push((JSON.parse(r.stdout) as { id: string }).id);
        else console.error('PUSHFAIL', r.code, r.stdout, r.stderr);
      }
    })();
    await waitFor(() => acked.length >= 10, 'some pushes to be acknowledged', 45_000);
    process.kill(daemon.pid, 'SIGKILL');
    await burst;
    expect(acked.length).toBe(30);
    const after = await tasks(h);
    const ids = new Set(after.pending.map((a) => a.id));
    for (const id of acked) expect(ids.has(id), id).toBe(true);
  });

  it('config set parses by type, rejects unknown keys and wrong types, writes 0600, masks secrets', async () => {
    const h = home();
    installFakeAgent(h);
    const cfg = join(h, 'keel.config.yaml');
    expect((await keel(h, ['config', 'set', 'safeMode', 'true'])).code).toBe(0);
    expect((await keel(h, ['config', 'set', 'commandDenyList', '["rm","dd"]'])).code).toBe(0);
    expect((await keel(h, ['config', 'set', 'pluginHealthCheckIntervalMinutes', '5'])).code).toBe(0);
    expect(statSync(cfg).mode & 0o777).toBe(0o600);
    const got = JSON.parse((await keel(h, ['config', 'get', '--json'])).stdout) as Record<string, unknown>;
    expect(got).toMatchObject({ safeMode: true, commandDenyList: ['rm', 'dd'], pluginHealthCheckIntervalMinutes: 5 });
    const before = readFileSync(cfg, 'utf8');
    const unknown = await keel(h, ['config', 'set', 'safeMod', 'true']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/safeMode/);
    const wrong = await keel(h, ['config', 'set', 'pluginHealthCheckIntervalMinutes', 'soon']);
    expect(wrong.code).toBe(2);
    expect(readFileSync(cfg, 'utf8')).toBe(before);
    // A secret from the environment is masked and never copied into the file.
    const secret = 'sk-supersecretvalue-123456';
    const env = { FAKE_AGENT_API_KEY: secret };
    expect((await keel(h, ['config', 'set', 'fakeAgentGreeting', 'hi'], env)).code).toBe(0);
    const masked = await keel(h, ['config', 'get', 'fakeAgentApiKey'], env);
    expect(masked.stdout).not.toContain(secret);
    expect(masked.stdout).toMatch(/\*\*\*\*/);
    expect(readFileSync(cfg, 'utf8')).not.toContain(secret);
  });

  it('plugins shows states from lists; skills lists manifest skills', async () => {
    const h = home();
    installFakeAgent(h);
    const listed = JSON.parse((await keel(h, ['plugins', '--json'])).stdout) as { plugins: Array<{ id: string; state: string }> };
    expect(listed.plugins.find((p) => p.id === 'fake-agent')?.state).toBe('stopped');
    const skills = JSON.parse((await keel(h, ['skills', '--json'])).stdout) as { skills: Array<{ name: string }> };
    expect(skills.skills.map((s) => s.name)).toContain('echo');
    writeFileSync(join(h, 'keel.config.yaml'), 'pluginDenyList: [fake-agent]\n');
    const denied = JSON.parse((await keel(h, ['plugins', '--json'])).stdout) as { plugins: Array<{ id: string; state: string }> };
    expect(denied.plugins.find((p) => p.id === 'fake-agent')?.state).toBe('disabled');
    expect((await keel(h, ['plugins'])).stdout).toMatch(/fake-agent\s+disabled/);
  });
});
