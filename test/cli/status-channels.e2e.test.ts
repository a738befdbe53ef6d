/**
 * `keel status` lists the running channels (every provider of `channel:<name>`, a user's own included), from
 * the state the running agent publishes. Real child processes of dist/cli.js with their own KEEL_HOME.
 */
import { execFile } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installFakeAgent } from '../../testing/index.js';
import { rm, tmp, waitFor } from '../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'plugins', 'echo-channel');

function keel(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, KEEL_HOME: home, ECHO_CHANNEL_PORT: '0' };
    execFile(process.execPath, [CLI, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const homes: string[] = [];
afterEach(async () => {
  for (const h of homes.splice(0)) {
    await keel(h, ['stop', '--timeout', '3000']);
    rm(h);
  }
});

describe('keel status', () => {
  it('lists a running user channel plugin with its state', async () => {
    const h = tmp('keel-status-');
    homes.push(h);
    installFakeAgent(h);
    cpSync(EXAMPLE, join(h, 'plugins', 'echo-channel'), { recursive: true });
    const started = await keel(h, ['run', '--daemon']);
    expect(started.code, started.stderr).toBe(0);
    const report = await waitFor(async () => {
      const j = JSON.parse((await keel(h, ['status', '--json'])).stdout) as {
        running: boolean;
        channels: Array<{ name: string; plugin: string; status?: { connected: boolean } }>;
      };
      return j.channels.length > 0 ? j : undefined;
    }, 'the channel in keel status');
    expect(report.running).toBe(true);
    // Built-in channels that are not configured are listed too (enabled: false); the user's channel is among them.
    expect(report.channels).toContainEqual({
      name: 'echo',
      plugin: 'echo-channel',
      status: { enabled: true, connected: true, state: 'connected' },
    });
    const text = await keel(h, ['status']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Channels: .*echo connected/);
  });
});
