/**
 * Makes baileys trust the loopback WhatsApp fake (test/fakes/whatsapp-server.ts). Import it for its side effect
 * before (or after — the key is read at handshake time) creating a baileys socket: it replaces
 * `WA_CERT_DETAILS.PUBLIC_KEY`, the root key baileys' Noise handler verifies the server's certificate chain with,
 * by the fake's fixed root public key. `@whiskeysockets/baileys`' index re-exports `lib/Defaults`, so the object
 * patched here is the one `lib/Utils/noise-handler.js` reads.
 *
 * Media: baileys uploads with `node:https` (`https.globalAgent` unless a `fetchAgent` is configured) and downloads with
 * the global `fetch` (undici's global dispatcher unless a `dispatcher` is passed), to WhatsApp's media hosts. This
 * module routes exactly the fake's media hosts (`mmg.whatsapp.net` and the upload hosts its `media_conn` names; port
 * 443) to the fake's HTTPS media server on 127.0.0.1, trusting its self-signed certificate for them; everything else
 * goes through unchanged. Where the fake is, is read at connect time: `globalThis.__keelWaMedia` (set by a fake started
 * in this process), else the env var `KEEL_WA_FAKE_MEDIA` (JSON `{ port, ca, hosts }`, the fake's `mediaEnv()`).
 *
 * Child processes: preload the plain-JS twin, `NODE_OPTIONS=--import=/work/main/test/fakes/whatsapp-trust.mjs`, with
 * `...fake.mediaEnv()` in the env. The two install the routing once per process (a global marker), whichever loads first.
 */
import { EventEmitter } from 'node:events';
import https from 'node:https';
import tls from 'node:tls';
import { WA_CERT_DETAILS } from '@whiskeysockets/baileys';

/** Public half (Curve25519, without the 0x05 type byte) of the fake's fixed root key; same as in whatsapp-trust.mjs. */
export const FAKE_WA_ROOT_PUBLIC_KEY_HEX = 'ea8f4e4179ca2d6e809f5116e8326a10058140541853326d5efc84ac8963553a';

WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(FAKE_WA_ROOT_PUBLIC_KEY_HEX, 'hex');

/** Where the fake's media server listens (127.0.0.1), its certificate (PEM) and the host names it serves. */
interface MediaTarget {
  port: number;
  ca: string;
  hosts: string[];
}

const INSTALLED = Symbol.for('keel.waFakeMediaRouting');
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
const globals = globalThis as unknown as Record<string | symbol, unknown> & { __keelWaMedia?: Partial<MediaTarget> };

function mediaTarget(): MediaTarget | undefined {
  const g = globals.__keelWaMedia;
  if (g && typeof g.port === 'number' && typeof g.ca === 'string') return { hosts: ['mmg.whatsapp.net'], ...g } as MediaTarget;
  const env = process.env.KEEL_WA_FAKE_MEDIA;
  if (!env) return undefined;
  try {
    const v = JSON.parse(env) as Partial<MediaTarget>;
    if (typeof v.port === 'number' && typeof v.ca === 'string') return { hosts: ['mmg.whatsapp.net'], ...v } as MediaTarget;
  } catch {
    // not JSON: route nothing
  }
  return undefined;
}

/** The target if `host:port` is one of the fake's media hosts on the HTTPS port. */
function routed(host: unknown, port: unknown): MediaTarget | undefined {
  if (!host) return undefined;
  if (port !== undefined && port !== null && port !== '' && Number(port) !== 443) return undefined;
  const t = mediaTarget();
  return t?.hosts.includes(String(host).toLowerCase()) ? t : undefined;
}

type ConnOptions = { host?: string; port?: number | string; servername?: string } & Record<string, unknown>;

/** `https.request` through `agent` (baileys' upload): the routed hosts connect to the fake, verified against its cert. */
function routeHttpsAgent(agent: https.Agent): void {
  const a = agent as unknown as {
    getName(options?: ConnOptions): string;
    createConnection(...args: unknown[]): unknown;
  };
  const getName = a.getName;
  const createConnection = a.createConnection;
  // the pool key names the fake's port, so a kept-alive socket to an earlier fake is never reused
  a.getName = function (this: unknown, options: ConnOptions = {}) {
    const name = getName.call(this, options);
    const t = routed(options.host, options.port);
    return t ? `${name}:keel-wa-fake-media:${t.port}` : name;
  };
  a.createConnection = function (this: unknown, ...args: unknown[]) {
    const o = args[0] as ConnOptions | undefined;
    const t = o && typeof o === 'object' ? routed(o.host, o.port) : undefined;
    if (o && t) args[0] = { ...o, host: '127.0.0.1', port: t.port, servername: o.servername || o.host, ca: t.ca };
    return createConnection.apply(this, args);
  };
}

type ConnectCallback = (err: Error | null, socket: tls.TLSSocket | null) => void;

/** A TLS connection to the fake for an undici connector: SNI and certificate check for the media host name. */
function connectToFake(t: MediaTarget, servername: string, callback: ConnectCallback): void {
  let done = false;
  const finish = (err: Error | null, socket: tls.TLSSocket | null) => {
    if (done) return;
    done = true;
    callback(err, err ? null : socket);
  };
  const socket = tls.connect({ host: '127.0.0.1', port: t.port, servername, ca: t.ca, ALPNProtocols: ['http/1.1'] });
  socket.setNoDelay(true);
  socket.once('secureConnect', () => finish(null, socket));
  socket.on('error', (err) => finish(err, null));
}

interface UndiciDispatcher {
  dispatch(opts: { origin?: unknown }, handler: unknown): boolean;
  close(...args: unknown[]): Promise<void>;
  destroy(...args: unknown[]): Promise<void>;
}
type UndiciAgentClass = new (opts: {
  connect: (opts: { hostname: string; servername?: string }, cb: ConnectCallback) => void;
}) => UndiciDispatcher;

/**
 * The global `fetch` (baileys' download): wraps undici's global dispatcher — Node's bundled one, loaded by touching
 * `globalThis.Response` — in one that sends the routed hosts to an Agent (same undici build) whose connector dials the
 * fake, and everything else to the original dispatcher.
 */
function routeFetch(): void {
  void globalThis.Response;
  const original = globals[GLOBAL_DISPATCHER] as UndiciDispatcher | undefined;
  if (!original || typeof original.dispatch !== 'function') return;
  const Agent = original.constructor as UndiciAgentClass;
  let Base: typeof EventEmitter = EventEmitter;
  for (let p = Object.getPrototypeOf(Agent.prototype); p; p = Object.getPrototypeOf(p)) {
    if (p.constructor?.name === 'Dispatcher') {
      Base = p.constructor;
      break;
    }
  }
  let media: { key: string; agent: UndiciDispatcher } | undefined;
  const mediaAgent = (t: MediaTarget) => {
    const key = `${t.port}\n${t.ca}`;
    if (media?.key !== key) {
      media?.agent.close().catch(() => {});
      media = { key, agent: new Agent({ connect: (opts, cb) => connectToFake(t, opts.servername || opts.hostname, cb) }) };
    }
    return media.agent;
  };
  class FakeMediaRouter extends Base {
    dispatch(opts: { origin?: unknown }, handler: unknown): boolean {
      const origin = new URL(String(opts.origin));
      const t = origin.protocol === 'https:' ? routed(origin.hostname, origin.port) : undefined;
      return (t ? mediaAgent(t) : original!).dispatch(opts, handler);
    }
    close(...args: unknown[]): Promise<void> {
      media?.agent.close().catch(() => {});
      return original!.close(...args);
    }
    destroy(...args: unknown[]): Promise<void> {
      media?.agent.destroy().catch(() => {});
      return original!.destroy(...args);
    }
  }
  globals[GLOBAL_DISPATCHER] = new FakeMediaRouter();
}

if (!globals[INSTALLED]) {
  globals[INSTALLED] = true;
  routeHttpsAgent(https.globalAgent);
  routeFetch();
}
