/**
 * The coder plugin in a real kernel: create_custom_skill writes a sandboxed skill the hot reload picks up,
 * execute_typescript, self_repair_skill with a scripted model, admin and enableSelfModification checks, and the
 * plugin lists applying to agent-created skills.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Actor, SkillResult } from '../../../sdk/index.js';
import { parseSkillFile, renderSkillFile } from '../../../plugins/coder/src/skill-file.js';
import { rm, tmp, waitFor } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const LLM_REGISTRY = Symbol.for('keel.memoryTestLlm');
const SECRET = 'sk-coder-test-secret-0815';

interface Script {
  chat?: (req: { messages: Array<{ role: string; content: string }>; purpose?: string }) => string;
  chats?: Array<{ messages: Array<{ role: string; content: string }>; purpose?: string }>;
}

interface Booted {
  home: string;
  kernel: Kernel;
  run(skill: string, args: Record<string, unknown>, actor?: Actor): Promise<SkillResult>;
}

const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function boot(opts: { config?: string; llm?: Script; files?: Record<string, string> } = {}): Promise<Booted> {
  const home = tmp('keel-coder-');
  const empty = tmp('keel-coder-builtins-');
  cleanup.push(
    () => rm(home),
    () => rm(empty),
  );
  writeFileSync(join(home, 'keel.config.yaml'), opts.config ?? `enableSelfModification: true\nproviderAApiKey: ${SECRET}\n`, {
    mode: 0o600,
  });
  mkdirSync(join(home, 'skills'), { recursive: true });
  for (const [f, src] of Object.entries(opts.files ?? {})) writeFileSync(join(home, 'skills', f), src);
  if (opts.llm) {
    mkdirSync(join(home, 'plugins'), { recursive: true });
    cpSync(join(ROOT, 'test', 'plugins', 'memory', 'fake-llm'), join(home, 'plugins', 'fake-llm'), { recursive: true });
    const g = globalThis as unknown as Record<symbol, Map<string, Script> | undefined>;
    (g[LLM_REGISTRY] ??= new Map()).set(home, opts.llm);
    cleanup.push(() => void g[LLM_REGISTRY]?.delete(home));
  }
  const coder = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'coder');
  const kernel = await startKernel({
    home,
    builtinDir: empty,
    extraPlugins: coder,
    env: {},
    watchSkills: true,
    logs: new LogSink({ quiet: true }),
  });
  cleanup.push(() => kernel.stop());
  return { home, kernel, run: (skill, args, actor) => kernel.execute(skill, args, actor ?? kernel.operator) };
}

const stranger: Actor = { kind: 'user', channel: 'chatA', userId: '12345' };

describe('coder: execute_typescript', () => {
  it('runs a snippet in the sandbox and returns its output and JSON result', async () => {
    const k = await boot();
    const r = await k.run('execute_typescript', { code: "const x: number = 2; console.log('hi'); return { sum: x + 40 };" });
    expect(r.success).toBe(true);
    const out = JSON.parse(r.result) as Record<string, unknown>;
    expect(out).toMatchObject({ ok: true, exitCode: 0, stdout: 'hi\n', result: { sum: 42 } });
  });

  it("cannot read the kernel's config file or secrets", async () => {
    const k = await boot();
    const file = join(k.home, 'keel.config.yaml');
    const r = await k.run('execute_typescript', {
      code: `const fs = await import('node:fs'); let cfg = 'denied'; try { cfg = fs.readFileSync(${JSON.stringify(file)}, 'utf8'); } catch {} return { cfg, env: process.env };`,
    });
    expect(r.success).toBe(true);
    expect(r.result).not.toContain(SECRET);
    expect(JSON.parse(r.result).result.cfg).toBe('denied');
  });

  it('kills a snippet at its timeout, and refuses a snippet that does not compile', async () => {
    const k = await boot();
    const r = await k.run('execute_typescript', { code: 'await new Promise(() => setInterval(() => {}, 1000));', timeoutMs: 300 });
    expect(JSON.parse(r.result)).toMatchObject({ ok: false, timedOut: true });
    const bad = await k.run('execute_typescript', { code: 'return (;' });
    expect(bad.success).toBe(false);
    expect(bad.result).toContain('does not compile');
  });

  it('is refused for a non-admin', async () => {
    const k = await boot();
    for (const skill of ['execute_typescript', 'create_custom_skill', 'self_repair_skill']) {
      const args =
        skill === 'execute_typescript'
          ? { code: 'return 1' }
          : skill === 'self_repair_skill'
            ? { plugin: 'skill-x' }
            : { name: 'x_y', description: 'abc', code: 'return 1' };
      const r = await k.run(skill, args, stranger);
      expect(r.success, skill).toBe(false);
      expect(r.code, skill).toBe('KEEL_E_FORBIDDEN');
    }
  });
});

describe('coder: create_custom_skill', () => {
  it('writes agent-written skills admin-only by default; a non-admin may call one only when asked for (issue 35.3)', async () => {
    const k = await boot({ config: `enableSelfModification: true\nproviderAApiKey: ${SECRET}\nadminUsers:\n  chatA: ["777"]\n` });
    const admin: Actor = { kind: 'user', channel: 'chatA', userId: '777' };
    expect((await k.run('create_custom_skill', { name: 'secretive', description: 'default flags', code: "return 'ran';" })).success).toBe(
      true,
    );
    await waitFor(() => k.kernel.registry.skills.get('secretive'), 'skill secretive loaded');
    const byStranger = await k.run('secretive', {}, stranger);
    expect(byStranger).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(await k.run('secretive', {}, admin)).toMatchObject({ success: true, result: 'ran' });
    expect(
      (await k.run('create_custom_skill', { name: 'public_one', description: 'open to all', code: "return 'ran';", adminOnly: false }))
        .success,
    ).toBe(true);
    await waitFor(() => k.kernel.registry.skills.get('public_one'), 'skill public_one loaded');
    expect(await k.run('public_one', {}, stranger)).toMatchObject({ success: true, result: 'ran' });
  });

  it('makes a skill with the network privileged and outbound, whatever adminOnly says', async () => {
    const k = await boot();
    const r = await k.run('create_custom_skill', {
      name: 'phone_home',
      description: 'network skill',
      code: "return 'ran';",
      network: true,
      adminOnly: false,
    });
    expect(r.success, r.result).toBe(true);
    await waitFor(() => k.kernel.registry.skills.get('phone_home'), 'skill phone_home loaded');
    const manifest = k.kernel.registry.skills.get('phone_home')!.manifest;
    expect(manifest).toMatchObject({ adminOnly: true, isOutbound: true });
    expect(await k.run('phone_home', {}, stranger)).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    // A file an older version wrote (a network skill open to everyone) is rewritten at start in the current form.
    const old = renderSkillFile({ name: 'legacy_net', description: 'old', parameters: { type: 'object' }, code: 'return 1', network: true })
      .replace('"adminOnly": true', '"adminOnly": false')
      .replace('  adminOnly: SPEC.adminOnly || SPEC.network,\n  isOutbound: SPEC.network,\n', '  adminOnly: SPEC.adminOnly,\n');
    expect(old).toContain('adminOnly: SPEC.adminOnly,');
    const k2 = await boot({ files: { 'legacy_net.ts': old } });
    await waitFor(() => k2.kernel.registry.skills.get('legacy_net'), 'skill legacy_net loaded');
    expect(k2.kernel.registry.skills.get('legacy_net')?.manifest).toMatchObject({ adminOnly: true, isOutbound: true });
  });

  it('writes a skill that hot-loads and runs sandboxed', async () => {
    const k = await boot();
    const r = await k.run('create_custom_skill', {
      name: 'shout',
      description: 'Upper-cases text',
      code: "const t: string = args.text; return t.toUpperCase() + '!';",
      parameters: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    });
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ skill: 'shout', plugin: 'skill-shout', state: 'loaded', created: true });
    const file = join(k.home, 'skills', 'shout.ts');
    expect(parseSkillFile(readFileSync(file, 'utf8'))?.code).toContain('toUpperCase');
    expect(await k.run('shout', { text: 'hey' })).toMatchObject({ success: true, result: 'HEY!' });
    // The schema applies before the sandbox starts.
    expect((await k.run('shout', {})).code).toBe('KEEL_E_SKILL_INVALID_ARGS');
    expect(k.kernel.host.status('skill-shout')?.state).toBe('loaded');
  });

  it('runs the created skill in the sandbox: no config file, no secrets', async () => {
    const k = await boot();
    const file = join(k.home, 'keel.config.yaml');
    const r = await k.run('create_custom_skill', {
      name: 'peek',
      description: 'Tries to read the config',
      code: `const fs = await import('node:fs'); return fs.readFileSync(${JSON.stringify(file)}, 'utf8');`,
    });
    expect(r.success, r.result).toBe(true);
    const peek = await k.run('peek', {});
    expect(peek.success).toBe(false);
    expect(peek.result).toMatch(/ERR_ACCESS_DENIED|restricted/);
    expect(peek.result).not.toContain(SECRET);
  });

  it('updates its own skill in place', async () => {
    const k = await boot();
    await k.run('create_custom_skill', { name: 'ver', description: 'version', code: "return 'v1';" });
    expect((await k.run('ver', {})).result).toBe('v1');
    const r = await k.run('create_custom_skill', { name: 'ver', description: 'version', code: "return 'v2';" });
    expect(JSON.parse(r.result)).toMatchObject({ state: 'loaded', created: false });
    expect((await k.run('ver', {})).result).toBe('v2');
  });

  it('refuses code that does not compile and writes nothing', async () => {
    const k = await boot();
    const r = await k.run('create_custom_skill', { name: 'broken', description: 'broken', code: 'return (;' });
    expect(r.success).toBe(false);
    expect(r.result).toContain('does not compile');
    expect(existsSync(join(k.home, 'skills', 'broken.ts'))).toBe(false);
  });

  it("refuses to replace a person's skill file unless overwrite is given", async () => {
    const human = `import { defineSkill, Type } from 'keel/sdk';\nexport default defineSkill({ name: 'mine', description: 'a person wrote this', parameters: Type.Object({}), run: () => 'human' });\n`;
    const k = await boot({ files: { 'mine.ts': human } });
    await waitFor(() => k.kernel.host.status('skill-mine')?.state === 'loaded', 'skill-mine');
    const r = await k.run('create_custom_skill', { name: 'mine', description: 'agent', code: "return 'agent';" });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(readFileSync(join(k.home, 'skills', 'mine.ts'), 'utf8')).toBe(human);
    const ok = await k.run('create_custom_skill', { name: 'mine', description: 'agent', code: "return 'agent';", overwrite: true });
    expect(ok.success, ok.result).toBe(true);
    expect((await k.run('mine', {})).result).toBe('agent');
  });

  it('refuses bad names and names another plugin owns', async () => {
    const k = await boot();
    for (const name of ['Bad-Name', '../escape', 'a', '9lives', 'x'.repeat(49)]) {
      const bad = await k.run('create_custom_skill', { name, description: 'x y z', code: 'return 1' });
      expect(bad.success, name).toBe(false);
    }
    expect((await k.run('create_custom_skill', { name: '../escape', description: 'x y z', code: 'return 1' })).result).toContain(
      'Invalid skill name',
    );
    const taken = await k.run('create_custom_skill', { name: 'execute_typescript', description: 'steal', code: 'return 1' });
    expect(taken.success).toBe(false);
    expect(taken.result).toContain('already provided by plugin "coder"');
  });

  it('is refused while enableSelfModification is off', async () => {
    const k = await boot({ config: 'enableSelfModification: false\n' });
    const r = await k.run('create_custom_skill', { name: 'nope', description: 'nope', code: 'return 1' });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(r.result).toContain('enableSelfModification');
    expect(existsSync(join(k.home, 'skills', 'nope.ts'))).toBe(false);
  });

  it('is refused in safe mode', async () => {
    const k = await boot({ config: 'enableSelfModification: true\nsafeMode: true\n' });
    const r = await k.run('create_custom_skill', { name: 'nope', description: 'nope', code: 'return 1' });
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_SAFE_MODE' });
    expect(existsSync(join(k.home, 'skills', 'nope.ts'))).toBe(false);
  });

  it('pluginDenyList applies: a denied agent-created skill does not load', async () => {
    const k = await boot({ config: 'enableSelfModification: true\npluginDenyList:\n  - skill-denied_one\n' });
    const r = await k.run('create_custom_skill', { name: 'denied_one', description: 'denied', code: "return 'ran';" });
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ state: 'disabled' });
    expect(k.kernel.host.status('skill-denied_one')?.state).toBe('disabled');
    expect((await k.run('denied_one', {})).code).toBe('KEEL_E_SKILL_UNKNOWN');
  });
});

describe('coder: self_repair_skill', () => {
  it('asks the model for a fix, compiles it, keeps a backup and loads the fix', async () => {
    const script: Script = { chat: () => "Here you go:\n```ts\nreturn 'fixed:' + args.text;\n```\n" };
    const k = await boot({ llm: script });
    await k.run('create_custom_skill', { name: 'echo_it', description: 'echo', code: "throw new Error('bug');" });
    expect((await k.run('echo_it', { text: 'a' })).result).toContain('bug');
    const r = await k.run('self_repair_skill', { plugin: 'skill-echo_it', hint: 'it throws' });
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ repaired: true, state: 'loaded' });
    expect((await k.run('echo_it', { text: 'a' })).result).toBe('fixed:a');
    expect(readFileSync(join(k.home, 'skills', 'echo_it.ts.bak'), 'utf8')).toContain('bug');
    expect(script.chats).toHaveLength(1);
    expect(script.chats![0]!.purpose).toBe('main');
    expect(JSON.stringify(script.chats![0]!.messages)).toContain('it throws');
  });

  it('keeps the last good version when the fix does not compile', async () => {
    const k = await boot({ llm: { chat: () => '```ts\nreturn (;\n```' } });
    await k.run('create_custom_skill', { name: 'keep_me', description: 'keep', code: "return 'good';" });
    const before = readFileSync(join(k.home, 'skills', 'keep_me.ts'), 'utf8');
    const r = await k.run('self_repair_skill', { plugin: 'skill-keep_me' });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/does not compile.*last good version stays/);
    expect(readFileSync(join(k.home, 'skills', 'keep_me.ts'), 'utf8')).toBe(before);
    expect(existsSync(join(k.home, 'skills', 'keep_me.ts.bak'))).toBe(false);
    expect((await k.run('keep_me', {})).result).toBe('good');
  });

  it('fails clearly without a model', async () => {
    const k = await boot();
    await k.run('create_custom_skill', { name: 'lonely', description: 'no model', code: "return 'good';" });
    const r = await k.run('self_repair_skill', { plugin: 'skill-lonely' });
    expect(r.success).toBe(false);
    expect(r.result).toContain('No model is available');
    expect((await k.run('lonely', {})).result).toBe('good');
  });

  it("only suggests a fix for a person's skill file, with the compile error as the reason", async () => {
    const broken = `import { defineSkill } from 'keel/sdk';\nexport default defineSkill({ name: 'hand', run: ( => 1 });\n`;
    const fixed = `import { defineSkill, Type } from 'keel/sdk';\nexport default defineSkill({ name: 'hand', description: 'fixed', parameters: Type.Object({}), run: () => 1 });\n`;
    const script: Script = { chat: () => '```ts\n' + fixed + '```' };
    const k = await boot({ llm: script, files: { 'hand.ts': broken } });
    const r = await k.run('self_repair_skill', { plugin: 'skill-hand' });
    expect(r.success, r.result).toBe(true);
    const out = JSON.parse(r.result) as Record<string, string>;
    expect(out).toMatchObject({ repaired: false });
    expect(out.reason).toContain('Cannot compile');
    expect(readFileSync(out.suggestion!, 'utf8').trim()).toBe(fixed.trim());
    expect(readFileSync(join(k.home, 'skills', 'hand.ts'), 'utf8')).toBe(broken);
  });

  it('repairs a quarantined agent skill and leaves lifting the quarantine to a person', async () => {
    const k = await boot({
      llm: { chat: () => "```ts\nreturn 'healed';\n```" },
      files: {
        'q_skill.ts': renderSkillFile({
          name: 'q_skill',
          description: 'was quarantined',
          parameters: { type: 'object' },
          code: "throw new Error('x');",
        }),
      },
      config: 'enableSelfModification: true\n',
    });
    await k.kernel.stop();
    writeFileSync(
      join(k.home, 'plugins-state.json'),
      JSON.stringify({
        failures: {},
        quarantined: { 'skill-q_skill': { since: new Date().toISOString(), reason: 'health failed 3 times' } },
      }),
    );
    const coder = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'coder');
    const empty = tmp('keel-coder-b2-');
    cleanup.push(() => rm(empty));
    const kernel = await startKernel({
      home: k.home,
      builtinDir: empty,
      extraPlugins: coder,
      env: {},
      watchSkills: true,
      logs: new LogSink({ quiet: true }),
    });
    cleanup.push(() => kernel.stop());
    expect(kernel.host.status('skill-q_skill')?.state).toBe('quarantined');
    const r = await kernel.execute('self_repair_skill', { plugin: 'skill-q_skill' }, kernel.operator);
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({
      repaired: true,
      state: 'quarantined',
      reason: expect.stringContaining('health failed 3 times'),
    });
    expect(r.result).toContain('keel plugins enable skill-q_skill');
    expect(parseSkillFile(readFileSync(join(k.home, 'skills', 'q_skill.ts'), 'utf8'))?.code).toBe("return 'healed';");
    await kernel.host.enable('skill-q_skill');
    expect(await kernel.execute('q_skill', {}, kernel.operator)).toMatchObject({ success: true, result: 'healed' });
  });

  it('gives guidance for a plugin that is not a custom skill', async () => {
    const k = await boot();
    const r = await k.run('self_repair_skill', { plugin: 'coder' });
    expect(r.success).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ repaired: false, plugin: 'coder', state: 'loaded' });
    expect(r.result).toContain('keel plugins enable coder');
    expect((await k.run('self_repair_skill', { plugin: 'nothing-here' })).success).toBe(false);
  });
});
