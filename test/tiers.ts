/**
 * The three test tiers, by file name (issue 39.4). `npm test` runs all three; `KEEL_TEST_TIER` (set by the
 * `test:unit`, `test:int` and `test:e2e` scripts) picks one.
 *
 * - unit: `*.test.ts` with none of the suffixes below. No child process, no browser, no listening socket, no
 *   server: the code under test in this process, with injected clocks instead of sleeps. Enforced twice: the
 *   conformance test test/conformance/test-tiers.test.ts scans these files, and test/unit-guard.ts makes
 *   `child_process` and `listen` throw in the unit run.
 * - int: `*.int.test.ts`. Real client libraries against loopback servers in this process (test/fakes, the
 *   gateway) and the run's shared redis-server (test/shared-redis.ts); no child process of its own, no browser.
 * - e2e: `*.e2e.test.ts` and `*.browser.test.ts`. Child processes (the `keel` CLI, `keel run`, a private
 *   redis-server that is killed, dovecot, busybox, tmux, sandboxes) and Chromium.
 */
export type Tier = 'unit' | 'int' | 'e2e';

export const TIER_GLOBS: Readonly<Record<Tier, { include: string[]; exclude: string[] }>> = {
  unit: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/**/*.int.test.ts', 'test/**/*.e2e.test.ts', 'test/**/*.browser.test.ts'],
  },
  int: { include: ['test/**/*.int.test.ts'], exclude: [] },
  e2e: { include: ['test/**/*.e2e.test.ts', 'test/**/*.browser.test.ts'], exclude: [] },
};

/** The tier of a test file, from its name. */
export function tierOf(file: string): Tier {
  if (/\.int\.test\.ts$/.test(file)) return 'int';
  if (/\.(e2e|browser)\.test\.ts$/.test(file)) return 'e2e';
  return 'unit';
}

/** The tier `KEEL_TEST_TIER` asks for (undefined: all of them). A wrong value is a clear error. */
export function selectedTier(env: NodeJS.ProcessEnv = process.env): Tier | undefined {
  const t = env.KEEL_TEST_TIER?.trim();
  if (!t || t === 'all') return undefined;
  if (t === 'unit' || t === 'int' || t === 'e2e') return t;
  throw new Error(`KEEL_TEST_TIER must be unit, int, e2e or all, not "${t}"`);
}
