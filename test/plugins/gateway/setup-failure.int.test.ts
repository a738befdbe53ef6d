/**
 * A gateway whose setup fails after its WebSocket part was built (the static folder named by gatewayStaticDir is not
 * there) closes what that part opened: the event bus's listener on the kernel's log is gone, so a retry of the
 * setup at every health round does not pile them up.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { rm, tmp } from '../../helpers.js';

const homes: string[] = [];
const kernels: Kernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.stop();
  for (const h of homes.splice(0)) rm(h);
});

/** A kernel with the gateway; returns how many listeners its log has once started. */
async function logListeners(overrides: Record<string, unknown>): Promise<{ kernel: Kernel; listeners: () => number }> {
  const home = tmp('keel-gw-fail-');
  homes.push(home);
  const logs = new LogSink({ quiet: true });
  const kernel = await startKernel({ home, env: {}, watchSkills: false, logs, overrides });
  kernels.push(kernel);
  return { kernel, listeners: () => (logs as unknown as { listeners: Set<unknown> }).listeners.size };
}

describe('gateway setup that fails late', () => {
  it('leaves no listener on the kernel log behind, at its first try or at a retry', async () => {
    const missing = join(tmp('keel-gw-nosite-'), 'site');
    homes.push(join(missing, '..'));
    expect(existsSync(missing)).toBe(false);
    const off = await logListeners({ gatewayAutoStart: false });
    const failing = await logListeners({ gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1', gatewayStaticDir: missing });
    expect(failing.kernel.host.status('gateway')?.state).toBe('failed');
    expect(failing.kernel.host.status('gateway')?.reason ?? '').toMatch(/static folder .* does not exist/);
    expect(failing.listeners()).toBe(off.listeners());
    // The health round tries the setup again: still nothing left behind.
    await failing.kernel.host.checkHealth();
    expect(failing.listeners()).toBe(off.listeners());
  }, 60_000);
});
