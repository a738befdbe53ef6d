import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: many tests start real servers and processes on a 2-core machine under full suite load; a hang
    // still fails, only later.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one file at a time on a 2-core machine, though most
    // files wait on servers, browsers and child processes rather than compute. Two at once there took the suite
    // from 927 s to 685 s (the same run, helpers loading the machine).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: ['test/global-setup.ts'],
  },
});
