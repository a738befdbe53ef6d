/**
 * Socket Mode under the kit's supervisor, as a Bolt receiver. Bolt's own SocketModeReceiver acknowledges an
 * Events API envelope before any listener runs (App.processEvent: "acknowledged right away"), so an event Slack
 * was told about could be lost in a crash. This receiver acknowledges an envelope only after `record` has written
 * it to the durable ingress; an envelope not acknowledged is sent again by Slack.
 *
 * One SocketModeClient per connection (its own reconnect loop off): the supervisor owns reconnects, backoff, the
 * stall watchdog and the "bad credentials: stop once" decision, as for every channel of the kit.
 */
import type { App, Receiver } from '@slack/bolt';
import { LogLevel, type Logger as SlackLogger, SocketModeClient } from '@slack/socket-mode';
import type { ConnectionHooks } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';

/** One Socket Mode envelope (events_api, slash_commands, interactive ...). */
export interface Envelope {
  envelopeId: string;
  type: string;
  body: Record<string, unknown>;
  retryNum?: number;
}

/** What Slack's `hello` tells about the connection. */
export interface Hello {
  num_connections?: number;
  debug_info?: { host?: string; approximate_connection_time?: number };
}

export interface SocketOptions {
  appToken: string;
  apiUrl: string;
  log: Logger;
  /** Makes the envelope durable; the envelope is acknowledged only after this returns (throwing: not acknowledged). */
  record(e: Envelope): void | Promise<void>;
  /** Called with every hello. */
  hello(h: Hello): void;
}

/**
 * A logger for the Slack libraries: their ping and pong lines are signs of life for the watchdog; the rest goes to
 * debug (the supervisor reports what matters: lost connections and bad credentials, once).
 */
function slackLogger(log: Logger, live: () => void): SlackLogger {
  return {
    debug: (...m: unknown[]) => {
      const s = m.map(String).join(' ');
      if (/received (ping|pong) from Slack/.test(s)) live();
    },
    info: (...m: unknown[]) => log.debug(`slack: ${m.map(String).join(' ')}`),
    warn: (...m: unknown[]) => log.debug(`slack: ${m.map(String).join(' ')}`),
    error: (...m: unknown[]) => log.debug(`slack: ${m.map(String).join(' ')}`),
    setLevel: () => undefined,
    getLevel: () => LogLevel.DEBUG,
    setName: () => undefined,
  };
}

/**
 * Runs one Socket Mode connection until it drops, Slack asks for a new one (`disconnect`: resolves 'reconnect'),
 * or `signal` aborts.
 * Rejects with the apps.connections.open error when the connection cannot be opened.
 */
export async function runSocket(o: SocketOptions, signal: AbortSignal, hooks: ConnectionHooks): Promise<void | 'reconnect'> {
  const client = new SocketModeClient({
    appToken: o.appToken,
    autoReconnectEnabled: false,
    pingPongLoggingEnabled: true,
    logger: slackLogger(o.log, hooks.live),
    clientOptions: { slackApiUrl: o.apiUrl, retryConfig: { retries: 0 } },
  });
  let reason = '';
  let finish!: (e?: unknown) => void;
  const ended = new Promise<void>((resolve, reject) => {
    finish = (e) => (e ? reject(e) : resolve());
  });
  ended.catch(() => undefined); // awaited below; this only keeps an early rejection from going unhandled
  let closed = false;
  client.on('ws_message', (data: unknown) => {
    hooks.live();
    try {
      const m = JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data as ArrayBuffer)) as {
        type?: string;
        reason?: string;
      } & Hello;
      if (m.type === 'hello') {
        o.hello(m);
        hooks.connected();
      } else if (m.type === 'disconnect') reason = m.reason ?? 'disconnect';
    } catch {
      // not JSON: the client ignores it too
    }
  });
  client.on(
    'slack_event',
    async (e: {
      ack: (r?: unknown) => Promise<void>;
      envelope_id: string;
      type: string;
      body: Record<string, unknown>;
      retry_num?: number;
    }) => {
      try {
        await o.record({
          envelopeId: e.envelope_id,
          type: e.type,
          body: e.body ?? {},
          ...(e.retry_num !== undefined ? { retryNum: e.retry_num } : {}),
        });
      } catch (err) {
        o.log.warn(`chatD: could not record envelope ${e.envelope_id} (${errorMessage(err)}); not acknowledged, Slack sends it again.`);
        return;
      }
      await e
        .ack()
        .catch((err: unknown) =>
          o.log.debug(`chatD: ack of ${e.envelope_id} failed (${String(err)}); recorded, so a redelivery is deduplicated.`),
        );
    },
  );
  client.on('disconnected', () => {
    closed = true;
    finish(reason ? undefined : new Error('the Socket Mode connection closed'));
  });
  const onAbort = () => finish(signal.reason);
  if (signal.aborted) throw signal.reason;
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.race([client.start(), ended]);
    await ended;
    if (reason) {
      o.log.info(`chatD: Slack asked for a new connection (${reason}); reconnecting.`);
      return 'reconnect';
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!closed) await Promise.race([client.disconnect().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    client.removeAllListeners();
  }
}

/**
 * The Bolt receiver: Bolt's `App` needs one (else it listens over HTTP), but here it neither listens nor acknowledges.
 * The channel kit starts and stops the supervised connection (`runSocket` as its `connect`); the `App` only owns
 * the WebClient.
 * @example const app = new App({ token, receiver: new SupervisedReceiver(), tokenVerificationEnabled: false });
 */
export class SupervisedReceiver implements Receiver {
  init(_app: App): void {
    // Envelopes go to the durable ingress, not through Bolt's listener chain (which acknowledges first).
  }
  async start(): Promise<void> {
    // The kit starts the connection (defineChannel).
  }
  async stop(): Promise<void> {
    // The kit stops the connection (defineChannel).
  }
}
