// TEMPORARY copy of the channel contract types (CHANNEL-CONTRACT.md) until sdk/channel.ts lands on main.
import type { ConnectionStatus } from '../plugin.js';
import type { Action, Json } from '../types.js';
export interface ChannelStatus extends ConnectionStatus {
  state?: 'connecting' | 'connected' | 'reconnecting' | 'stopped' | 'failed';
  lastInboundAt?: string;
  reconnects?: number;
  lastError?: string;
}
export interface ProgressUpdate { typingOnly: boolean; thought?: string; step?: number }
export interface InboundMessage {
  channel: string; messageId: string; chatId: string; userId: string; userName?: string; text: string;
  isGroup?: boolean; mentioned?: boolean; command?: string; threadId?: string;
  attachments?: Array<{ path: string; name?: string; mime?: string; kind?: string }>;
  replyTo?: Record<string, Json>; forceUntrusted?: boolean; notAdmin?: boolean;
}
export type { Action };
