/**
 * Type tests pinning the channel contract of sdk/ (checked by tsc; the runtime part only proves the file loads).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type {
  Action,
  ChannelCapability,
  ChannelListing,
  ChannelStatus,
  ConnectionStatus,
  InboundMessage,
  OutboundMessage,
  PluginContext,
  PluginManifest,
  ReceiveOptions,
  ReceiveOutcome,
  SentMessage,
} from '../../sdk/index.js';
import { listChannels, receive, SPEC_CHANNELS } from '../../sdk/index.js';
import { fakeChannel } from '../../testing/index.js';

describe('channel contract types', () => {
  it('receive takes a context, an inbound message and options, and says what became of the message', () => {
    expectTypeOf(receive).parameters.toEqualTypeOf<[PluginContext, InboundMessage, ReceiveOptions]>();
    expectTypeOf(receive).returns.resolves.toEqualTypeOf<ReceiveOutcome>();
    expectTypeOf<Extract<ReceiveOutcome, { kind: 'queued' }>['action']>().toEqualTypeOf<Action>();
    expectTypeOf<Extract<ReceiveOutcome, { kind: 'ignored' }>['reason']>().toEqualTypeOf<
      'auto-reply-off' | 'not-admin' | 'duplicate' | 'dropped-by-hook' | 'rate-limited' | 'empty'
    >();
    expectTypeOf<Pick<InboundMessage, 'channel' | 'messageId' | 'chatId' | 'userId' | 'text'>>().toEqualTypeOf<{
      channel: string;
      messageId: string;
      chatId: string;
      userId: string;
      text: string;
    }>();
  });

  it('a channel reports SPEC status plus extras and answers with platform ids', () => {
    expectTypeOf<ChannelStatus>().toExtend<ConnectionStatus>();
    expectTypeOf<ChannelCapability['send']>().returns.resolves.toEqualTypeOf<SentMessage>();
    expectTypeOf<ChannelCapability['reply']>().parameters.toEqualTypeOf<[Action, string | OutboundMessage]>();
    expectTypeOf<NonNullable<ChannelCapability['react']>>().parameters.toEqualTypeOf<[string, string, string]>();
    expectTypeOf<SentMessage>().toEqualTypeOf<{ messageId: string; messageIds: string[] }>();
    expectTypeOf(fakeChannel('x').manifest).toExtend<PluginManifest>();
  });

  it('listing and the manifest channel field', () => {
    // Compiled, never run: the listing is typed by the capability map (sdk/capabilities.ts).
    void ((ctx: PluginContext) =>
      expectTypeOf(ctx.capabilities('channel:')).toEqualTypeOf<Array<{ name: string; plugin: string; impl: ChannelCapability }>>());
    expectTypeOf(listChannels).returns.toEqualTypeOf<ChannelListing[]>();
    expectTypeOf<NonNullable<PluginManifest['channel']>>().toEqualTypeOf<{ name: string; userIdPattern: string; userIdExample: string }>();
    expectTypeOf(SPEC_CHANNELS.chatA).toExtend<NonNullable<PluginManifest['channel']>>();
  });
});
