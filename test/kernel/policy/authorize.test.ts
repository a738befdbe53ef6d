import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Type from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigStore, KERNEL_KEYS, KeyRegistry } from '../../../kernel/config/index.js';
import { ErrorCodes } from '../../../kernel/errors.js';
import { ADMIN_ONLY_SKILLS, authorize, isAdmin } from '../../../kernel/policy/index.js';
import type { Actor, ConfigView, SkillManifest } from '../../../sdk/types.js';

/** A ConfigView over plain values, so each case states exactly the configuration it means. */
function view(values: Record<string, unknown>): ConfigView {
  return {
    get: <T>(k: string) => values[k] as T,
    has: (k) => values[k] !== undefined,
    all: () => ({ ...values }),
  };
}

const skill = (name: string, flags: Partial<SkillManifest> = {}): SkillManifest => ({
  name,
  description: name,
  category: 'test',
  parameters: Type.Object({}),
  ...flags,
});

const operator: Actor = { kind: 'operator', channel: 'cli' };
const userA = (userId: string, extra: Partial<Actor> = {}): Actor => ({ kind: 'user', channel: 'chatA', userId, ...extra });
const admins = { adminUsers: { chatA: ['111'], chatC: ['99999999999999999'], email: ['Boss@Example.com'] }, safeMode: false };

describe('authorize', () => {
  it('needs an admin for every spec admin-only skill', () => {
    expect([...ADMIN_ONLY_SKILLS].sort()).toEqual([
      'browser_run_script',
      'create_custom_skill',
      'delegate_task',
      'execute_typescript',
      'manage_config',
      'run_command',
      'self_repair_skill',
      'spawn_agent',
      'system_check',
    ]);
    for (const name of ADMIN_ONLY_SKILLS) {
      const denied = authorize({ actor: userA('222'), skill: skill(name), config: view(admins) });
      expect(denied, name).toMatchObject({ allowed: false, code: ErrorCodes.FORBIDDEN });
      if (!denied.allowed) expect(denied.reason).toContain(`${name} is admin-only`);
      expect(authorize({ actor: userA('111'), skill: skill(name), config: view(admins) }), name).toEqual({ allowed: true });
      expect(authorize({ actor: operator, skill: skill(name), config: view(admins) }), name).toEqual({ allowed: true });
    }
  });

  it('lets anyone run an ordinary skill, and treats adminOnly / isDangerous manifests as admin-only', () => {
    const cfg = view(admins);
    expect(authorize({ actor: userA('222'), skill: skill('web_search'), config: cfg })).toEqual({ allowed: true });
    expect(authorize({ actor: userA('222'), skill: skill('wipe_disk', { isDangerous: true }), config: cfg }).allowed).toBe(false);
    expect(authorize({ actor: userA('222'), skill: skill('plugin_admin', { adminOnly: true }), config: cfg }).allowed).toBe(false);
    expect(authorize({ actor: userA('111'), skill: skill('wipe_disk', { isDangerous: true }), config: cfg }).allowed).toBe(true);
    // A manifest cannot make a spec admin-only skill ordinary by leaving the flag off.
    expect(
      authorize({ actor: userA('222'), skill: skill('run_command', { adminOnly: false, isDangerous: false }), config: cfg }).allowed,
    ).toBe(false);
  });

  it('checks admin status per channel', () => {
    const cfg = view(admins);
    const sameIdOnChatC: Actor = { kind: 'user', channel: 'chatC', userId: '111' };
    expect(isAdmin(userA('111'), cfg)).toBe(true);
    expect(isAdmin(sameIdOnChatC, cfg)).toBe(false);
    expect(authorize({ actor: sameIdOnChatC, skill: skill('run_command'), config: cfg }).allowed).toBe(false);
    expect(isAdmin({ kind: 'user', channel: 'chatC', userId: '99999999999999999' }, cfg)).toBe(true);
    expect(isAdmin({ kind: 'user', channel: 'email', userId: 'boss@example.COM' }, cfg)).toBe(true);
    expect(isAdmin({ kind: 'user', channel: 'gateway-chat', userId: '111' }, cfg)).toBe(false);
  });

  it('grants cross-channel admin through identityLinks, in either direction but not along chains', () => {
    const linked = view({ ...admins, identityLinks: { 'chatC:555': 'chatA:111', 'chatA:111': 'chatD:U777', 'chatB:333@x': 'chatC:555' } });
    expect(isAdmin({ kind: 'user', channel: 'chatC', userId: '555' }, linked)).toBe(true);
    expect(isAdmin({ kind: 'user', channel: 'chatD', userId: 'U777' }, linked)).toBe(true);
    // chatB:333 links to chatC:555, which is admin only through a further link: not admin.
    expect(isAdmin({ kind: 'user', channel: 'chatB', userId: '333@x' }, linked)).toBe(false);
    expect(isAdmin({ kind: 'user', channel: 'chatC', userId: '555' }, view({ ...admins, identityLinks: {} }))).toBe(false);
  });

  it('fails closed when adminUsers is missing or malformed, or the actor is incomplete', () => {
    const cases: Array<Record<string, unknown>> = [
      {},
      { adminUsers: null },
      { adminUsers: ['111'] },
      { adminUsers: 'chatA:111' },
      { adminUsers: { chatA: '111' } },
      { adminUsers: { chatA: [111] } },
      { adminUsers: { chatA: [''] } },
    ];
    for (const c of cases) {
      expect(isAdmin(userA('111'), view(c)), JSON.stringify(c)).toBe(false);
      expect(authorize({ actor: userA('111'), skill: skill('run_command'), config: view(c) }).allowed).toBe(false);
    }
    expect(isAdmin({ kind: 'user', channel: 'chatA' }, view(admins))).toBe(false);
    expect(isAdmin({ kind: 'user', channel: 'chatA', userId: '' }, view(admins))).toBe(false);
    expect(isAdmin({ kind: 'stranger' } as unknown as Actor, view(admins))).toBe(false);
    expect(isAdmin(undefined, view(admins))).toBe(false);
    const throwing: ConfigView = {
      get: () => {
        throw new Error('boom');
      },
      has: () => false,
      all: () => ({}),
    };
    expect(isAdmin(userA('111'), throwing)).toBe(false);
    expect(authorize({ actor: userA('111'), skill: skill('run_command'), config: throwing })).toMatchObject({
      allowed: false,
      code: ErrorCodes.FORBIDDEN,
    });
    expect(authorize({ actor: undefined as unknown as Actor, skill: skill('web_search'), config: view(admins) }).allowed).toBe(false);
    expect(authorize({ actor: operator, skill: undefined as unknown as SkillManifest, config: view(admins) }).allowed).toBe(false);
  });

  it('never makes the agent admin on its own, only through the admin it works for', () => {
    const cfg = view(admins);
    expect(isAdmin({ kind: 'agent', channel: 'autonomy' }, cfg)).toBe(false);
    expect(isAdmin({ kind: 'agent', channel: 'chatA', onBehalfOf: userA('111') }, cfg)).toBe(true);
    expect(isAdmin({ kind: 'agent', channel: 'chatA', onBehalfOf: userA('222') }, cfg)).toBe(false);
    expect(authorize({ actor: { kind: 'agent', channel: 'autonomy' }, skill: skill('system_check'), config: cfg }).allowed).toBe(false);
  });

  it('blocks run_command and create_custom_skill in safe mode, even for the operator', () => {
    const cfg = view({ ...admins, safeMode: true });
    for (const name of ['run_command', 'create_custom_skill']) {
      expect(authorize({ actor: operator, skill: skill(name), config: cfg })).toMatchObject({ allowed: false, code: ErrorCodes.SAFE_MODE });
      expect(authorize({ actor: userA('111'), skill: skill(name), config: cfg })).toMatchObject({
        allowed: false,
        code: ErrorCodes.SAFE_MODE,
      });
    }
    expect(authorize({ actor: operator, skill: skill('manage_config'), config: cfg })).toEqual({ allowed: true });
    // A setting that is not plainly "off" counts as on.
    expect(authorize({ actor: operator, skill: skill('run_command'), config: view({ safeMode: 'false' }) }).allowed).toBe(false);
  });

  it('refuses a dangerous skill on work started by untrusted content unless the operator asked', () => {
    const cfg = view(admins);
    const tainted = userA('111', { untrusted: true });
    const r = authorize({ actor: tainted, skill: skill('run_command'), config: cfg });
    expect(r).toMatchObject({ allowed: false, code: ErrorCodes.FORBIDDEN });
    if (!r.allowed) expect(r.reason).toContain('untrusted');
    const agentOnTaintedWork: Actor = { kind: 'agent', channel: 'chatA', onBehalfOf: tainted };
    expect(authorize({ actor: agentOnTaintedWork, skill: skill('wipe', { isDangerous: true }), config: cfg }).allowed).toBe(false);
    expect(authorize({ actor: tainted, skill: skill('web_search'), config: cfg }).allowed).toBe(true);
    expect(authorize({ actor: { ...operator, untrusted: true }, skill: skill('run_command'), config: cfg }).allowed).toBe(true);
    const agentForOperator: Actor = { kind: 'agent', channel: 'cli', untrusted: true, onBehalfOf: operator };
    expect(authorize({ actor: agentForOperator, skill: skill('run_command'), config: cfg }).allowed).toBe(true);
  });
});

describe('authorize with the real configuration store', () => {
  const homes: string[] = [];
  afterEach(() => {
    while (homes.length) rmSync(homes.pop() as string, { recursive: true, force: true });
  });

  async function load(yaml?: string) {
    const home = mkdtempSync(join(tmpdir(), 'keel-policy-test-'));
    homes.push(home);
    if (yaml !== undefined) writeFileSync(join(home, 'keel.config.yaml'), yaml);
    const registry = new KeyRegistry();
    registry.register('kernel', KERNEL_KEYS);
    return ConfigStore.load({ home, registry, env: {} });
  }

  it('makes nobody admin on a channel when adminUsers is absent or invalid in the file', async () => {
    for (const yaml of [undefined, '', 'adminUsers:\n  chatA: 111\n', 'adminUsers:\n  telegram: ["111"]\n']) {
      const config = await load(yaml);
      expect(authorize({ actor: userA('111'), skill: skill('run_command'), config }).allowed, String(yaml)).toBe(false);
    }
    const ok = await load('adminUsers:\n  chatA: ["111"]\n');
    expect(authorize({ actor: userA('111'), skill: skill('run_command'), config: ok })).toEqual({ allowed: true });
  });
});
