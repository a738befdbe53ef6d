import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST, KERNEL_KEYS, KeyRegistry } from '../../../kernel/config/index.js';
import { ErrorCodes, KeelError } from '../../../kernel/errors.js';
import type { ConfigKeySpec } from '../../../sdk/types.js';

const key = (extra: Partial<ConfigKeySpec> = {}): ConfigKeySpec => ({
  schema: Type.String(),
  policy: 'SAFE',
  description: 'x',
  ...extra,
});

describe('KeyRegistry', () => {
  it('refuses a key claimed by a second owner, naming both, and registers nothing of that batch', () => {
    const r = new KeyRegistry();
    r.register('providerA', { providerAApiKey: key() });
    let err: unknown;
    try {
      r.register('impostor', { impostorOwn: key(), providerAApiKey: key() });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KeelError);
    expect((err as KeelError).code).toBe(ErrorCodes.CONFIG_DUPLICATE_KEY);
    expect((err as KeelError).message).toContain('providerA');
    expect((err as KeelError).message).toContain('impostor');
    expect(r.has('impostorOwn')).toBe(false);
    expect(r.get('providerAApiKey')?.owner).toBe('providerA');
  });

  it('lets an owner re-register (plugin reload) and unregister its keys', () => {
    const r = new KeyRegistry();
    r.register('p', { a: key(), b: key() });
    r.register('p', { a: key({ schema: Type.Number() }) });
    expect(r.validate('a', 1).ok).toBe(true);
    r.unregister('p');
    expect(r.keys()).toEqual([]);
    expect(r.validate('a', 1)).toEqual({ ok: false, message: 'unknown key "a"' });
  });

  it('suggests near keys case-insensitively', () => {
    const r = new KeyRegistry();
    r.register('kernel', KERNEL_KEYS);
    expect(r.nearest('SAFEMODE')[0]).toBe('safeMode');
    expect(r.nearest('sudomod')).toContain('sudoMode');
    expect(r.nearest('pluginDenylist')[0]).toBe('pluginDenyList');
    expect(r.nearest('HealthCheck')).toContain('pluginHealthCheckIntervalMinutes');
    expect(r.nearest('qqqqqqqqqqqqqqqq')).toEqual([]);
    expect(r.nearest('mode', 2)).toHaveLength(2);
  });

  it('validates with the key schema, including schemas only ajv can check', () => {
    const r = new KeyRegistry();
    r.register('kernel', KERNEL_KEYS);
    expect(r.validate('safeMode', true).ok).toBe(true);
    expect(r.validate('safeMode', 'true').ok).toBe(false);
    expect(r.validate('sessionScope', 'main').ok).toBe(true);
    expect(r.validate('sessionScope', 'global').ok).toBe(false);
    expect(r.validate('adminUsers', { chatA: ['1'], email: ['a@b.test'] }).ok).toBe(true);
    expect(r.validate('adminUsers', { chatA: [1] }).ok).toBe(false);
    expect(r.validate('adminUsers', { telegram: ['1'] }, { strict: true }).ok).toBe(false);
    expect(r.validate('identityLinks', { 'chatA:1': 'chatC:2' }).ok).toBe(true);
    expect(r.validate('identityLinks', { 'chatA:1': 'nobody' }).ok).toBe(false);
    expect(r.validate('pluginHealthCheckIntervalMinutes', 0).ok).toBe(false);
  });

  it('rejects every value for a schema ajv cannot compile (fail closed)', () => {
    const r = new KeyRegistry();
    r.register('broken', { weird: key({ schema: { type: 'object', properties: { a: { $ref: '#/nowhere' } } } as never }) });
    const v = r.validate('weird', { a: 1 });
    expect(v.ok).toBe(false);
  });
});

describe('kernel keys', () => {
  it('carry the spec defaults and policy classes', () => {
    expect(DEFAULT_COMMAND_DENY_LIST).toEqual([
      'rm',
      'rmdir',
      'del',
      'erase',
      'format',
      'mkfs',
      'dd',
      'shutdown',
      'reboot',
      'poweroff',
      'reg',
      'diskpart',
      'netsh',
      // beyond SPEC's list: they delete files as rm does (issue 35)
      'unlink',
      'shred',
    ]);
    expect(DEFAULT_COMMAND_ALLOW_LIST).toHaveLength(33);
    expect(DEFAULT_COMMAND_ALLOW_LIST).toContain('keel');
    expect(DEFAULT_COMMAND_ALLOW_LIST).not.toContain('<cli>');
    expect(KERNEL_KEYS['commandAllowList']?.default).toEqual(DEFAULT_COMMAND_ALLOW_LIST);
    const cls = Object.fromEntries(Object.entries(KERNEL_KEYS).map(([k, s]) => [k, s.policy]));
    expect(cls).toEqual({
      queueCompletedLimit: 'SAFE',
      queueFailedLimit: 'SAFE',
      queueRedisUrl: 'LOCKED',
      queueRedisPrefix: 'LOCKED',
      queueRedisSigningKey: 'LOCKED',
      queueWorkerLeaseSeconds: 'LOCKED',
      safeMode: 'LOCKED',
      sudoMode: 'LOCKED',
      overrideMode: 'LOCKED',
      commandAllowList: 'LOCKED',
      commandDenyList: 'LOCKED',
      adminUsers: 'LOCKED',
      enableSelfModification: 'LOCKED',
      sessionScope: 'APPROVAL',
      identityLinks: 'LOCKED',
      pluginAllowList: 'LOCKED',
      pluginDenyList: 'LOCKED',
      pluginHealthCheckIntervalMinutes: 'SAFE',
      downloadsKeepDays: 'APPROVAL',
      logFileMaxMB: 'SAFE',
      channelHistoryKeepDays: 'SAFE',
    });
    expect((KERNEL_KEYS.adminUsers as { default?: unknown }).default).toBeUndefined();
    expect(KERNEL_KEYS['sessionScope']?.default).toBe('per-channel-peer');
    expect(KERNEL_KEYS['pluginHealthCheckIntervalMinutes']?.default).toBe(15);
    expect(KERNEL_KEYS['queueCompletedLimit']?.default).toBe(100);
    expect(KERNEL_KEYS['commandAllowList']?.description).toMatch(/LOCKED/);
    expect(KERNEL_KEYS['identityLinks']?.description).toMatch(/admin/);
  });
});
