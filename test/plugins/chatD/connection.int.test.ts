/**
 * The chatD Socket Mode connection under the kit's supervisor: a dropped socket and Slack's refresh requests
 * reconnect without losing an event, a socket that goes silent (no events, pings or pongs) is rebuilt by the
 * watchdog, more than one open connection is named in a warning, bad tokens stop once with a clear message.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const connected = () => h!.channel().status().connected;

describe('chatD connection', () => {
  it('a dropped socket reconnects; an event sent while it was down is delivered on the new connection', async () => {
    h = await bootChatD({ runAgent: false });
    await waitFor(connected, 'connected');
    h.slack.drop();
    await waitFor(() => (h!.channel().status().reconnects ?? 0) >= 1, 'a reconnect');
    const { envelopeId } = h.slack.pushMessage('while reconnecting');
    await waitFor(() => h!.actions().some((a) => a.task === 'while reconnecting'), 'the message', 20_000);
    expect(h.slack.acked).toContain(envelopeId);
    expect(h.slack.connections()).toBe(2);
    expect(h.channel().status().state).toBe('connected');
  });

  it('Slack’s disconnect (warning, then refresh_requested) opens a new connection; nothing is lost', async () => {
    h = await bootChatD({ runAgent: false });
    await waitFor(connected, 'connected');
    await new Promise((r) => setTimeout(r, 1100));
    h.slack.disconnect('warning');
    await waitFor(() => h!.slack.connections() === 2 && connected(), 'second connection', 20_000);
    await new Promise((r) => setTimeout(r, 1100));
    h.slack.disconnect('refresh_requested');
    await waitFor(() => h!.slack.connections() === 3 && connected(), 'third connection', 20_000);
    h.slack.pushMessage('after the refresh');
    await waitFor(() => h!.actions().some((a) => a.task === 'after the refresh'), 'the message');
    // The old sockets close (the server may hear the last close a moment after the new one works).
    await waitFor(() => h!.slack.openSockets() === 1, 'one open socket');
    // Asked for by Slack: a new connection at once, not a drop with backoff.
    expect(h.channel().status().reconnects).toBe(0);
    expect(h.logs.recent({ level: 'warn' }).some((e) => /connection lost/.test(e.message))).toBe(false);
    expect(h.logs.recent({ level: 'info' }).some((e) => /asked for a new connection \(refresh_requested\)/.test(e.message))).toBe(true);
  });

  it('a socket that stays open but silent (no events, no pings, no pongs) is rebuilt by the watchdog', async () => {
    h = await bootChatD({ runAgent: false, pingMs: 300, config: { chatDSocketTimeout: 3 } });
    await waitFor(connected, 'connected');
    // Pings keep a quiet connection alive: no rebuild while the socket talks.
    await new Promise((r) => setTimeout(r, 4000));
    expect(h.channel().status().reconnects).toBe(0);
    h.slack.silent = true;
    await waitFor(() => (h!.channel().status().reconnects ?? 0) >= 1, 'a rebuild', 20_000);
    expect(h.channel().status().lastError).toMatch(/stalled connection/);
    h.slack.silent = false;
    await waitFor(() => connected() && h!.slack.connections() >= 2, 'connected again', 20_000);
    h.slack.pushMessage('after the silence');
    await waitFor(() => h!.actions().some((a) => a.task === 'after the silence'), 'message after the silence', 20_000);
  });

  it('hello with num_connections > 1 warns that another instance would take half the events', async () => {
    h = await bootChatD({ runAgent: false });
    await waitFor(connected, 'connected');
    expect(h.logs.recent({ level: 'warn' }).filter((e) => /open Socket Mode connections/.test(e.message))).toHaveLength(0);
    h.slack.otherConnections = 1;
    h.slack.disconnect('refresh_requested');
    const warn = await waitFor(
      () => h!.logs.recent({ level: 'warn' }).find((e) => /2 open Socket Mode connections/.test(e.message)),
      'the warning',
      20_000,
    );
    expect(warn!.message).toMatch(/another Keel|Another Keel/);
    expect(warn!.message).toMatch(/half/);
  });

  it('a bad bot token fails once with a clear message and no reconnect loop', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDBotToken: 'xoxb-9999-WRONG-token' } });
    await waitFor(() => h!.channel().status().state === 'failed', 'failed');
    const s = h.channel().status();
    expect(s).toMatchObject({ enabled: true, connected: false, state: 'failed' });
    expect(s.lastError).toMatch(/rejected the bot token \(auth.test answered invalid_auth\)/);
    expect(s.lastError).not.toContain('WRONG');
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.slack.callsOf('auth.test')).toHaveLength(1);
    expect(h.slack.callsOf('apps.connections.open')).toHaveLength(0);
    expect(h.logs.recent({ level: 'error' }).filter((e) => /rejected the bot token/.test(e.message))).toHaveLength(1);
  });

  it('a bad app-level token fails once with a clear message and no reconnect loop', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDAppToken: 'xapp-1-A111-9999-WRONG' } });
    await waitFor(() => h!.channel().status().state === 'failed', 'failed');
    expect(h.channel().status().lastError).toMatch(/rejected the app-level token \(apps.connections.open answered invalid_auth\)/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.slack.callsOf('apps.connections.open')).toHaveLength(1);
    expect(h.slack.connections()).toBe(0);
    const all = h.logs
      .recent({})
      .map((e) => e.message)
      .join('\n');
    expect(all).not.toContain('WRONG');
  });
});

describe('chatD status', () => {
  it('appears in GET /api/connections with the kit’s extras (state, reconnects, lastInboundAt) and the bot name', async () => {
    const { bootKernel } = await import('../../../testing/index.js');
    const { startFakeSlack } = await import('../../fakes/slack-server.js');
    const slack = await startFakeSlack();
    const t = await bootKernel({
      builtins: ['chatD', 'gateway'],
      config: {
        chatDBotToken: slack.botToken,
        chatDAppToken: slack.appToken,
        chatDApiUrl: slack.apiUrl,
        gatewayAutoStart: true,
        gatewayPort: 0,
        gatewayHost: '127.0.0.1',
      },
    });
    try {
      const gw = t.kernel.registry.use<{ port: number }>('gateway:address')!;
      const get = async () =>
        (await (await fetch(`http://127.0.0.1:${gw.port}/api/connections`)).json()) as Record<string, Record<string, unknown>>;
      await waitFor(async () => (await get()).chatD?.connected === true, 'connected in /api/connections');
      slack.pushMessage('hello');
      const c = await waitFor(async () => {
        const s = (await get()).chatD;
        return s?.lastInboundAt ? s : undefined;
      }, 'lastInboundAt');
      expect(c).toMatchObject({ enabled: true, connected: true, state: 'connected', reconnects: 0, botUsername: 'keel' });
      // The history catch-up after the hello: when it last ran and how many messages it brought (none here).
      const caught = await waitFor(async () => {
        const s = (await get()).chatD;
        return s?.lastCatchUpAt ? s : undefined;
      }, 'lastCatchUpAt');
      expect(caught).toMatchObject({ caughtUp: 0, lastCatchUpAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
      expect(JSON.stringify(c)).not.toContain('xoxb-');
    } finally {
      await t.close();
      await slack.close();
    }
  });
});
