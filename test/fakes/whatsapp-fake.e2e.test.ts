/**
 * The WhatsApp fake (test/fakes/whatsapp-server.ts) driven by the real baileys client: if these pass, the fake speaks
 * the protocol baileys implements (Noise handshake, binary nodes, Signal sessions, login/pairing, offline queue).
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import './whatsapp-trust.js';
import makeWASocket, {
  type ConnectionState,
  DisconnectReason,
  downloadContentFromMessage,
  downloadMediaMessage,
  normalizeMessageContent,
  useMultiFileAuthState,
  type WAMessage,
  type WAMessageUpdate,
  type WASocket,
} from '@whiskeysockets/baileys';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startWhatsAppFake, type WhatsAppFake } from './whatsapp-server.js';

const logger = pino({ level: process.env.WA_FAKE_LOG ?? 'silent' });
const CONTACT = '4917612345678';
const CONTACT_JID = `${CONTACT}@s.whatsapp.net`;

// libsignal logs every session it closes / replaces on the console (both the client's and the fake's side), and every
// message it cannot decrypt (the retry tests provoke that on purpose)
const quiet =
  /^(Closing session|Closing open session|Closing stale open session|Removing old closed session|Session already closed|Decrypted message with closed session|Failed to decrypt message with any known session|Session error:)/;
const originals = { log: console.log, info: console.info, warn: console.warn, error: console.error };
beforeAll(() => {
  for (const k of ['log', 'info', 'warn', 'error'] as const) {
    console[k] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && quiet.test(args[0])) return;
      originals[k](...args);
    };
  }
});
afterAll(() => Object.assign(console, originals));

let fake: WhatsAppFake;
let dirs: string[] = [];
let socks: WASocket[] = [];

beforeEach(async () => {
  fake = await startWhatsAppFake();
});
afterEach(async () => {
  for (const s of socks) s.end(undefined);
  socks = [];
  await fake.close();
  await new Promise((r) => setTimeout(r, 100)); // let baileys finish writing its key files
  for (const d of dirs) await rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  dirs = [];
});

/** Runs an ES module script in a child Node process that preloads whatsapp-trust.mjs (as `keel run` children do); its stdout. */
function runTrusting(script: string, env: Record<string, string>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      {
        cwd: join(import.meta.dirname, '..', '..'),
        env: { ...process.env, NODE_OPTIONS: `--import=${join(import.meta.dirname, 'whatsapp-trust.mjs')}`, ...env },
        timeout: 12_000,
      },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'wa-fake-'));
  dirs.push(d);
  return d;
}

interface Client {
  sock: WASocket;
  updates: Array<Partial<ConnectionState>>;
  upserts: Array<{ type: string; msg: WAMessage }>;
  edits: WAMessageUpdate[];
  until(pred: (u: Partial<ConnectionState>) => boolean, ms?: number): Promise<Partial<ConnectionState>>;
  message(pred: (m: { type: string; msg: WAMessage }) => boolean, ms?: number): Promise<{ type: string; msg: WAMessage }>;
}

async function connect(dir: string, extra: Partial<Parameters<typeof makeWASocket>[0]> = {}): Promise<Client> {
  // biome-ignore lint/correctness/useHookAtTopLevel: baileys' auth-state loader, not a React hook
  const { state, saveCreds } = await useMultiFileAuthState(dir);
  const sock = makeWASocket({
    auth: state,
    waWebSocketUrl: fake.url,
    logger,
    markOnlineOnConnect: false,
    connectTimeoutMs: 10_000,
    keepAliveIntervalMs: 5_000,
    ...extra,
  });
  socks.push(sock);
  const updates: Array<Partial<ConnectionState>> = [];
  const upserts: Array<{ type: string; msg: WAMessage }> = [];
  const edits: WAMessageUpdate[] = [];
  const listeners: Array<() => void> = [];
  const poke = () => {
    for (const l of listeners) l();
  };
  sock.ev.on('creds.update', saveCreds);
  sock.ev.on('connection.update', (u) => {
    updates.push(u);
    poke();
  });
  sock.ev.on('messages.upsert', ({ messages, type }) => {
    for (const msg of messages) upserts.push({ type, msg });
    poke();
  });
  sock.ev.on('messages.update', (list) => {
    edits.push(...list);
    poke();
  });
  const waitOn = <T>(find: () => T | undefined, ms: number, what: string) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const hit = find();
        if (hit !== undefined) {
          clearTimeout(timer);
          listeners.splice(listeners.indexOf(check), 1);
          resolve(hit);
        }
      };
      const timer = setTimeout(() => {
        listeners.splice(listeners.indexOf(check), 1);
        reject(new Error(`timed out waiting for ${what}; updates: ${JSON.stringify(updates)}; debug: ${fake.debug().join(' | ')}`));
      }, ms);
      listeners.push(check);
      check();
    });
  return {
    sock,
    updates,
    upserts,
    edits,
    until: (pred, ms = 10_000) => waitOn(() => updates.find(pred), ms, 'connection update'),
    message: (pred, ms = 10_000) => waitOn(() => upserts.find(pred), ms, 'message'),
  };
}

const statusOf = (u: Partial<ConnectionState>) =>
  (u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined)?.output?.statusCode;

describe('WhatsApp fake with the real baileys client', () => {
  it('a linked session logs in and reaches connection: open', async () => {
    const dir = await tempDir();
    const { jid } = await fake.linkDevice(dir);
    expect(jid).toMatch(/^4915123456789:\d+@s\.whatsapp\.net$/);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    expect(c.sock.user?.id).toBe(jid);
    await c.until((u) => u.receivedPendingNotifications === true);
    expect(fake.loggedIn()).toBe(1);
  });

  it('a contact text arrives as messages.upsert notify and is delivered once', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const id = await fake.sendText(CONTACT, 'hello bot', { pushName: 'Alice' });
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.type).toBe('notify');
    expect(got.msg.key.remoteJid).toBe(CONTACT_JID);
    expect(got.msg.key.fromMe).toBe(false);
    expect(got.msg.pushName).toBe('Alice');
    expect(got.msg.message?.conversation).toBe('hello bot');
    await waitUntil(() => fake.acked(id));
    expect(fake.deliveries(id)).toBe(1);
    // a second message uses the established session
    const id2 = await fake.sendText(CONTACT, 'second', { pushName: 'Alice' });
    const got2 = await c.message((m) => m.msg.key.id === id2);
    expect(got2.msg.message?.conversation).toBe('second');
  });

  it('outbound texts, replies and reactions reach the fake decrypted', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const first = await c.sock.sendMessage(CONTACT_JID, { text: 'hi there' });
    const s1 = await fake.waitFor((m) => m.id === first?.key.id);
    expect(s1.text).toBe('hi there');
    expect(s1.toPhone).toBe(CONTACT);
    expect(s1.encType).toBe('pkmsg');
    const second = await c.sock.sendMessage(CONTACT_JID, { text: 'again' });
    const s2 = await fake.waitFor((m) => m.id === second?.key.id);
    expect(s2.text).toBe('again');
    // Signal: the sender keeps sending pkmsg until it hears back from the recipient
    expect(s2.encType).toBe('pkmsg');
    // reply to an inbound message
    const inId = await fake.sendText(CONTACT, 'question?');
    const inbound = await c.message((m) => m.msg.key.id === inId);
    const reply = await c.sock.sendMessage(CONTACT_JID, { text: 'answer' }, { quoted: inbound.msg });
    const s3 = await fake.waitFor((m) => m.id === reply?.key.id);
    expect(s3.text).toBe('answer');
    expect(s3.quotedId).toBe(inId);
    expect(s3.encType).toBe('msg'); // the contact wrote back: the session is established
    const react = await c.sock.sendMessage(CONTACT_JID, { react: { text: '👍', key: inbound.msg.key } });
    const s4 = await fake.waitFor((m) => m.id === react?.key.id);
    expect(s4.reaction?.text).toBe('👍');
    expect(s4.reaction?.key.id).toBe(inId);
    // chatstates and read receipts
    await c.sock.sendPresenceUpdate('composing', CONTACT_JID);
    await c.sock.readMessages([inbound.msg.key]);
    await waitUntil(() => fake.chatstates().some((s) => s.state === 'composing' && s.to === CONTACT_JID));
    await waitUntil(() => fake.reads().includes(inId));
    expect(fake.debug().filter((d) => d.includes('decrypt'))).toEqual([]);
  });

  it('LID-addressed inbound messages (from @lid with sender_pn) arrive with the phone JID as remoteJidAlt', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const id = await fake.sendText(CONTACT, 'via lid', { addressing: 'lid', pushName: 'Alice' });
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.msg.key.remoteJid).toBe(fake.lidOf(CONTACT));
    expect(got.msg.key.remoteJidAlt).toBe(CONTACT_JID);
    expect(got.msg.message?.conversation).toBe('via lid');
    const out = await c.sock.sendMessage(got.msg.key.remoteJid!, { text: 'back via lid' });
    const s = await fake.waitFor((m) => m.id === out?.key.id);
    expect(s.to).toBe(fake.lidOf(CONTACT));
    expect(s.toPhone).toBe(CONTACT);
    expect(s.text).toBe('back via lid');
  });

  it('a child process preloading whatsapp-trust.mjs trusts the fake (connection: open)', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const script = `
      import makeWASocket, { useMultiFileAuthState } from '@whiskeysockets/baileys';
      const { state } = await useMultiFileAuthState(process.env.WA_DIR);
      const logger = { level: 'silent', child() { return logger; }, trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {} };
      const sock = makeWASocket({ auth: state, waWebSocketUrl: process.env.WA_URL, logger, markOnlineOnConnect: false });
      sock.ev.on('connection.update', (u) => {
        if (u.connection === 'open') { console.log('OPEN'); process.exit(0); }
        if (u.connection === 'close') { console.log('CLOSE', u.lastDisconnect?.error?.message); process.exit(1); }
      });`;
    const out = await runTrusting(script, { WA_DIR: dir, WA_URL: fake.url });
    expect(out).toContain('OPEN');
  });

  it('inbound replies, mentions and edits carry their context', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const sent = await c.sock.sendMessage(CONTACT_JID, { text: 'what is 2+2?' });
    const replyId = await fake.sendText(CONTACT, '4', {
      quoted: { id: sent!.key.id!, participant: c.sock.user!.id.replace(/:\d+@/, '@'), text: 'what is 2+2?' },
      mentions: [c.sock.user!.id.replace(/:\d+@/, '@')],
    });
    const reply = await c.message((m) => m.msg.key.id === replyId);
    const ext = reply.msg.message?.extendedTextMessage;
    expect(ext?.text).toBe('4');
    expect(ext?.contextInfo?.stanzaId).toBe(sent!.key.id);
    expect(ext?.contextInfo?.quotedMessage?.conversation).toBe('what is 2+2?');
    expect(ext?.contextInfo?.mentionedJid).toEqual(['4915123456789@s.whatsapp.net']);
    const editId = await fake.sendEdit(CONTACT, replyId, 'four');
    await c.message((m) => m.msg.key.id === editId);
    const upd = await new Promise<WAMessageUpdate>((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => {
        const hit = c.edits.find((e) => e.key.id === replyId && e.update.message);
        if (hit) return resolve(hit);
        if (Date.now() - t0 > 5000) return reject(new Error('no edit update'));
        setTimeout(tick, 20);
      };
      tick();
    });
    expect(upd.update.message?.editedMessage?.message?.conversation).toBe('four');
  });

  it('a delivery lost with the connection is re-delivered (offline, type append) on the next login', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    fake.loseNextDelivery();
    const id = await fake.sendText(CONTACT, 'lost in transit', { pushName: 'Alice' });
    await c.until((u) => u.connection === 'close');
    expect(fake.deliveries(id)).toBe(1);
    expect(fake.acked(id)).toBe(false);
    // while the device is offline, a second message waits in the queue
    const queued = await fake.sendText(CONTACT, 'while you were away');
    expect(fake.deliveries(queued)).toBe(0);
    const c2 = await connect(dir);
    const got = await c2.message((m) => m.msg.key.id === id);
    expect(got.type).toBe('append');
    expect(got.msg.message?.conversation).toBe('lost in transit');
    const got2 = await c2.message((m) => m.msg.key.id === queued);
    expect(got2.msg.message?.conversation).toBe('while you were away');
    await waitUntil(() => fake.acked(id) && fake.acked(queued));
    expect(fake.deliveries(id)).toBe(2);
    expect(fake.deliveries(queued)).toBe(1);
    expect(c2.upserts.filter((m) => m.msg.key.id === id)).toHaveLength(1);
  });

  it('a receipt lost with the device: the redelivered msg fails to decrypt, the retry receipt is answered with a new pkmsg', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    // a session in both directions, so the contact's next message is a `msg` (a replayed pkmsg is nacked, see below)
    const hello = await fake.sendText(CONTACT, 'hello');
    await c.message((m) => m.msg.key.id === hello);
    const out = await c.sock.sendMessage(CONTACT_JID, { text: 'hi' });
    await fake.waitFor((m) => m.id === out?.key.id);
    fake.loseNextReceipt();
    const id = await fake.sendText(CONTACT, 'are you there?', { pushName: 'Alice' });
    const first = await c.message((m) => m.msg.key.id === id);
    expect(first.msg.message?.conversation).toBe('are you there?');
    await c.until((u) => u.connection === 'close'); // killed right after decrypting, before its receipt left
    expect(fake.acked(id)).toBe(false);
    expect(fake.deliveries(id)).toBe(1);
    // the restarted device gets the same ciphertext again, cannot decrypt it, asks for a retry; the contact resends
    const c2 = await connect(dir);
    const again = await c2.message((m) => m.msg.key.id === id && !!m.msg.message);
    expect(again.type).toBe('notify');
    expect(again.msg.message?.conversation).toBe('are you there?');
    expect(again.msg.key.remoteJid).toBe(CONTACT_JID);
    await waitUntil(() => fake.acked(id));
    const texts = [...c.upserts, ...c2.upserts].filter((m) => m.msg.key.id === id && m.msg.message).map((m) => m.msg.message?.conversation);
    expect(texts).toEqual(['are you there?', 'are you there?']);
    // the failed attempt surfaced as a CIPHERTEXT stub (what baileys emits before the retry arrives)
    expect(c2.upserts.some((m) => m.msg.key.id === id && m.msg.messageStubType === 2)).toBe(true);
    expect(fake.deliveries(id)).toBe(3); // first delivery, offline redelivery, retry answer
    expect(fake.retries(id)).toBe(1);
    expect(fake.nacks(id)).toEqual(['500']);
    // the session the retry built works for what follows
    const next = await fake.sendText(CONTACT, 'still there');
    expect((await c2.message((m) => m.msg.key.id === next)).msg.message?.conversation).toBe('still there');
  });

  it('a group message whose retry answer also fails (device lost its prekeys): retry 2 carries <keys>, which the fake uses', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const group = '120363012345678902@g.us';
    fake.setGroup(group, { subject: 'Team', participants: [CONTACT] });
    const hello = await fake.sendText(CONTACT, 'hello');
    await c.message((m) => m.msg.key.id === hello);
    const out = await c.sock.sendMessage(CONTACT_JID, { text: 'hi' });
    await fake.waitFor((m) => m.id === out?.key.id);
    fake.loseNextReceipt();
    const id = await fake.sendText(CONTACT, 'team news', { group });
    await c.message((m) => m.msg.key.id === id);
    await c.until((u) => u.connection === 'close');
    // the device lost every one-time prekey the server still hands out: the first retry answer cannot be decrypted
    for (const f of await readdir(dir)) if (/^pre-key-\d+\.json$/.test(f)) await rm(join(dir, f));
    const c2 = await connect(dir);
    const again = await c2.message((m) => m.msg.key.id === id && !!m.msg.message);
    expect(again.msg.key.remoteJid).toBe(group);
    expect(again.msg.key.participant).toBe(CONTACT_JID);
    expect(again.msg.message?.conversation).toBe('team news');
    await waitUntil(() => fake.acked(id));
    expect(fake.retries(id)).toBe(2);
    expect(fake.deliveries(id)).toBe(4);
    expect(fake.debug()).toContain(`retry 2 for ${id} answered (keys from the receipt)`);
  });

  it('a replayed pkmsg (receipt lost on a fresh session) is nacked 487 by baileys, and the fake stops delivering it', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    fake.loseNextReceipt();
    const id = await fake.sendText(CONTACT, 'first contact');
    await c.message((m) => m.msg.key.id === id);
    await c.until((u) => u.connection === 'close');
    const c2 = await connect(dir);
    await c2.until((u) => u.receivedPendingNotifications === true);
    await waitUntil(() => fake.nacks(id).length > 0);
    expect(fake.nacks(id)).toEqual(['487']); // libsignal: "Key used already or never filled" — no retry receipt
    expect(fake.retries(id)).toBe(0);
    expect(fake.deliveries(id)).toBe(2);
    expect(c2.upserts.filter((m) => m.msg.key.id === id)).toHaveLength(0);
    c2.sock.end(undefined);
    const c3 = await connect(dir);
    await c3.until((u) => u.receivedPendingNotifications === true);
    expect(fake.deliveries(id)).toBe(2);
  });

  it('a message the device sends twice with the same id is kept once and acked twice', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const acks: string[] = [];
    c.sock.ws.on('CB:ack,class:message', (node: { attrs: { id: string } }) => acks.push(node.attrs.id));
    await c.sock.sendMessage(CONTACT_JID, { text: 'x' }, { messageId: 'SAMEID1' });
    await c.sock.sendMessage(CONTACT_JID, { text: 'x' }, { messageId: 'SAMEID1' });
    await waitUntil(() => fake.sendAttempts('SAMEID1') === 2 && acks.length === 2);
    expect(fake.sent().filter((m) => m.id === 'SAMEID1')).toHaveLength(1);
    expect(fake.sent().find((m) => m.id === 'SAMEID1')?.text).toBe('x');
    expect(acks).toEqual(['SAMEID1', 'SAMEID1']);
    // a new id still goes through, on the same session
    const other = await c.sock.sendMessage(CONTACT_JID, { text: 'y' });
    expect((await fake.waitFor((m) => m.id === other?.key.id)).text).toBe('y');
  });

  it('QR pairing: qr → scanQr → 515 restart → the saved creds log in', async () => {
    const dir = await tempDir();
    // a freshly paired device waits (up to 20 s) for the phone's history sync unless history sync is off
    const opts = { shouldSyncHistoryMessage: () => false };
    const c = await connect(dir, opts);
    const withQr = await c.until((u) => !!u.qr);
    await fake.scanQr(withQr.qr!, '4915199999999');
    const closed = await c.until((u) => u.connection === 'close');
    expect(statusOf(closed)).toBe(DisconnectReason.restartRequired);
    await waitUntil(() => savedLogin(dir)); // saveCreds is async
    const c2 = await connect(dir, opts);
    await c2.until((u) => u.connection === 'open');
    expect(c2.sock.user?.id).toMatch(/^4915199999999:\d+@s\.whatsapp\.net$/);
    const id = await fake.sendText(CONTACT, 'welcome', { to: '4915199999999' });
    const got = await c2.message((m) => m.msg.key.id === id);
    expect(got.msg.message?.conversation).toBe('welcome');
    const out = await c2.sock.sendMessage(CONTACT_JID, { text: 'thanks' });
    expect((await fake.waitFor((m) => m.id === out?.key.id)).text).toBe('thanks');
  });

  it('pairing code: requestPairingCode → enterPairingCode on the phone → 515 restart → the saved creds log in', async () => {
    const dir = await tempDir();
    const opts = { shouldSyncHistoryMessage: () => false };
    const c = await connect(dir, opts);
    // baileys can only send companion_hello on a registering connection: once the first QR is out
    await c.until((u) => !!u.qr);
    const code = await c.sock.requestPairingCode('4915123456789');
    expect(code).toMatch(/^[1-9A-HJ-NP-TV-Z]{8}$/);
    await fake.enterPairingCode(`${code.slice(0, 4)}-${code.slice(4)}`);
    const closed = await c.until((u) => u.connection === 'close');
    expect(statusOf(closed)).toBe(DisconnectReason.restartRequired);
    expect(c.updates.some((u) => u.isNewLogin)).toBe(true);
    await waitUntil(() => savedLogin(dir)); // saveCreds is async
    const c2 = await connect(dir, opts);
    await c2.until((u) => u.connection === 'open');
    expect(c2.sock.user?.id).toMatch(/^4915123456789:\d+@s\.whatsapp\.net$/);
    expect(c2.sock.authState.creds.me?.lid).toBe(fake.lidOf('4915123456789').replace('@', ':1@'));
    const id = await fake.sendText(CONTACT, 'linked by code', { to: '4915123456789' });
    expect((await c2.message((m) => m.msg.key.id === id)).msg.message?.conversation).toBe('linked by code');
    const out = await c2.sock.sendMessage(CONTACT_JID, { text: 'hi from the new device' });
    expect((await fake.waitFor((m) => m.id === out?.key.id)).text).toBe('hi from the new device');
  });

  it('pairing code: a wrong code is refused and nothing is linked; the right one then links', async () => {
    const dir = await tempDir();
    const c = await connect(dir, { shouldSyncHistoryMessage: () => false });
    await c.until((u) => !!u.qr);
    const code = await c.sock.requestPairingCode('4915122222222', 'KEELTEST');
    expect(code).toBe('KEELTEST');
    // no request for another account's phone
    await expect(fake.enterPairingCode('KEELTEST', '4915100000000')).rejects.toThrow(/no device is waiting to link to 4915100000000/);
    await expect(fake.enterPairingCode('KEELTES7')).rejects.toThrow(/wrong pairing code/);
    await new Promise((r) => setTimeout(r, 200));
    const creds = c.sock.authState.creds;
    expect(creds.registered).toBe(false);
    expect(creds.me?.lid).toBeUndefined();
    expect(creds.account).toBeUndefined();
    expect(c.updates.some((u) => u.connection === 'close' || u.isNewLogin)).toBe(false);
    expect(fake.open()).toBe(1);
    // the phone lets the user try again
    await fake.enterPairingCode('keeltest', '+49 151 22222222');
    expect(statusOf(await c.until((u) => u.connection === 'close'))).toBe(DisconnectReason.restartRequired);
    expect(c.sock.authState.creds.me?.id).toMatch(/^4915122222222:\d+@s\.whatsapp\.net$/);
  });

  it('logout() unlinks the device: connection close with loggedOut (401), later logins refused', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    fake.logout();
    const closed = await c.until((u) => u.connection === 'close');
    expect(statusOf(closed)).toBe(DisconnectReason.loggedOut);
    const c2 = await connect(dir);
    const closed2 = await c2.until((u) => u.connection === 'close');
    expect(statusOf(closed2)).toBe(DisconnectReason.loggedOut);
  });

  it('conflict() replaces the session (440); drop() closes it; a deaf connection is detected by keep-alive', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    fake.conflict();
    expect(statusOf(await c.until((u) => u.connection === 'close'))).toBe(DisconnectReason.connectionReplaced);
    const c2 = await connect(dir, { keepAliveIntervalMs: 500 });
    await c2.until((u) => u.connection === 'open');
    fake.drop();
    expect(statusOf(await c2.until((u) => u.connection === 'close'))).toBe(DisconnectReason.connectionClosed);
    const c3 = await connect(dir, { keepAliveIntervalMs: 500 });
    await c3.until((u) => u.connection === 'open');
    fake.silent(true);
    expect(statusOf(await c3.until((u) => u.connection === 'close', 12_000))).toBe(DisconnectReason.connectionLost);
    fake.silent(false);
    expect(fake.connections()).toBe(3);
  });

  it("the account's phone writes a note to self: fromMe in the self chat, acked with a sender receipt", async () => {
    const dir = await tempDir();
    const { phone } = await fake.linkDevice(dir);
    const ownJid = `${phone}@s.whatsapp.net`;
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const id = await fake.sendFromPhone('remind me', {});
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.type).toBe('notify');
    expect(got.msg.key.fromMe).toBe(true);
    expect(got.msg.key.remoteJid).toBe(ownJid);
    expect(got.msg.key.participant || undefined).toBeUndefined();
    expect(got.msg.message?.conversation).toBe('remind me');
    expect(got.msg.message?.deviceSentMessage).toBeFalsy(); // baileys unwraps it
    await waitUntil(() => fake.acked(id));
    expect(fake.deliveries(id)).toBe(1);
    // LID addressing (the form baileys 7 users report for notes to self): the chat is the account's own LID
    const lidId = await fake.sendFromPhone('and via lid', { addressing: 'lid' });
    const viaLid = await c.message((m) => m.msg.key.id === lidId);
    expect(viaLid.msg.key.fromMe).toBe(true);
    expect(viaLid.msg.key.remoteJid).toBe(fake.lidOf(phone));
    expect(viaLid.msg.key.remoteJidAlt).toBe(ownJid);
    expect(viaLid.msg.message?.conversation).toBe('and via lid');
    await waitUntil(() => fake.acked(lidId));
    expect(fake.debug().filter((d) => d.includes('decrypt') || d.includes('nack'))).toEqual([]);
  });

  it("the account's phone writes to a contact: the linked device gets the fromMe copy in the contact's chat", async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const t = Math.floor(Date.now() / 1000) - 60;
    const id = await fake.sendFromPhone('see you at 8', { peer: CONTACT, timestamp: t });
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.msg.key.fromMe).toBe(true);
    expect(got.msg.key.remoteJid).toBe(CONTACT_JID);
    expect(got.msg.key.participant || undefined).toBeUndefined();
    expect(Number(got.msg.messageTimestamp)).toBe(t);
    expect(got.msg.message?.conversation).toBe('see you at 8');
    await waitUntil(() => fake.acked(id));
    // the contact's own messages still arrive as theirs, and the phone's next one goes over the established session
    const fromContact = await fake.sendText(CONTACT, 'ok!');
    expect((await c.message((m) => m.msg.key.id === fromContact)).msg.key.fromMe).toBe(false);
    const id2 = await fake.sendFromPhone('bring wine', { peer: `+${CONTACT}` });
    const got2 = await c.message((m) => m.msg.key.id === id2);
    expect(got2.msg.key.remoteJid).toBe(CONTACT_JID);
    expect(got2.msg.message?.conversation).toBe('bring wine');
    await waitUntil(() => fake.acked(id2));
  });

  it('a phone message lost in transit is re-delivered (offline, append) on the next login', async () => {
    const dir = await tempDir();
    const { phone } = await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    fake.loseNextDelivery();
    const id = await fake.sendFromPhone('lost note');
    await c.until((u) => u.connection === 'close');
    expect(fake.deliveries(id)).toBe(1);
    expect(fake.acked(id)).toBe(false);
    const c2 = await connect(dir);
    const got = await c2.message((m) => m.msg.key.id === id);
    expect(got.type).toBe('append');
    expect(got.msg.key.fromMe).toBe(true);
    expect(got.msg.key.remoteJid).toBe(`${phone}@s.whatsapp.net`);
    expect(got.msg.message?.conversation).toBe('lost note');
    await waitUntil(() => fake.acked(id));
    expect(fake.deliveries(id)).toBe(2);
  });

  it('the linked device writes to its own "Message yourself" chat: sent() has to = the account JID', async () => {
    const dir = await tempDir();
    const { phone } = await fake.linkDevice(dir);
    const ownJid = `${phone}@s.whatsapp.net`;
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const out = await c.sock.sendMessage(ownJid, { text: 'noted' });
    const s = await fake.waitFor((m) => m.text === 'noted');
    expect(s.id).toBe(out?.key.id);
    expect(s.to).toBe(ownJid);
    expect(s.toPhone).toBe(phone);
    expect(s.message.extendedTextMessage?.text).toBe('noted'); // the phone's deviceSentMessage, unwrapped
    expect(s.message.deviceSentMessage).toBeFalsy();
    expect(s.recipients.map((r) => r.replace(/@.*/, ''))).toContain(phone);
    // the phone's note, then a reply to it from the linked device (sessions in both directions now)
    const noteId = await fake.sendFromPhone('buy milk');
    const note = await c.message((m) => m.msg.key.id === noteId);
    const reply = await c.sock.sendMessage(ownJid, { text: 'done' }, { quoted: note.msg });
    const s2 = await fake.waitFor((m) => m.id === reply?.key.id);
    expect(s2.to).toBe(ownJid);
    expect(s2.text).toBe('done');
    expect(s2.quotedId).toBe(noteId);
    expect(s2.encType).toBe('msg');
    // the self chat's delivery receipt is the phone's `sender` receipt: baileys marks the message SERVER_ACK, own chat
    await waitUntil(() => c.edits.some((e) => e.key.id === out?.key.id && e.key.remoteJid === ownJid && e.update.status !== undefined));
    expect(fake.sent().filter((m) => m.to === ownJid)).toHaveLength(2);
    expect(fake.debug().filter((d) => d.includes('decrypt'))).toEqual([]);
  });

  it('group messages in and out', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const group = '120363012345678901@g.us';
    const other = '4917699988877';
    fake.setGroup(group, { subject: 'Team', participants: [CONTACT, other] });
    const id = await fake.sendText(CONTACT, 'hi team', { group, pushName: 'Alice' });
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.msg.key.remoteJid).toBe(group);
    expect(got.msg.key.participant).toBe(CONTACT_JID);
    expect(got.msg.message?.conversation).toBe('hi team');
    const meta = await c.sock.groupMetadata(group);
    expect(meta.subject).toBe('Team');
    expect(meta.participants.map((p) => p.id).sort()).toEqual(
      ['4915123456789@s.whatsapp.net', CONTACT_JID, `${other}@s.whatsapp.net`].sort(),
    );
    const out = await c.sock.sendMessage(group, { text: 'hello team' });
    const s = await fake.waitFor((m) => m.id === out?.key.id);
    expect(s.to).toBe(group);
    expect(s.text).toBe('hello team');
    expect(s.encType).toBe('skmsg');
    const out2 = await c.sock.sendMessage(group, { text: 'and again' });
    expect((await fake.waitFor((m) => m.id === out2?.key.id)).text).toBe('and again');
  });
});

/** A valid 1x1 PNG (so baileys' thumbnail step, sharp, succeeds). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

describe('WhatsApp fake media (HTTPS media server, media_conn, trust routing)', () => {
  it('the device sends an image with caption, a document and a voice note from files: sent() has the exact bytes', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const files = await tempDir();
    const doc = randomBytes(150_000 + 7); // several AES blocks, not block-aligned
    const voice = randomBytes(4321);
    await writeFile(join(files, 'pic.png'), PNG);
    await writeFile(join(files, 'report.pdf'), doc);
    await writeFile(join(files, 'voice.ogg'), voice);

    const img = await c.sock.sendMessage(CONTACT_JID, { image: { url: join(files, 'pic.png') }, caption: 'a picture' });
    const s1 = await fake.waitFor((m) => m.id === img?.key.id);
    expect(s1.type).toBe('media');
    expect(s1.text).toBe('a picture');
    expect(s1.media).toMatchObject({ kind: 'image', mimetype: 'image/jpeg', caption: 'a picture' });
    expect(s1.media?.error).toBeUndefined();
    expect(s1.media?.data.equals(PNG)).toBe(true);
    expect(s1.message.imageMessage?.url).toMatch(/^https:\/\/mmg\.whatsapp\.net\/v\/t62\./);

    const d = await c.sock.sendMessage(CONTACT_JID, {
      document: { url: join(files, 'report.pdf') },
      fileName: 'report.pdf',
      mimetype: 'application/pdf',
    });
    const s2 = await fake.waitFor((m) => m.id === d?.key.id);
    expect(s2.media).toMatchObject({ kind: 'document', mimetype: 'application/pdf', fileName: 'report.pdf' });
    expect(s2.media?.data.equals(doc)).toBe(true);

    const a = await c.sock.sendMessage(CONTACT_JID, {
      audio: { url: join(files, 'voice.ogg') },
      ptt: true,
      mimetype: 'audio/ogg; codecs=opus',
    });
    const s3 = await fake.waitFor((m) => m.id === a?.key.id);
    expect(s3.media).toMatchObject({ kind: 'audio', mimetype: 'audio/ogg; codecs=opus', ptt: true });
    expect(s3.media?.data.equals(voice)).toBe(true);
    expect(fake.debug().filter((l) => l.startsWith('media upload'))).toHaveLength(3);
  });

  it("a contact's image, document and voice note arrive and baileys downloads the exact bytes (also a byte range)", async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const c = await connect(dir);
    await c.until((u) => u.connection === 'open');
    const photo = randomBytes(20_000);
    const id = await fake.sendMedia(
      CONTACT,
      { kind: 'image', data: photo, mimetype: 'image/jpeg', caption: 'look' },
      { pushName: 'Alice' },
    );
    const got = await c.message((m) => m.msg.key.id === id);
    expect(got.msg.message?.imageMessage?.caption).toBe('look');
    expect(got.msg.message?.imageMessage?.url).toMatch(/^https:\/\/mmg\.whatsapp\.net\//);
    const bytes = await downloadMediaMessage(got.msg, 'buffer', {});
    expect(Buffer.compare(bytes, photo)).toBe(0);
    // a byte range (baileys sends `Range`, starting one AES block early for the IV)
    const part = await downloadMediaMessage(got.msg, 'buffer', { startByte: 1000, endByte: 5000 });
    expect(Buffer.compare(part, photo.subarray(1000, 5000))).toBe(0);

    const pdf = randomBytes(33_333);
    const docId = await fake.sendMedia(CONTACT, {
      kind: 'document',
      data: pdf,
      mimetype: 'application/pdf',
      fileName: 'a.pdf',
      caption: 'the file',
    });
    const gotDoc = await c.message((m) => m.msg.key.id === docId);
    const docContent = normalizeMessageContent(gotDoc.msg.message);
    expect(docContent?.documentMessage?.fileName).toBe('a.pdf');
    expect(docContent?.documentMessage?.caption).toBe('the file');
    expect(Buffer.compare(await downloadMediaMessage(gotDoc.msg, 'buffer', {}), pdf)).toBe(0);

    const ogg = randomBytes(999);
    const pttId = await fake.sendMedia(CONTACT, { kind: 'audio', data: ogg, mimetype: 'audio/ogg; codecs=opus', ptt: true, seconds: 2 });
    const gotPtt = await c.message((m) => m.msg.key.id === pttId);
    expect(gotPtt.msg.message?.audioMessage?.ptt).toBe(true);
    const stream = await downloadContentFromMessage(gotPtt.msg.message!.audioMessage!, 'audio');
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.compare(Buffer.concat(chunks), ogg)).toBe(0);
    await waitUntil(() => fake.acked(id) && fake.acked(docId) && fake.acked(pttId));
  });

  it('only the media hosts are routed and trusted; unknown paths are 404, uploads without the media_conn auth 401', async () => {
    expect((await fetch('https://mmg.whatsapp.net/v/t62.7118-24/nothing_n.enc?oh=x')).status).toBe(404);
    const upload = await fetch('https://media-lo1-1.cdn.whatsapp.net/mms/image/abc?auth=nope&token=abc', { method: 'POST', body: 'x' });
    expect(upload.status).toBe(401);
    // the fake's certificate is trusted for the media host names only, not in general: straight to its port fails
    const { port } = JSON.parse(fake.mediaEnv().KEEL_WA_FAKE_MEDIA) as { port: number };
    await expect(fetch(`https://127.0.0.1:${port}/`)).rejects.toThrow();
    const viaHttps = await new Promise<string>((resolve) => {
      httpsGet(`https://127.0.0.1:${port}/`, (res) => resolve(`status ${res.statusCode}`)).on('error', (e) =>
        resolve((e as NodeJS.ErrnoException).code ?? e.message),
      );
    });
    expect(viaHttps).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
    // other hosts / ports are not sent to the fake (there is no network here, so these fail elsewhere)
    await expect(fetch('https://example.invalid/', { signal: AbortSignal.timeout(3000) })).rejects.toThrow();
    await expect(fetch('https://mmg.whatsapp.net:8443/', { signal: AbortSignal.timeout(3000) })).rejects.toThrow();
  });

  it('a child process preloading whatsapp-trust.mjs with mediaEnv() uploads and downloads media', async () => {
    const dir = await tempDir();
    await fake.linkDevice(dir);
    const files = await tempDir();
    const out = randomBytes(12_345);
    await writeFile(join(files, 'out.bin'), out);
    const inbound = randomBytes(54_321);
    const script = `
      import { createHash } from 'node:crypto';
      import makeWASocket, { downloadMediaMessage, useMultiFileAuthState } from '@whiskeysockets/baileys';
      const { state } = await useMultiFileAuthState(process.env.WA_DIR);
      const logger = { level: 'silent', child() { return logger; }, trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {} };
      const sock = makeWASocket({ auth: state, waWebSocketUrl: process.env.WA_URL, logger, markOnlineOnConnect: false });
      sock.ev.on('connection.update', async (u) => {
        if (u.connection === 'open') {
          await sock.sendMessage('${CONTACT_JID}', { document: { url: process.env.WA_FILE }, fileName: 'out.bin', mimetype: 'application/octet-stream' });
          console.log('SENT');
        }
        if (u.connection === 'close') { console.log('CLOSE', u.lastDisconnect?.error?.message); process.exit(1); }
      });
      sock.ev.on('messages.upsert', async ({ messages }) => {
        for (const m of messages) {
          if (m.key.fromMe || !m.message?.documentMessage) continue;
          const buf = await downloadMediaMessage(m, 'buffer', {});
          console.log('GOT', createHash('sha256').update(buf).digest('hex'));
          process.exit(0);
        }
      });`;
    const child = runTrusting(script, { WA_DIR: dir, WA_URL: fake.url, WA_FILE: join(files, 'out.bin'), ...fake.mediaEnv() });
    const sent = await fake.waitFor((m) => m.media?.fileName === 'out.bin', 10_000);
    expect(sent.media?.data.equals(out)).toBe(true);
    await fake.sendMedia(CONTACT, { kind: 'document', data: inbound, mimetype: 'application/octet-stream', fileName: 'in.bin' });
    expect(await child).toContain(`GOT ${createHash('sha256').update(inbound).digest('hex')}`);
  });
});

/** Whether baileys has written the paired device's creds (with its own id) to `dir`. */
function savedLogin(dir: string): boolean {
  try {
    return !!JSON.parse(readFileSync(join(dir, 'creds.json'), 'utf8')).me?.id;
  } catch {
    return false;
  }
}

async function waitUntil(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
