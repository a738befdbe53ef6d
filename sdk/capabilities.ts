/**
 * The typed capability map: what `ctx.use(name)` returns and what `ctx.provide(name, impl)` must be, by name.
 * A plugin that offers a capability of its own adds it by declaration merging, so its users need no cast.
 */
import type { ChannelCapability } from './channel-types.js';
import type { DashboardCapability, GatewayEventsCapability, GatewayRoutesCapability } from './gateway.js';
import type {
  AgentCapability,
  KernelInfoCapability,
  KnowledgeCapability,
  MemoryCapability,
  PolicyCapability,
  WebCapability,
} from './core-capabilities.js';
import type { AgentInboxCapability } from './inbox.js';
import type { ApprovalsCapability } from './approvals.js';
import type { LlmCapability, ProviderCapability } from './providers.js';

/**
 * Every capability Keel knows, by name. `channel:<name>` and `provider:<id>` are families: any name of that form
 * has the family's type.
 * @example
 * // In a plugin that provides `weather` (its manifest lists it in `provides`):
 * declare module '../../sdk/capabilities.js' {
 *   interface Capabilities { weather: { today(city: string): Promise<string> } }
 * }
 * ctx.provide('weather', { today: async (city) => `sunny in ${city}` });
 * // Anywhere else: typed, no cast.
 * const text = await ctx.use('weather')?.today('Oslo');
 */
export interface Capabilities {
  /** Carries out an action (the agent plugin). */
  agent: AgentCapability;
  /** Input for a running action, e.g. a button press on a message it sent (the agent plugin). */
  'agent:inbox': AgentInboxCapability;
  /** The model router: chat and embeddings over the configured providers (the agent plugin). */
  llm: LlmCapability;
  /** Short, episodic and long memory (the memory plugin). */
  memory: MemoryCapability;
  /** Fetching with the SSRF guard (the web plugin). */
  web: WebCapability;
  /** Ingest into the document store (the knowledge plugin). */
  knowledge: KnowledgeCapability;
  /** What the running kernel reports about itself (the kernel). */
  'kernel:info': KernelInfoCapability;
  /** The kernel's admin and session decisions (the kernel). */
  'kernel:policy': PolicyCapability;
  /** Requests an admin approves or refuses with a tap in the chat (the system plugin; docs/approvals.md). */
  approvals: ApprovalsCapability;
  /** Where the gateway listens, once it does (the gateway plugin). */
  'gateway:address': GatewayAddress;
  /** Puts an event on the gateway's WebSocket stream, while it serves (the gateway plugin). */
  'gateway:events': GatewayEventsCapability;
  /** The built dashboard the gateway serves at `/` (the dashboard plugin). */
  dashboard: DashboardCapability;
  /** REST routes and WebSocket actions a plugin adds to the gateway (`gateway:routes:<plugin id>`). */
  [routes: `gateway:routes:${string}`]: GatewayRoutesCapability;
  /** One running chat channel (`channel:chatA`, `channel:echo`). */
  [channel: `channel:${string}`]: ChannelCapability;
  /** One model provider (`provider:providerA`). */
  [provider: `provider:${string}`]: ProviderCapability;
}

/**
 * Capability `gateway:address`: where the running gateway listens.
 * @example const url = ctx.use('gateway:address')?.url; // 'http://127.0.0.1:3000'
 */
export interface GatewayAddress {
  host: string;
  port: number;
  url: string;
}

/**
 * A capability name Keel knows (declared here or merged in by a plugin).
 * @example const name: CapabilityName = 'channel:chatA';
 */
export type CapabilityName = keyof Capabilities & string;

/**
 * The implementations of every capability whose name starts with `P` (`unknown` when none is known).
 * @example type C = CapabilitiesWithPrefix<'channel:'>; // ChannelCapability
 */
export type CapabilitiesWithPrefix<P extends string> = {
  [K in CapabilityName]: K extends `${P}${string}` ? Capabilities[K] : never;
}[CapabilityName] extends infer U
  ? [U] extends [never]
    ? unknown
    : U
  : never;

/**
 * The type of the implementation behind a capability name.
 * @example type Llm = CapabilityOf<'llm'>; // LlmCapability
 */
export type CapabilityOf<K extends CapabilityName> = Capabilities[K];
