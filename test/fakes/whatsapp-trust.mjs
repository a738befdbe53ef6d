/**
 * Makes baileys trust the loopback WhatsApp fake (test/fakes/whatsapp-server.ts): WhatsApp's Noise handshake ends
 * with a certificate chain the client verifies against WhatsApp's root key (`WA_CERT_DETAILS.PUBLIC_KEY`), which the
 * fake cannot sign with. Importing this module (side effect only) replaces that key, in the one baileys module
 * instance the process uses, with the fake's fixed root public key.
 *
 * Media: baileys uploads media with `node:https` (`https.request` with `https.globalAgent` unless a `fetchAgent` is
 * configured) and downloads it with the global `fetch` (undici's global dispatcher unless a `dispatcher` is passed),
 * both to WhatsApp's media hosts (`mmg.whatsapp.net`, and the upload hosts the server names in `media_conn`). This
 * module routes exactly those hosts (port 443) to the fake's HTTPS media server on 127.0.0.1 and trusts its self-signed
 * certificate for them; every other request goes through unchanged. Where the fake is, is read at connect time:
 * `globalThis.__keelWaMedia` (set by a fake started in this process), else the env var `KEEL_WA_FAKE_MEDIA` (JSON
 * `{ port, ca, hosts }`, see the fake's `mediaEnv()`; for child processes). Neither set: nothing is routed.
 *
 * Plain JS so it can be a Node preload for child processes:
 *   NODE_OPTIONS=--import=/work/main/test/fakes/whatsapp-trust.mjs KEEL_WA_FAKE_MEDIA='{…}' node dist/cli.js …
 * `@whiskeysockets/baileys` resolves from the repository root (the node_modules above this file).
 * test/fakes/whatsapp-trust.ts does the same for TypeScript importers (keep the two in step; whichever loads first
 * installs the routing, the other sees the marker and leaves it); keep the key in step with FAKE_ROOT_PRIVATE_KEY in
 * whatsapp-server.ts.
 */
import { EventEmitter } from 'node:events';
import https from 'node:https';
import tls from 'node:tls';
import { WA_CERT_DETAILS } from '@whiskeysockets/baileys';

/** Public half (Curve25519, without the 0x05 type byte) of the fake's fixed root key. */
export const FAKE_WA_ROOT_PUBLIC_KEY_HEX = 'ea8f4e4179ca2d6e809f5116e8326a10058140541853326d5efc84ac8963553a';

WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(FAKE_WA_ROOT_PUBLIC_KEY_HEX, 'hex');

const INSTALLED = Symbol.for('keel.waFakeMediaRouting');
const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

/** `{ port, ca, hosts }` of the fake media server to use now, or undefined. */
function mediaTarget() {
  const g = globalThis.__keelWaMedia;
  if (g && typeof g.port === 'number' && typeof g.ca === 'string') return { hosts: ['mmg.whatsapp.net'], ...g };
  const env = process.env.KEEL_WA_FAKE_MEDIA;
  if (!env) return undefined;
  try {
    const v = JSON.parse(env);
    if (typeof v.port === 'number' && typeof v.ca === 'string') return { hosts: ['mmg.whatsapp.net'], ...v };
  } catch {
    // not JSON: route nothing
  }
  return undefined;
}

/** The target if `host:port` is one of the fake's media hosts on the HTTPS port. */
function routed(host, port) {
  if (!host) return undefined;
  if (port !== undefined && port !== null && port !== '' && Number(port) !== 443) return undefined;
  const t = mediaTarget();
  return t?.hosts.includes(String(host).toLowerCase()) ? t : undefined;
}

/** `https.request` through `agent` (baileys' upload): the routed hosts connect to the fake, verified against its cert. */
function routeHttpsAgent(agent) {
  const createConnection = agent.createConnection;
  const getName = agent.getName;
  // the pool key names the fake's port, so a kept-alive socket to an earlier fake is never reused
  agent.getName = function (options = {}) {
    const name = getName.call(this, options);
    const t = routed(options.host, options.port);
    return t ? `${name}:keel-wa-fake-media:${t.port}` : name;
  };
  agent.createConnection = function (...args) {
    const o = args[0];
    const t = o && typeof o === 'object' ? routed(o.host, o.port) : undefined;
    if (t) args[0] = { ...o, host: '127.0.0.1', port: t.port, servername: o.servername || o.host, ca: t.ca };
    return createConnection.apply(this, args);
  };
}

/** A TLS connection to the fake for an undici connector: SNI and certificate check for the media host name. */
function connectToFake(t, servername, callback) {
  let done = false;
  const finish = (err, socket) => {
    if (done) return;
    done = true;
    err ? callback(err, null) : callback(null, socket);
  };
  const socket = tls.connect({ host: '127.0.0.1', port: t.port, servername, ca: t.ca, ALPNProtocols: ['http/1.1'] });
  socket.setNoDelay(true);
  socket.once('secureConnect', () => finish(null, socket));
  socket.on('error', (err) => finish(err));
}

/**
 * The global `fetch` (baileys' download): wraps undici's global dispatcher — Node's bundled one, loaded by touching
 * `globalThis.Response` — in one that sends the routed hosts to an Agent (same undici build) whose connector dials the
 * fake, and everything else to the original dispatcher.
 */
function routeFetch() {
  void globalThis.Response;
  const original = globalThis[GLOBAL_DISPATCHER];
  if (!original || typeof original.dispatch !== 'function') return;
  const Agent = original.constructor;
  let Base = EventEmitter;
  for (let p = Object.getPrototypeOf(Agent.prototype); p; p = Object.getPrototypeOf(p)) {
    if (p.constructor?.name === 'Dispatcher') {
      Base = p.constructor;
      break;
    }
  }
  let media; // { key, agent } for the current fake
  const mediaAgent = (t) => {
    const key = `${t.port}\n${t.ca}`;
    if (media?.key !== key) {
      media?.agent.close().catch(() => {});
      media = { key, agent: new Agent({ connect: (opts, cb) => connectToFake(t, opts.servername || opts.hostname, cb) }) };
    }
    return media.agent;
  };
  class FakeMediaRouter extends Base {
    dispatch(opts, handler) {
      const origin = new URL(String(opts.origin));
      const t = origin.protocol === 'https:' ? routed(origin.hostname, origin.port) : undefined;
      return (t ? mediaAgent(t) : original).dispatch(opts, handler);
    }
    close(...args) {
      media?.agent.close().catch(() => {});
      return original.close(...args);
    }
    destroy(...args) {
      media?.agent.destroy().catch(() => {});
      return original.destroy(...args);
    }
  }
  globalThis[GLOBAL_DISPATCHER] = new FakeMediaRouter();
}

if (!globalThis[INSTALLED]) {
  globalThis[INSTALLED] = true;
  routeHttpsAgent(https.globalAgent);
  routeFetch();
}
