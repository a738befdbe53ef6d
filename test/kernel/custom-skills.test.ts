/**
 * Custom skills hot reload through a real kernel: files in $KEEL_HOME/skills are compiled, loaded as plugins,
 * replaced on save, kept on a broken save and unregistered on delete.
 */
import { mkdir, mkdtemp, readdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SkillResult } from '../../sdk/types.js';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';

const cleanup: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Booted {
  kernel: Kernel;
  home: string;
  logs: LogSink;
  write(file: string, source: string): Promise<void>;
  run(name: string, args?: unknown): Promise<SkillResult>;
}

/** A kernel with no built-in plugins, watching the skills folder; `files` are written before it starts. */
async function boot(files: Record<string, string> = {}, configYaml?: string): Promise<Booted> {
  const home = await tempDir('keel-cs-home-');
  const builtinDir = await tempDir('keel-cs-builtin-');
  await mkdir(join(home, 'skills'), { recursive: true });
  for (const [f, src] of Object.entries(files)) await writeFile(join(home, 'skills', f), src);
  if (configYaml) await writeFile(join(home, 'keel.config.yaml'), configYaml);
  const logs = new LogSink({ quiet: true });
  const kernel = await startKernel({ home, builtinDir, watchSkills: true, env: {}, logs });
  cleanup.push(() => kernel.stop());
  return {
    kernel,
    home,
    logs,
    write: (file, source) => writeFile(join(home, 'skills', file), source),
    run: (name, args = {}) => kernel.execute(name, args, kernel.operator),
  };
}

/** Polls until `check` returns a truthy value, for at most `ms`; fails with the last value seen. */
async function until<T>(probe: () => Promise<T> | T, check: (v: T) => unknown, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T;
  for (;;) {
    last = await probe();
    if (check(last)) return last;
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function skill(name: string, body: string, params = 'Type.Object({ text: Type.String() })'): string {
  return [
    `import { defineSkill, Type } from 'keel/sdk';`,
    `export default defineSkill({`,
    `  name: '${name}',`,
    `  description: 'test skill ${name}',`,
    `  parameters: ${params},`,
    `  run: (args) => ${body},`,
    `});`,
    '',
  ].join('\n');
}

describe('custom skills', () => {
  it('resolves npm packages installed beside Keel from a skill in $KEEL_HOME/skills', async () => {
    const b = await boot({
      'yaml-dump.ts': `import { defineSkill, Type } from 'keel/sdk';
import { stringify } from 'yaml';
export default defineSkill({ name: 'yaml_dump', description: 'YAML of a value', parameters: Type.Object({ n: Type.Number() }), run: ({ n }) => stringify({ n }) });
`,
    });
    const r = await b.run('yaml_dump', { n: 3 });
    expect(r).toMatchObject({ success: true, result: 'n: 3\n' });
  });

  it('loads a skill file present at start and runs it as its own plugin', async () => {
    const k = await boot({ 'Echo.ts': skill('echo', '`echo:${args.text}`') });
    const r = await k.run('echo', { text: 'hi' });
    expect(r).toMatchObject({ success: true, result: 'echo:hi' });
    expect(typeof r.executionTime).toBe('number');
    const status = k.kernel.host.status('skill-echo');
    expect(status).toMatchObject({ origin: 'custom-skill', state: 'loaded', kind: 'skill', version: '1.0.0', skills: ['echo'] });
    expect(k.kernel.registry.skills.get('echo')?.manifest.category).toBe('custom');
  });

  it('picks up a file added while running, in plain JavaScript too', async () => {
    const k = await boot();
    expect((await k.run('twice', { n: 2 })).code).toBe('KEEL_E_SKILL_UNKNOWN');
    await k.write(
      'twice.mjs',
      `import { Type } from 'keel/sdk';\nexport default { name: 'twice', description: 'doubles', version: '2.1.0', isParallelSafe: true,\n` +
        `  parameters: Type.Object({ n: Type.Number() }), run: ({ n }) => n * 2 };\n`,
    );
    const r = await until(
      () => k.run('twice', { n: 21 }),
      (r) => r.success,
    );
    expect(r.result).toBe('42');
    expect(k.kernel.host.status('skill-twice')?.version).toBe('2.1.0');
    expect(k.kernel.registry.skills.get('twice')?.manifest.isParallelSafe).toBe(true);
  });

  it('replaces the running version in place on save and keeps one compiled file', async () => {
    const k = await boot({ 'echo.ts': skill('echo', "'v1'") });
    expect((await k.run('echo', { text: 'x' })).result).toBe('v1');
    for (const v of ['v2', 'v3', 'v4']) {
      await k.write('echo.ts', skill('echo', `'${v}'`));
      await until(
        () => k.run('echo', { text: 'x' }),
        (r) => r.result === v,
      );
    }
    expect(k.kernel.host.status('skill-echo')?.state).toBe('loaded');
    await k.kernel.customSkills!.whenIdle();
    const cached = (await readdir(join(k.home, '.cache', 'skills'))).filter((f) => f.startsWith('echo-'));
    expect(cached).toHaveLength(1);
  });

  it('ends on the last of a burst of saves', async () => {
    const k = await boot({ 'echo.ts': skill('echo', "'v0'") });
    for (let v = 1; v <= 8; v++) await k.write('echo.ts', skill('echo', `'burst${v}'`));
    await until(
      () => k.run('echo', { text: 'x' }),
      (r) => r.result === 'burst8',
    );
    await k.kernel.customSkills!.whenIdle();
    expect((await k.run('echo', { text: 'x' })).result).toBe('burst8');
    expect(k.kernel.customSkills!.errors()).toEqual({});
  });

  it('keeps the last good version when a save does not compile, and reports file:line', async () => {
    const k = await boot({ 'echo.ts': skill('echo', "'good'") });
    await k.write('echo.ts', `import { defineSkill } from 'keel/sdk';\nexport default defineSkill({ name: 'echo',\n  run: ( => 1 });\n`);
    const errors = await until(
      () => k.kernel.customSkills!.errors(),
      (e) => e['echo.ts'],
    );
    expect(errors['echo.ts']).toMatch(/echo\.ts:3:\d+/);
    expect(errors['echo.ts']).toContain('Cannot compile');
    expect(await k.run('echo', { text: 'x' })).toMatchObject({ success: true, result: 'good' });
    expect(k.logs.recent({ level: 'error' }).some((e) => /echo\.ts:3:\d+/.test(e.message))).toBe(true);

    // Fixing the file loads the fix and clears the error.
    await k.write('echo.ts', skill('echo', "'fixed'"));
    await until(
      () => k.run('echo', { text: 'x' }),
      (r) => r.result === 'fixed',
    );
    await k.kernel.customSkills!.whenIdle();
    expect(k.kernel.customSkills!.errors()).toEqual({});
  });

  it('keeps the last good version when the new module throws or exports the wrong shape', async () => {
    const k = await boot({ 'echo.ts': skill('echo', "'good'") });
    await k.write('echo.ts', `throw new Error('boom at load');\nexport default {};\n`);
    let errors = await until(
      () => k.kernel.customSkills!.errors(),
      (e) => e['echo.ts']?.includes('boom at load'),
    );
    expect(errors['echo.ts']).toContain('echo.ts');
    expect((await k.run('echo', { text: 'x' })).result).toBe('good');

    await k.write('echo.ts', `export default { name: 'echo', description: 'no run', parameters: { type: 'object', properties: {} } };\n`);
    errors = await until(
      () => k.kernel.customSkills!.errors(),
      (e) => e['echo.ts']?.includes('"run"'),
    );
    expect(errors['echo.ts']).toMatch(/Custom skill .*echo\.ts: "run" must be a function/);
    expect((await k.run('echo', { text: 'x' })).result).toBe('good');

    await k.write('echo.ts', skill('Bad name!', "'x'"));
    errors = await until(
      () => k.kernel.customSkills!.errors(),
      (e) => e['echo.ts']?.includes('manifest'),
    );
    expect((await k.run('echo', { text: 'x' })).result).toBe('good');
  });

  it('drops the old skill name when a save renames the skill', async () => {
    const k = await boot({ 'greet.ts': skill('hello_one', "'one'") });
    expect((await k.run('hello_one', { text: '' })).success).toBe(true);
    await k.write('greet.ts', skill('hello_two', "'two'"));
    await until(
      () => k.run('hello_two', { text: '' }),
      (r) => r.success && r.result === 'two',
    );
    const old = await k.run('hello_one', { text: '' });
    expect(old).toMatchObject({ success: false, code: 'KEEL_E_SKILL_UNKNOWN' });
    expect(k.kernel.host.status('skill-greet')?.skills).toEqual(['hello_two']);
  });

  it('refuses a rename onto a skill name another plugin owns and keeps the running version', async () => {
    const k = await boot({ 'a.ts': skill('alpha', "'a'"), 'b.ts': skill('beta', "'b'") });
    await k.write('b.ts', skill('alpha', "'stolen'"));
    const errors = await until(
      () => k.kernel.customSkills!.errors(),
      (e) => e['b.ts'],
    );
    expect(errors['b.ts']).toMatch(/already provided by plugin "skill-a"/);
    expect((await k.run('alpha', { text: '' })).result).toBe('a');
    expect((await k.run('beta', { text: '' })).result).toBe('b');
  });

  it('unregisters the skill when its file is deleted', async () => {
    const k = await boot({ 'echo.ts': skill('echo', "'here'") });
    expect((await k.run('echo', { text: '' })).success).toBe(true);
    await unlink(join(k.home, 'skills', 'echo.ts'));
    const r = await until(
      () => k.run('echo', { text: '' }),
      (r) => !r.success,
    );
    expect(r.code).toBe('KEEL_E_SKILL_UNKNOWN');
    expect(k.kernel.host.status('skill-echo')).toBeUndefined();
    await k.kernel.customSkills!.whenIdle();
    expect((await readdir(join(k.home, '.cache', 'skills'))).filter((f) => f.startsWith('echo-'))).toEqual([]);
  });

  it("validates arguments against the skill's schema before it runs", async () => {
    const k = await boot({
      'count.ts': skill(
        'count',
        'args.text.length',
        'Type.Object({ text: Type.String(), max: Type.Optional(Type.Integer({ minimum: 1 })) })',
      ),
    });
    expect(await k.run('count', { text: 'abc' })).toMatchObject({ success: true, result: '3' });
    expect(await k.run('count', { text: 5 })).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    expect(await k.run('count', {})).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    const r = await k.run('count', { text: 'a', max: 0 });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    expect(r.result).toContain('max');
  });

  it('honours pluginDenyList for custom skills', async () => {
    const k = await boot(
      { 'secret.ts': skill('secret_skill', "'leak'"), 'open.ts': skill('open_skill', "'ok'") },
      'pluginDenyList:\n  - skill-secret\n',
    );
    expect(await k.run('secret_skill', { text: '' })).toMatchObject({ success: false, code: 'KEEL_E_SKILL_UNKNOWN' });
    expect(k.kernel.host.status('skill-secret')?.state).toBe('disabled');
    expect((await k.run('open_skill', { text: '' })).result).toBe('ok');
    // A save of a denied skill still does not load it.
    await k.write('secret.ts', skill('secret_skill', "'leak2'"));
    await k.write('open.ts', skill('open_skill', "'ok2'"));
    await until(
      () => k.run('open_skill', { text: '' }),
      (r) => r.result === 'ok2',
    );
    await k.kernel.customSkills!.whenIdle();
    expect((await k.run('secret_skill', { text: '' })).success).toBe(false);
  });

  it('lists a skill that does not compile at start as failed, and after repeated health rounds quarantines it and queues its repair', async () => {
    const k = await boot({
      'broken.ts': `import { defineSkill } from 'keel/sdk';\nexport default defineSkill({ name: 'broken',\n  run: ( => 1 });\n`,
    });
    const host = k.kernel.host;
    expect(host.status('skill-broken')).toMatchObject({ state: 'failed', failures: 1, code: 'KEEL_E_PLUGIN_LOAD_FAILED' });
    expect(host.status('skill-broken')!.reason).toMatch(/broken\.ts:3:\d+/);
    await host.checkHealth();
    expect(host.status('skill-broken')).toMatchObject({ state: 'failed', failures: 2 });
    const repairs = () =>
      k.kernel.queue.list().pending.filter((a) => (a.metadata.repair as { plugin?: string } | undefined)?.plugin === 'skill-broken');
    expect(repairs()).toEqual([]);
    await host.checkHealth();
    expect(host.status('skill-broken')!.state).toBe('quarantined');
    expect(repairs()).toHaveLength(1);
    expect(repairs()[0]!.task).toMatch(/Repair plugin "skill-broken" with self_repair_skill/);
    // A quarantined skill is not counted again nor repaired twice.
    await host.checkHealth();
    expect(repairs()).toHaveLength(1);
    // Repaired file: still down until a person lifts the quarantine; then a save loads it.
    await k.write('broken.ts', skill('broken', "'mended'"));
    await k.kernel.customSkills!.whenIdle();
    expect((await k.run('broken', { text: '' })).success).toBe(false);
    await host.enable('skill-broken');
    await k.write('broken.ts', skill('broken', "'mended again'"));
    await until(
      () => k.run('broken', { text: '' }),
      (r) => r.result === 'mended again',
    );
    expect(host.status('skill-broken')).toMatchObject({ state: 'loaded', failures: 0 });
  });

  it('counts a broken skill across restarts, and forgets it when its file is deleted', async () => {
    const k = await boot({ 'bad.ts': 'export default 42;\n' });
    expect(k.kernel.host.status('skill-bad')).toMatchObject({ state: 'failed', failures: 1 });
    await k.kernel.stop();
    const again = await startKernel({
      home: k.home,
      builtinDir: await tempDir('keel-cs-builtin-'),
      watchSkills: true,
      env: {},
      logs: new LogSink({ quiet: true }),
    });
    cleanup.push(() => again.stop());
    expect(again.host.status('skill-bad')).toMatchObject({ state: 'failed', failures: 2 });
    await unlink(join(k.home, 'skills', 'bad.ts'));
    await until(
      () => again.host.status('skill-bad'),
      (s) => s === undefined,
    );
  });
});
