import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { selectedTier, TIER_GLOBS } from './test/tiers.js';

// The tiers of test/tiers.ts: `npm test` runs all of them, `npm run test:unit|test:int|test:e2e` one
// (KEEL_TEST_TIER). Every run has one temporary folder, removed at its end (test/tmp-setup.ts). The unit tier has no
// other global set-up (no Debian packages, no build, no shared server) and the
// guard that fails a unit test which spawns or listens.
const tier = selectedTier();
const include = tier ? TIER_GLOBS[tier].include : ['test/**/*.test.ts'];
const exclude = tier ? TIER_GLOBS[tier].exclude : [];

export default defineConfig({
  test: {
    include,
    exclude: ['**/node_modules/**', ...exclude],
    // Generous: many tests start real servers and processes on a 2-core machine under full suite load; a hang
    // still fails, only later.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one file at a time on a 2-core machine, though most
    // files wait on servers, browsers and child processes rather than compute. Two at once there took the suite
    // from 927 s to 685 s (the same run, helpers loading the machine).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: tier === 'unit' ? ['test/tmp-setup.ts'] : ['test/tmp-setup.ts', 'test/global-setup.ts'],
    // The unit tier reuses a worker for the next file (about half its time was one process per file); its files
    // share no state but what they create in temporary homes. Every other run keeps one process per file.
    isolate: tier !== 'unit',
    setupFiles: tier === 'unit' ? ['test/unit-guard.ts'] : [],
  },
});
