/**
 * Shared set-up for the config tests: a temporary KEEL_HOME, a registry with the kernel's keys plus
 * a test plugin's keys (including a secret with AWS-style alternative environment names), and a
 * logger that records every line so tests can prove secrets never reach it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Type from 'typebox';
import { ConfigStore, KERNEL_KEYS, KeyRegistry, type ConfigStoreOptions } from '../../../kernel/config/index.js';
import type { ConfigKeySpec, Logger } from '../../../sdk/types.js';

export const TEST_KEYS: Record<string, ConfigKeySpec> = {
  testPort: { schema: Type.Number(), default: 3100, env: ['TEST_PORT'], policy: 'SAFE', description: 'a number' },
  testRegion: {
    schema: Type.String(),
    env: ['TESTD_REGION', 'AWS_REGION'],
    policy: 'SAFE',
    description: 'AWS-style: two environment names, first set wins',
  },
  testApiKey: {
    schema: Type.String(),
    env: ['TEST_API_KEY'],
    policy: 'APPROVAL',
    secret: true,
    description: 'a secret needing approval',
  },
  testToken: { schema: Type.String(), env: ['TEST_TOKEN'], policy: 'LOCKED', secret: true, description: 'a locked secret' },
  testEnabled: { schema: Type.Boolean(), default: false, env: ['TEST_ENABLED'], policy: 'SAFE', description: 'a flag' },
  testOrigins: { schema: Type.Array(Type.String()), default: ['*'], env: ['TEST_ORIGINS'], policy: 'SAFE', description: 'a list' },
  testModels: { schema: Type.Record(Type.String(), Type.String()), env: ['TEST_MODELS'], policy: 'SAFE', description: 'a map' },
};

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  text: string;
}

export function recordingLogger(): Logger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (message: string, ...rest: unknown[]) =>
      lines.push({ level, text: [message, ...rest.map((r) => JSON.stringify(r))].join(' ') });
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    text: () => lines.map((l) => l.text).join('\n'),
  };
}

export interface Fixture {
  home: string;
  file: string;
  registry: KeyRegistry;
  log: ReturnType<typeof recordingLogger>;
  load(opts?: Partial<ConfigStoreOptions>): Promise<ConfigStore>;
}

const homes: string[] = [];

export function fixture(): Fixture {
  const home = mkdtempSync(join(tmpdir(), 'keel-config-test-'));
  homes.push(home);
  const registry = new KeyRegistry();
  registry.register('kernel', KERNEL_KEYS);
  registry.register('testplugin', TEST_KEYS);
  const log = recordingLogger();
  return {
    home,
    file: join(home, 'keel.config.yaml'),
    registry,
    log,
    load: (opts = {}) => ConfigStore.load({ home, registry, env: {}, log, clock: () => 1_700_000_000_000, ...opts }),
  };
}

/** Remove every temporary home made by `fixture()` (call from afterEach). */
export function cleanupFixtures(): void {
  while (homes.length > 0) rmSync(homes.pop() as string, { recursive: true, force: true });
}
