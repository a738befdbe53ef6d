/**
 * WhatsApp (chatB): inbound message → durable action with many contacts writing at once (against the loopback
 * WhatsApp, Signal-encrypted as WhatsApp delivers them), and the outbound send overhead of the kit against a bare
 * baileys `sendMessage` on the same socket to the same fake. Each beside its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/whatsapp.ts`.
 */
import { pathToFileURL } from 'node:url';
import makeWASocket, { makeCacheableSignalKeyStore, useMultiFileAuthState as loadAuth, type WASocket } from '@whiskeysockets/baileys';
import '../test/fakes/whatsapp-trust.js';
import { startWhatsAppFake, type WhatsAppFake } from '../test/fakes/whatsapp-server.js';
import { quietSignal } from '../plugins/chatB/src/quiet-signal.js';
import { chunkMessageId, classifyWhatsApp, sendChunk, type WaChunk } from '../plugins/chatB/src/whatsapp.js';
import { renderChunks } from '../sdk/channel-kit/index.js';
import { rm, tmp } from '../test/helpers.js';
import { type BenchRow, printRows } from './lib.js';
import {
  benchKernel,
  benchOutbox,
  channelRows,
  hostFake,
  InboundClock,
  type InboundFigures,
  inRounds,
  interleaved,
  LONG_REPLY,
  OUTBOUND_ROUNDS,
  type OutboundFigures,
  REPLY_TEXT,
} from './channel-bench.js';

const ACCOUNT = '4915100000001';
const CONTACTS = 20;
const PER_CONTACT = 4;
const silent = { level: 'silent', child: () => silent, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

const contact = (c: number) => `49176200000${String(c).padStart(2, '0')}`;
const message = (i: number) => `message ${Math.floor(i / CONTACTS)} from contact ${i % CONTACTS}`;
/** The i-th message arrives at the device: encrypted by the fake as that contact (not awaited: a burst). */
const push = (wa: WhatsAppFake) => (i: number) => {
  void wa.sendText(contact(i % CONTACTS), message(i));
  return message(i);
};

/** A bare baileys socket on a linked session, open. */
async function bareSocket(url: string, dir: string): Promise<WASocket> {
  const auth = await loadAuth(dir);
  const sock = makeWASocket({
    // Keys cached in memory, as baileys recommends and chatB does.
    auth: { creds: auth.state.creds, keys: makeCacheableSignalKeyStore(auth.state.keys, silent as never) },
    waWebSocketUrl: url,
    logger: silent as never,
    markOnlineOnConnect: false,
    shouldSyncHistoryMessage: () => false,
    emitOwnEvents: false,
  });
  sock.ev.on('creds.update', () => void auth.saveCreds());
  await new Promise<void>((resolve, reject) =>
    sock.ev.on('connection.update', (u) => {
      if (u.connection === 'open') resolve();
      if (u.connection === 'close') reject(u.lastDisconnect?.error ?? new Error('closed'));
    }),
  );
  return sock;
}

/** Every contact writes once before the timed burst (Signal sessions exist), on both sides. */
async function warm(wa: WhatsAppFake, queued: () => number) {
  for (let c = 0; c < CONTACTS; c++) await wa.sendText(contact(c), `hello ${c}`);
  while (queued() < CONTACTS) await new Promise((r) => setTimeout(r, 10));
}

/** Keel: message → chatB (receipt held, ingress record with fsync, receive, durable queue push). */
async function inboundKeel(): Promise<InboundFigures> {
  const wa = await startWhatsAppFake();
  const session = tmp('keel-bench-wa-');
  await wa.linkDevice(session, ACCOUNT);
  const k = await benchKernel('chatB', {
    chatBEnabled: true,
    chatBAutoReplyEnabled: true,
    chatBSessionPath: session,
    chatBWebSocketUrl: wa.url,
  });
  try {
    const clock = new InboundClock().tapQueued(k.kernel);
    while (wa.loggedIn() < 1) await new Promise((r) => setTimeout(r, 20));
    await warm(wa, () => k.kernel.queue.counts().pending);
    return await clock.burst(CONTACTS * PER_CONTACT, push(wa));
  } finally {
    await k.close();
    await wa.close();
    rm(session);
  }
}

/** The peer: a bare baileys socket whose `messages.upsert` pushes each text onto the queue (no record, no dedupe). */
async function inboundBare(): Promise<InboundFigures> {
  const wa = await startWhatsAppFake();
  const session = tmp('keel-bench-wa-');
  await wa.linkDevice(session, ACCOUNT);
  const k = await benchKernel();
  const sock = await bareSocket(wa.url, session);
  try {
    const clock = new InboundClock();
    sock.ev.on('messages.upsert', ({ messages }) => {
      for (const m of messages) {
        const text = m.message?.conversation ?? m.message?.extendedTextMessage?.text ?? '';
        void k.kernel.queue.push({ task: text, source: 'chatB' }).then(() => clock.done(text));
      }
    });
    await warm(wa, () => k.kernel.queue.counts().pending);
    return await clock.burst(CONTACTS * PER_CONTACT, push(wa));
  } finally {
    sock.end(undefined);
    await k.close();
    await wa.close();
    rm(session);
  }
}

/**
 * Outbound: the kit's path (WhatsApp render, ledger, limiter, per-chat order, the message id from the ledger key)
 * against `sendMessage` with the same text and the same kind of id, on one socket; the fake in its own process
 * (`process`, the budget) or in this one (`inline`).
 */
async function outbound(n: number, where: 'process' | 'inline', text = REPLY_TEXT): Promise<OutboundFigures> {
  const session = tmp('keel-bench-wa-out-');
  const fake =
    where === 'process'
      ? await hostFake<{ url: string }>('whatsapp', [session, ACCOUNT])
      : await startWhatsAppFake().then(async (wa) => {
          await wa.linkDevice(session, ACCOUNT);
          return { info: { url: wa.url }, close: () => wa.close() };
        });
  const sock = await bareSocket(fake.info.url, session);
  const kit = benchOutbox('chatB', classifyWhatsApp);
  const rendered = renderChunks(text, 'whatsapp')[0]!;
  const to = (i: number) => `${contact(Math.abs(i) % CONTACTS)}@s.whatsapp.net`;
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const key = `bench:${i}`;
          const chunks: WaChunk[] = renderChunks(text, 'whatsapp').map((t, j) => ({ kind: 'text', text: t, id: chunkMessageId(key, j) }));
          await kit.outbox.deliver(key, to(i), chunks, (c, _j, jid) => sendChunk(sock, jid, c));
        },
        bare: (i) => sock.sendMessage(to(i), { text: rendered }, { messageId: chunkMessageId(`bare:${i}`, 0) }),
      },
      n,
      50,
    );
  } finally {
    kit.close();
    sock.end(undefined);
    await fake.close();
    rm(session);
  }
}

export async function benchWhatsApp(): Promise<BenchRow[]> {
  // libsignal prints every session change with its keys; chatB filters that in its process, the bench does too.
  quietSignal(() => {});
  const keel = await inboundKeel();
  const bare = await inboundBare();
  const out = await inRounds(OUTBOUND_ROUNDS, () => outbound(300, 'process'));
  const outInline = await outbound(300, 'inline');
  const outLong = await outbound(300, 'process', LONG_REPLY);
  return channelRows({
    channel: 'chatB',
    load: `${CONTACTS} contacts x ${PER_CONTACT} at once`,
    inboundPeer: 'bare baileys socket: messages.upsert → queue.push (no record before the receipt, no dedupe)',
    keel,
    bare,
    outboundWhat: 'WhatsApp render + ledger + limiter + per-chat order + ledger-derived message id',
    outboundPeer: 'bare baileys sendMessage on the same socket, same fake',
    out,
    outInline,
    outLong,
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchWhatsApp());
  process.exit(0);
}
