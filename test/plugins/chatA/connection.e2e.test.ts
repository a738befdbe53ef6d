/**
 * The chatA connection under the kit's supervisor: a deaf long poll is rebuilt by the watchdog, a bad token stops
 * once with a clear message, another live owner of the same token keeps this process from polling.
 */
import { writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { OwnerLock } from '../../../sdk/channel-kit/index.js';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('chatA connection', () => {
  it('a long poll that stops answering is aborted by the watchdog and the connection rebuilt; nothing is lost', async () => {
    h = await bootChatA({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    h.tg.stallPolls = true;
    await waitFor(() => (h!.channel().status().reconnects ?? 0) >= 1, 'a reconnect', 20_000);
    expect(h.channel().status().lastError).toMatch(/stalled connection/);
    h.tg.stallPolls = false;
    h.tg.pushText('after the stall', { userId: 5 });
    await waitFor(() => h!.actions().some((a) => a.task === 'after the stall'), 'message after the stall', 20_000);
    expect(h.channel().status().state).toBe('connected');
  });

  it('an invalid token fails once with a clear message and no reconnect loop', async () => {
    h = await bootChatA({ token: '999:WRONG-token', runAgent: false });
    await waitFor(() => h!.channel().status().state === 'failed', 'failed');
    const s = h.channel().status();
    expect(s).toMatchObject({ enabled: true, connected: false, state: 'failed' });
    expect(s.lastError).toMatch(/rejected the bot token/);
    expect(s.lastError).not.toContain('WRONG');
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.tg.callsOf('getMe')).toHaveLength(1);
    expect(h.tg.callsOf('getUpdates')).toHaveLength(0);
    expect(h.logs.recent({ level: 'error' }).filter((e) => /rejected the bot token/.test(e.message))).toHaveLength(1);
  });

  it('while another live process owns the token, this one does not poll; it takes over once that process is gone', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      h = await bootChatA({ runAgent: false });
      await waitFor(() => h!.channel().status().connected, 'connected');
      await h.kernel.stop();
      // Another process (alive) now holds the lock file of this token.
      const lock = new OwnerLock(h.home, 'chatA', h.tg.token);
      writeFileSync(lock.file, JSON.stringify({ pid: other.pid, since: new Date().toISOString() }));
      const polls = h.tg.callsOf('getUpdates').length;
      await h.restart();
      await waitFor(() => /Another Keel process/.test(h!.channel().status().lastError ?? ''), 'waiting for the owner');
      await new Promise((r) => setTimeout(r, 1000));
      expect(h.tg.callsOf('getUpdates').length).toBe(polls);
      expect(h.channel().status().connected).toBe(false);
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
      await waitFor(() => h!.channel().status().connected, 'took over', 15_000);
      // Connected is reported once getMe answers; the first long poll follows right after.
      await waitFor(() => h!.tg.callsOf('getUpdates').length > polls, 'polling after the takeover');
    } finally {
      other.kill('SIGKILL');
    }
  });
});
