/**
 * A channel plugin for tests: it provides `channel:<name>`, records everything the agent sends, replies and
 * reports as progress, and turns a simulated platform message into an action through the SDK's `receive`
 * (the same path a real channel takes).
 */
import {
  receive,
  type ChannelCapability,
  type ChannelStatus,
  type InboundMessage,
  type OutboundMessage,
  type ProgressUpdate,
  type ReceiveOutcome,
  type SendOptions,
  type SentMessage,
} from '../sdk/channel.js';
import type { PluginContext, PluginDefinition } from '../sdk/plugin.js';
import type { Action, PluginManifest } from '../sdk/types.js';

/**
 * Options of `fakeChannel`.
 * @example fakeChannel('chat', { autoReply: false, status: { enabled: true, connected: false } })
 */
export interface FakeChannelOptions {
  /** Plugin id (default `fake-channel-<name>`). */
  id?: string;
  /** `receive`'s auto-reply setting (default true: every message becomes an action). */
  autoReply?: boolean;
  /** User-id form declared in the manifest (default: any non-empty id). */
  userIdPattern?: string;
  userIdExample?: string;
  /** What `status()` reports (default enabled and connected). */
  status?: ChannelStatus;
}

/**
 * A fake channel: a plugin definition plus what it recorded.
 * @example const chat: FakeChannel = fakeChannel('chat'); expect(chat.replies).toEqual([]);
 */
export interface FakeChannel extends PluginDefinition {
  name: string;
  /** Every `send`, in order. */
  sent: Array<{ to: string; message: string | OutboundMessage; options?: SendOptions; messageId: string }>;
  /** Every `reply`, in order, with the chat it went to (`action.metadata.replyTo.chatId`). */
  replies: Array<{ actionId: string; chatId: string | undefined; message: string | OutboundMessage; messageId: string }>;
  /** Every `progress` update, in order. */
  progress: Array<{ actionId: string; update: ProgressUpdate }>;
  /** The plugin context, once the kernel has set the plugin up. */
  ctx: PluginContext | undefined;
  /**
   * Simulate a platform message: defaults fill `channel`, `messageId` (a counter), `chatId` ('chat-1') and
   * `userId` ('user-1'); the message then goes through `receive`.
   */
  inbound(message: Partial<InboundMessage> & { text: string }): Promise<ReceiveOutcome>;
  /** Resolves once `n` replies were recorded (rejects after `timeoutMs`, default 10 s). */
  untilReplies(n: number, timeoutMs?: number): Promise<FakeChannel['replies']>;
}

/**
 * A channel plugin for tests, named `name` (capability `channel:<name>`).
 * @example
 * const chat = fakeChannel('chat');
 * const t = await bootKernel({ plugins: [chat], runAgent: true });
 * await chat.inbound({ text: 'hello' });
 * const [reply] = await chat.untilReplies(1);
 */
export function fakeChannel(name = 'fake', opts: FakeChannelOptions = {}): FakeChannel {
  let counter = 0;
  let platformIds = 0;
  const waiters = new Set<() => void>();
  const manifest: PluginManifest = {
    id: opts.id ?? `fake-channel-${name}`,
    version: '1.0.0',
    kind: 'channel',
    description: `Fake channel ${name} for tests`,
    provides: [`channel:${name}`],
    channel: { name, userIdPattern: opts.userIdPattern ?? '^\\S+$', userIdExample: opts.userIdExample ?? 'user-1' },
  };
  const nextId = () => `${name}-out-${++platformIds}`;
  const fake: FakeChannel = {
    name,
    manifest,
    sent: [],
    replies: [],
    progress: [],
    ctx: undefined,
    setup(ctx) {
      fake.ctx = ctx;
      const impl: ChannelCapability = {
        name,
        status: () => opts.status ?? { enabled: true, connected: true, state: 'connected' },
        async send(to, message, options) {
          const messageId = nextId();
          fake.sent.push({ to, message, ...(options ? { options } : {}), messageId });
          return { messageId, messageIds: [messageId] } satisfies SentMessage;
        },
        async reply(action: Action, message) {
          const messageId = nextId();
          const chatId = action.metadata.replyTo?.['chatId'];
          fake.replies.push({ actionId: action.id, chatId: typeof chatId === 'string' ? chatId : undefined, message, messageId });
          for (const w of [...waiters]) w();
          return { messageId, messageIds: [messageId] };
        },
        async progress(action, update) {
          fake.progress.push({ actionId: action.id, update });
        },
      };
      ctx.provide(`channel:${name}`, impl);
      return {
        stop() {
          fake.ctx = undefined;
        },
      };
    },
    async inbound(message) {
      const ctx = fake.ctx;
      if (!ctx) throw new Error(`fake channel ${name} is not running; boot a kernel with it first`);
      counter++;
      const full: InboundMessage = { channel: name, messageId: `${name}-in-${counter}`, chatId: 'chat-1', userId: 'user-1', ...message };
      return receive(ctx, full, { autoReply: opts.autoReply ?? true });
    },
    untilReplies(n, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (fake.replies.length < n) return;
          cleanup();
          resolve(fake.replies.slice(0, n));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`fake channel ${name}: ${fake.replies.length} of ${n} replies after ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
  return fake;
}
