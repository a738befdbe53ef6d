/**
 * The chatC gateway under the kit's supervisor: a dropped socket resumes its session (missed events replayed),
 * a socket whose heartbeats go unacknowledged is torn down and resumed, a dead gateway is rebuilt by the watchdog
 * and what was said meanwhile is read from the history; bad credentials and disallowed intents stop once with a
 * clear message.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { OwnerLock } from '../../../sdk/channel-kit/index.js';
import { waitFor } from '../../helpers.js';
import { bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tasks = () => h!.actions().map((a) => a.task);

describe('chatC connection', () => {
  it('a dropped connection resumes (RESUME with session id and sequence): the message sent meanwhile arrives once', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    h.dc.pushMessage('before', { userId: USER });
    await waitFor(() => tasks().includes('before'), 'first message');
    h.dc.drop();
    h.dc.pushMessage('while dropped', { userId: USER });
    await waitFor(() => h!.dc.gateway.resumed >= 1, 'resumed', 15_000);
    await waitFor(() => tasks().includes('while dropped'), 'message replayed by the resume');
    h.dc.pushMessage('after', { userId: USER });
    await waitFor(() => tasks().includes('after'), 'message after the resume');
    expect(h.dc.gateway.identifies).toBe(1);
    expect(tasks().sort()).toEqual(['after', 'before', 'while dropped']);
    expect(h.channel().status().state).toBe('connected');
  });

  it('a socket whose heartbeats go unacknowledged is torn down and its session resumed', async () => {
    h = await bootChatC({ runAgent: false, heartbeatMs: 300 });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const opened = h.dc.gateway.connections;
    h.dc.silence();
    h.dc.pushMessage('said to a zombie', { userId: USER });
    await waitFor(() => h!.dc.gateway.connections > opened && h!.dc.gateway.resumed >= 1, 'a new socket resumed', 15_000);
    await waitFor(() => tasks().includes('said to a zombie'), 'the message');
    expect(h.actions()).toHaveLength(1);
    expect(h.dc.gateway.identifies).toBe(1);
  });

  it('a gateway that goes dead is rebuilt by the watchdog; what was said meanwhile is read from the history', async () => {
    h = await bootChatC({ runAgent: false, heartbeatMs: 300 });
    await waitFor(() => h!.channel().status().connected, 'connected');
    h.dc.pushMessage('known channel', { userId: USER });
    await waitFor(() => tasks().includes('known channel'), 'first message');
    // The watchdog learns the heartbeat interval from the first heartbeat (before it, the limit is 90 s).
    await waitFor(() => h!.dc.gateway.heartbeats >= 2, 'heartbeats running');
    // Nothing answers any more: no ACKs on this socket, no HELLO on a new one.
    h.dc.deaf = true;
    h.dc.silence();
    h.dc.drop();
    await waitFor(() => (h!.channel().status().reconnects ?? 0) >= 1, 'the watchdog rebuilt the client', 30_000);
    expect(h.channel().status().lastError).toMatch(/stalled connection/);
    h.dc.pushMessage('said while the gateway was dead', { userId: USER });
    h.dc.deaf = false;
    await waitFor(() => tasks().includes('said while the gateway was dead'), 'the missed message', 30_000);
    expect(h.dc.gateway.identifies).toBeGreaterThanOrEqual(2);
    expect(h.dc.callsOf('GET /channels/:id/messages').length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(tasks().filter((t) => t === 'said while the gateway was dead')).toHaveLength(1);
    expect(tasks().filter((t) => t === 'known channel')).toHaveLength(1);
  }, 60_000);

  it("appears in GET /api/connections with guilds and the kit's extras", async () => {
    h = await bootChatC({
      runAgent: false,
      plugins: ['gateway'],
      config: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' },
    });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const gw = h.kernel.registry.use<{ port: number }>('gateway:address')!;
    h.dc.pushMessage('hello', { userId: USER });
    await waitFor(() => tasks().includes('hello'), 'message');
    const connections = (await (await fetch(`http://127.0.0.1:${gw.port}/api/connections`)).json()) as Record<
      string,
      Record<string, unknown>
    >;
    expect(connections.chatC).toMatchObject({
      enabled: true,
      connected: true,
      state: 'connected',
      guilds: 1,
      botUsername: 'keel-test',
      reconnects: 0,
      lastInboundAt: expect.stringMatching(/^\d{4}-/),
    });
    expect(JSON.stringify(connections)).not.toContain(h.dc.token);
  });

  it('an invalid token fails once with a clear message and no reconnect loop', async () => {
    h = await bootChatC({ token: 'MTIz.WRONG.token-value-xyz', runAgent: false });
    await waitFor(() => h!.channel().status().state === 'failed', 'failed');
    const s = h.channel().status();
    expect(s).toMatchObject({ enabled: true, connected: false, state: 'failed' });
    expect(s.lastError).toMatch(/rejected the bot token/);
    expect(s.lastError).not.toContain('WRONG');
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.dc.callsOf('GET /gateway/bot')).toHaveLength(1);
    expect(h.dc.gateway.connections).toBe(0);
    expect(h.logs.recent({ level: 'error' }).filter((e) => /rejected the bot token/.test(e.message))).toHaveLength(1);
  });

  it.each([
    [4014, /disallowed intents[\s\S]*Message Content intent/],
    [4004, /rejected the bot token \(close 4004/],
  ])('the gateway closing with %i stops once with a clear message, no reconnect loop', async (code, message) => {
    h = await bootChatC({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    await h.kernel.stop();
    h.dc.identifyCloseCode = code;
    await h.restart();
    await waitFor(() => h!.channel().status().state === 'failed', 'failed');
    expect(h.channel().status().lastError).toMatch(message);
    const identifies = h.dc.gateway.identifies;
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.dc.gateway.identifies).toBe(identifies);
    expect(h.logs.recent({ level: 'error' }).filter((e) => message.test(e.message))).toHaveLength(1);
  });

  it('while another live process owns the token, this one does not connect; it takes over once that process is gone', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      h = await bootChatC({ runAgent: false });
      await waitFor(() => h!.channel().status().connected, 'connected');
      await h.kernel.stop();
      writeFileSync(new OwnerLock(h.home, 'chatC', h.dc.token).file, JSON.stringify({ pid: other.pid, since: new Date().toISOString() }));
      const identifies = h.dc.gateway.identifies;
      await h.restart();
      await waitFor(() => /Another Keel process/.test(h!.channel().status().lastError ?? ''), 'waiting for the owner');
      await new Promise((r) => setTimeout(r, 1000));
      expect(h.dc.gateway.identifies).toBe(identifies);
      expect(h.channel().status().connected).toBe(false);
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
      await waitFor(() => h!.channel().status().connected, 'took over', 15_000);
      expect(h.dc.gateway.identifies).toBe(identifies + 1);
    } finally {
      other.kill('SIGKILL');
    }
  });
});
