/**
 * `defineChannel`: the one way to write a chat channel plugin. The kit owns the lifecycle every channel shares, in
 * one order: the channel's store, the send path and the delivery ledger (createChannelRuntime), the durable ingress
 * and its recovery, the supervised connection (lock, stall watchdog, backoff, fatal errors), unsent replies resumed at
 * each connection, the `channel:<name>` capability, status and health, the stopped channel offered while it is not
 * configured, and the order things stop in. A platform supplies only its adapter: how to connect and what arrives
 * (`connection.connect`, recording through `kit.record`), what a recorded message means (`receive`), how a message
 * becomes chunks and how one chunk is sent (`chunks`, `sendChunk`), how its errors are classified (`classify`), and
 * optionally how its history is read since a cursor (the kit's `CatchUp`, started and stopped with the channel).
 *
 * Prose and a complete example: docs/channels.md, examples/plugins/echo-channel/.
 *
 * @example
 * export default defineChannel({
 *   manifest,
 *   notConfigured: (ctx) => (setting(ctx, 'chatAToken', '') ? undefined : 'set chatAToken'),
 *   adapter: async (kit) => (await import('./src/live.js')).telegram(kit),
 * });
 */
import { offerUnconfigured, reportIgnored, type ChannelCapability, type ChannelStatus } from '../channel.js';
import type { PluginContext, PluginDefinition, PluginInstance } from '../plugin.js';
import type { PluginManifest } from '../types.js';
import type { Json } from '../types.js';
import type { IngressCursor, IngressItem, IngressOptions, IngressTurn, Ingress } from './ingress.js';
import type { ConnectionLock } from './lease.js';
import type { ChannelRuntime, ChannelRuntimeOptions } from './runtime.js';
import type { ChannelStore } from './store.js';
import type { ConnectionHooks, ConnectionSupervisor, SupervisorOptions } from './supervisor.js';

/** What the kit gives an adapter: the parts it built, and the few calls a platform makes into it. */
export interface ChannelKit<P> {
  readonly ctx: PluginContext;
  /** The channel's name (`chatA`): its actions' `source`, its store's folder, its capability `channel:<name>`. */
  readonly name: string;
  /** The channel's store (dedupe, ledger, cursors, the platform's own key/values): open from the start. */
  readonly store: ChannelStore;
  /**
   * The send path, replies, progress, `handle`/`edited`/`deleted` of inbound messages, the outbox and the signal
   * aborted at stop. Available once the adapter is returned (use it inside callbacks, not while building the adapter).
   */
  readonly runtime: ChannelRuntime;
  /** The durable ingress (also once the adapter is returned): `payload(messageId)` of a recorded message. */
  readonly ingress: Ingress<P>;
  /** The supervised connection (once the adapter is returned; undefined for a channel without one). */
  readonly connection: ConnectionSupervisor | undefined;
  /**
   * Records messages that arrived (with the cursors that acknowledge them, in one transaction): only after this
   * returns may the platform be told they arrived. A redelivery is dropped here and reported as ignored
   * (`duplicate`) for the action timelines. Returns the messages that were new.
   */
  record(items: IngressItem<P>[], cursor?: IngressCursor | IngressCursor[], opts?: { durability?: 'FULL' | 'NORMAL' }): IngressItem<P>[];
  /** The same for one message, batched with those arriving in the same turn of the event loop. */
  recordSoon(item: IngressItem<P>, cursor?: IngressCursor | IngressCursor[], opts?: { durability?: 'FULL' | 'NORMAL' }): Promise<boolean>;
  /** The channel's status: the connection's, with the adapter's own fields. */
  status(): ChannelStatus;
}

/** What a platform supplies. Everything about sending is `createChannelRuntime`'s options (runtime.ts). */
export interface ChannelAdapter<P, C extends Json> extends Omit<ChannelRuntimeOptions<C>, 'ctx' | 'name' | 'lock' | 'store'> {
  /**
   * The connection's lock: `connectionLock(ctx, name, credential)` (a Redis lease that fences every send when the
   * queue is shared, else a file lock), or an `OwnerLock`. Only its holder connects.
   */
  lock?: ConnectionLock;
  /**
   * The connection, supervised (SupervisorOptions without name, log, lock). `connected(who)` also resumes what a
   * crash left unsent. None: the channel is up while the plugin runs (gateway-chat).
   */
  connection?: Omit<SupervisorOptions, 'name' | 'log' | 'lock'> & {
    /**
     * Whether the channel connects now (default: always), for a connection a setting switches off (email's
     * `emailEnabled`) while sending still works. Off at start: the connection is not started and what a crash left
     * unsent is resumed at once. While off, the status says `enabled: false, connected: false, state: 'stopped'`.
     * The adapter starts and stops `kit.connection` itself when the setting changes.
     */
    enabled?(): boolean;
  };
  /** A recorded message: what it means (usually `kit.runtime.handle(inbound, ...)`); returns the ingress outcome. */
  receive(item: IngressItem<P>, turn: IngressTurn): Promise<string | void>;
  /** Ingress retry settings (defaults: 5 attempts, from 500 ms). */
  ingress?: Pick<IngressOptions<P>, 'maxAttempts' | 'retryBaseMs'>;
  /** The adapter's own status fields (bot name, account), beside the connection's. */
  status?(): Partial<ChannelStatus>;
  /**
   * The plugin's health, when the connection's state is not what decides it (email: a refused IMAP login must not
   * quarantine the plugin, its sends still work). Default: not ok while the connection has failed.
   */
  health?(): { ok: boolean; message: string };
  /** A reply other than the runtime's (e.g. to remember buttons it carried). */
  reply?: ChannelCapability['reply'];
  react?: ChannelCapability['react'];
  /**
   * Progress other than the runtime's typing and status message: for a channel whose clients take progress as
   * events of their own (gateway-chat's `chat.progress`). Without it, `showProgress` through `transport`.
   */
  progress?: ChannelCapability['progress'];
  /** More fields on the capability (getters stay getters): what the platform's users of it need (a URL, a client). */
  expose?: object;
  /**
   * Once the capability is provided and before the connection starts: skills, catch-up rounds, timers (awaited: a
   * channel without a `connection` may open its listener here).
   */
  start?(): void | Promise<void>;
  /**
   * When the channel stops, before its connection does (the connection still up): e.g. a catch-up that notes, at a
   * clean stop, when the channel was last connected (AliveMark).
   */
  stopping?(): Promise<void>;
  /** After the connection stopped, before the ingress and the store close (catch-up rounds, platform clients). */
  stop?(): Promise<void>;
}

/** A running channel, as the plugin host wants it. */
export interface RunningChannel extends PluginInstance {
  stop(): Promise<void>;
  health(): { ok: boolean; message: string };
}

/**
 * Builds and starts a channel from its adapter (`setup` gets the kit, returns the adapter). The store is open while
 * `setup` runs; the runtime, ingress and connection exist once it has returned.
 */
export async function startChannel<P, C extends Json>(
  ctx: PluginContext,
  name: string,
  setup: (kit: ChannelKit<P>) => ChannelAdapter<P, C> | Promise<ChannelAdapter<P, C>>,
): Promise<RunningChannel & { kit: ChannelKit<P> }> {
  // Loaded here, not at import: an unconfigured channel never loads SQLite or the Markdown parser.
  const [{ ChannelStore }, { createChannelRuntime }, { Ingress }, { ConnectionSupervisor }] = await Promise.all([
    import('./store.js'),
    import('./runtime.js'),
    import('./ingress.js'),
    import('./supervisor.js'),
  ]);
  const store = ChannelStore.open(ctx.home, name);
  let rt: ChannelRuntime | undefined;
  let ingress: Ingress<P> | undefined;
  let supervisor: ConnectionSupervisor | undefined;
  let adapter: ChannelAdapter<P, C> | undefined;
  const ready = <T>(x: T | undefined, what: string): T => {
    if (x === undefined) throw new Error(`${name}: the kit's ${what} exists once the adapter is returned (use it in callbacks).`);
    return x;
  };
  const on = () => adapter?.connection?.enabled?.() !== false;
  const status = (): ChannelStatus => ({
    ...(!supervisor
      ? { enabled: true, connected: true, state: 'connected' as const }
      : on()
        ? { enabled: true, ...supervisor.status() }
        : { enabled: false, connected: false, state: 'stopped' as const }),
    ...(adapter?.status?.() ?? {}),
  });
  const kit: ChannelKit<P> = {
    ctx,
    name,
    store,
    get runtime() {
      return ready(rt, 'runtime');
    },
    get ingress() {
      return ready(ingress, 'ingress');
    },
    get connection() {
      return supervisor;
    },
    record(items, cursor, opts) {
      const fresh = ready(ingress, 'ingress').record(items, cursor, opts);
      if (fresh.length < items.length) {
        const kept = new Set(fresh);
        for (const it of items)
          if (!kept.has(it)) reportIgnored(ctx, { channel: name, messageId: it.messageId, chatId: it.chatId }, 'duplicate');
      }
      if (fresh.length) supervisor?.inbound();
      return fresh;
    },
    async recordSoon(item, cursor, opts) {
      const fresh = await ready(ingress, 'ingress').recordSoon(item, cursor, opts);
      if (fresh) supervisor?.inbound();
      else reportIgnored(ctx, { channel: name, messageId: item.messageId, chatId: item.chatId }, 'duplicate');
      return fresh;
    },
    status,
  };
  try {
    adapter = await setup(kit);
    const a = adapter;
    const {
      lock,
      connection,
      receive,
      ingress: ingressOptions,
      status: _s,
      health: _h,
      reply,
      react,
      progress,
      expose,
      start,
      stopping: _stopping,
      stop,
      ...sending
    } = a;
    rt = createChannelRuntime<C>({ ...sending, ctx, name, store, ...(lock ? { lock } : {}) });
    const runtime = rt;
    ingress = new Ingress<P>(store, { ...ingressOptions, log: ctx.log, handle: (item, turn) => receive(item, turn) });
    if (connection) {
      const { enabled: _e, ...supervised } = connection;
      supervisor = new ConnectionSupervisor({
        ...supervised,
        name,
        log: ctx.log,
        ...(lock ? { lock } : {}),
        connect: (signal, hooks) =>
          connection.connect(signal, {
            live: () => hooks.live(),
            connected: (who) => {
              hooks.connected(who);
              // What a crash left unconfirmed goes out now, and status messages a killed process left are ended.
              runtime.resume();
            },
          } satisfies ConnectionHooks),
      });
    }
    if (!supervisor || !on()) runtime.resume();
    const capability = runtime.capability({ status, ...(reply ? { reply } : {}), ...(react ? { react } : {}) });
    if (progress) capability.progress = progress;
    if (expose) Object.defineProperties(capability, Object.getOwnPropertyDescriptors(expose));
    ctx.provide(`channel:${name}`, capability);
    await start?.();
    ingress.recover();
    if (on()) supervisor?.start();
  } catch (e) {
    // Nothing of a channel that failed to start is left running (timers, hooks, the store).
    if (rt) await rt.stop(async () => await supervisor?.stop(), ingress).catch(() => undefined);
    else store.close();
    throw e;
  }
  const runtime = rt;
  const ing = ingress;
  return {
    kit,
    stop: () =>
      runtime.stop(async () => {
        await adapter?.stopping?.();
        await supervisor?.stop();
        await adapter?.stop?.();
      }, ing),
    health: adapter.health ? () => adapter!.health!() : runtime.health(status),
  };
}

/** A channel plugin: its manifest, when it is not configured, and its adapter (see the top of this file). */
export interface ChannelDefinition<M extends PluginManifest, P, C extends Json> {
  manifest: M;
  /** The channel's name; default: the manifest's id. */
  name?: string;
  /**
   * Why the channel cannot start (the key to set), or undefined when it is configured. While it is not, the plugin
   * offers a stopped channel and `skills` that say this, without loading the platform's library.
   */
  notConfigured?(ctx: PluginContext<M>): string | undefined;
  /** The channel's skills, offered (failing with `notConfigured`'s reason) while it is not configured. */
  skills?: readonly string[];
  /** The adapter; import the platform's module here, so that it loads only once the channel is configured. */
  adapter(kit: ChannelKit<P>, ctx: PluginContext<M>): ChannelAdapter<P, C> | Promise<ChannelAdapter<P, C>>;
  commands?: PluginDefinition<M>['commands'];
}

/**
 * A channel plugin from its adapter.
 * @example export default defineChannel({ manifest, adapter: (kit) => echoAdapter(kit) });
 */
export function defineChannel<M extends PluginManifest, P, C extends Json>(def: ChannelDefinition<M, P, C>): PluginDefinition<M> {
  const name = def.name ?? def.manifest.id;
  return {
    manifest: def.manifest,
    ...(def.commands ? { commands: def.commands } : {}),
    async setup(ctx) {
      const why = def.notConfigured?.(ctx);
      if (why !== undefined) return offerUnconfigured(ctx, name, why, def.skills ?? []);
      return startChannel<P, C>(ctx, name, (kit) => def.adapter(kit, ctx));
    },
  };
}
