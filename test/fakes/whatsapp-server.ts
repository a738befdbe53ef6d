/**
 * A loopback WhatsApp (127.0.0.1, port 0) for the real baileys client (`makeWASocket` with
 * `waWebSocketUrl: fake.url`), speaking the wire protocol baileys 7 implements: the Noise XX handshake
 * (`Noise_XX_25519_AESGCM_SHA256`, intro header `WA\x06\x03`, 3-byte length-prefixed frames, a server certificate
 * chain signed by a fixed fake root — import test/fakes/whatsapp-trust.ts (or preload whatsapp-trust.mjs) so baileys
 * trusts it), WhatsApp's binary XML nodes (baileys' own `encodeBinaryNode` / `decodeBinaryNode`), and end-to-end
 * Signal encryption: the fake plays the phones of the people who write to the linked device (libsignal sessions,
 * prekey bundles made with libsignal's KeyHelper) and the account's own phone (`sendFromPhone`: the fromMe copies
 * — deviceSentMessage — a linked device gets of what the phone writes, including notes to self).
 *
 * Login (`success` with the account's LID, every IQ baileys sends at login answered: prekey count, digest, passive,
 * usync devices/LIDs, abt props, privacy, blocklist, pings), QR pairing (`pair-device` refs, `pair-success` with a
 * valid ADV signed device identity, then the 515 "restart required" stream error), pairing with a link code
 * (`requestPairingCode`'s `companion_hello`, the phone's `primary_hello` / the companion's `companion_finish` with the
 * ADV secret both derive — `enterPairingCode` — then the same pair-success / 515), linked sessions written straight
 * into a `useMultiFileAuthState` folder, inbound texts / replies / mentions / edits / group messages (pkmsg for a new
 * session, msg afterwards), outbound messages decrypted as their recipient sees them (pkmsg/msg per device, skmsg with
 * a sender key for groups whose members the fake answers via `w:g2`), stream errors (conflict, device_removed),
 * network drops and deaf connections.
 *
 * As WhatsApp's offline queue does, a message stays owed to the device until the device acknowledges it (a delivery
 * `receipt` or an `ack class=message`): every unacknowledged message is delivered again, with the `offline` attribute,
 * on the device's next login, followed by the `<ib><offline count=…/></ib>` marker baileys waits for. The stored
 * ciphertext is delivered again unchanged (the server cannot re-encrypt), exactly as WhatsApp does.
 *
 * A device that cannot decrypt a message answers with a `<receipt type="retry">` (`<retry count=…/>`, `<registration>`,
 * from the second retry on a `<keys>` bundle) and a negative ack (`<ack class=message error=500>`). As the sender's phone
 * does on WhatsApp, the fake answers every retry receipt for a message it delivered (1:1 or group, at most
 * {@link MAX_RETRIES} per message): it builds a fresh Signal session from the contact to that device — from the receipt's
 * `<keys>` when present, otherwise from a one-time prekey of the device not handed out before (or the signed prekey
 * alone) — and delivers the same plaintext again under the same message id as a `pkmsg` whose `<enc>` carries
 * `count=<retry count>`. A message stays owed until a receipt or a plain ack; a negative ack other than 500 (e.g. 487,
 * which baileys sends for a message it already decrypted — libsignal's "Key used already or never filled") ends the
 * delivery, as the server drops a message the device rejected.
 *
 * Messages the device sends twice with the same id to the same chat (a resend after a lost server ack) are acked every
 * time but kept (and answered with a delivery receipt) once, as WhatsApp deduplicates them; see `sendAttempts(id)`.
 *
 * Media, as WhatsApp's media servers do it: an HTTPS server on 127.0.0.1 (its own port; a self-signed certificate for
 * {@link FAKE_WA_MEDIA_HOSTS} and 127.0.0.1 made with the openssl command line at start, nothing kept on disk). The
 * `w:m` `<media_conn/>` IQ is answered with an upload auth token, its ttl and the upload hosts; uploads
 * (`POST /mms/<type>/<fileEncSha256>?auth=…&token=…`, the encrypted file) are checked and stored and answered with
 * `{ url: 'https://mmg.whatsapp.net/v/t62…', direct_path }`; downloads (`GET <direct path>`, `Range` honoured) serve the
 * stored bytes. whatsapp-trust.ts / .mjs route those host names to it (the fake publishes its port and certificate in
 * `globalThis.__keelWaMedia`; `mediaEnv()` for child processes). Media the device sends shows in `sent()` decrypted
 * (`media`); `sendMedia` has a contact send media encrypted as a phone does. Without openssl the fake still starts,
 * without media (media_conn answered with an error, `sendMedia` / `mediaEnv` throw).
 */
import { execFile } from 'node:child_process';
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  pbkdf2,
  randomBytes,
  randomInt,
  randomUUID,
  timingSafeEqual,
} from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  aesDecryptGCM,
  aesEncryptGCM,
  type BinaryNode,
  BufferJSON,
  Curve,
  decodeBinaryNode,
  encodeBigEndian,
  encodeBinaryNode,
  generateSignalPubKey,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  hkdf,
  hmacSign,
  initAuthCreds,
  jidDecode,
  NOISE_MODE,
  proto,
  S_WHATSAPP_NET,
  sha256,
  unpadRandomMax16,
  WA_ADV_ACCOUNT_SIG_PREFIX,
  WA_ADV_DEVICE_SIG_PREFIX,
  writeRandomPadMax16,
} from '@whiskeysockets/baileys';
import {
  GroupCipher,
  GroupSessionBuilder,
  SenderKeyDistributionMessage,
  SenderKeyName,
  SenderKeyRecord,
} from '@whiskeysockets/baileys/lib/Signal/Group/index.js';
import * as libsignal from 'libsignal';
import { WebSocket, WebSocketServer } from 'ws';

/**
 * The fake's fixed root private key (Curve25519). Its public half is `FAKE_WA_ROOT_PUBLIC_KEY_HEX` in
 * whatsapp-trust.ts / whatsapp-trust.mjs; the intermediate noise certificate is signed with it (issuerSerial 0).
 */
export const FAKE_ROOT_PRIVATE_KEY = Buffer.from('43444cd05fca19798e135c100114a943077206d2a418efc27efefaf511a991b0', 'hex');

/** One message the linked device sent, decrypted as its recipient sees it. */
export interface FakeSent {
  /** The stanza's `to`: the contact's JID (`<phone>@s.whatsapp.net`, or `@lid` if baileys addressed a LID) or the group JID. */
  to: string;
  /** The contact's phone number for 1:1 messages (resolved from a LID too). */
  toPhone?: string;
  /** Stanza id (= the message key id baileys returned). */
  id: string;
  /** The stanza `type` attribute (`text`, `media`, `reaction`, …). */
  type: string;
  /** The decrypted proto Message (the contact's copy; for groups the sender-key ciphertext). */
  message: proto.IMessage;
  /** `conversation` or `extendedTextMessage.text` (or an image/document caption), if any. */
  text?: string;
  /** Stanza id of the quoted message (`contextInfo.stanzaId`), if a reply. */
  quotedId?: string;
  /** JIDs mentioned (`contextInfo.mentionedJid`). */
  mentions?: string[];
  /** Set for a reaction message. */
  reaction?: { key: proto.IMessageKey; text: string };
  /** Set for an edit (protocolMessage MESSAGE_EDIT): the edited message id and its new text. */
  edit?: { id: string; text?: string };
  /** Device JIDs the stanza carried an `enc` for (`participants/to@jid`). */
  recipients: string[];
  /** `pkmsg`, `msg` or `skmsg` — the encryption the recipient's copy used. */
  encType: string;
  /**
   * Set for an image / document / audio / video message: the file the device uploaded to the fake's media server, found
   * by the message's `directPath` and decrypted with its `mediaKey` (MAC, `fileEncSha256` and `fileSha256` checked).
   */
  media?: FakeSentMedia;
}

/** The kinds of media the fake sends and decodes (WhatsApp's image / document / audio / video messages). */
export type FakeMediaKind = 'image' | 'document' | 'audio' | 'video';

/** A media file in a message the device sent ({@link FakeSent.media}). */
export interface FakeSentMedia {
  kind: FakeMediaKind;
  mimetype: string;
  fileName?: string;
  caption?: string;
  /** Audio recorded as a voice note. */
  ptt?: boolean;
  /** The decrypted file (empty if it could not be fetched or decrypted: see `error`). */
  data: Buffer;
  /** Why `data` is empty: no upload at the message's directPath, bad MAC, hash or length mismatch. */
  error?: string;
}

/** What a contact sends with {@link WhatsAppFake.sendMedia}. */
export interface FakeMedia {
  kind: FakeMediaKind;
  /** The plain file; the fake encrypts it as WhatsApp clients do and stores it on its media server. */
  data: Buffer;
  mimetype: string;
  /** Documents: the file name shown (also the `title`). */
  fileName?: string;
  /** Image / video / document caption (a document with a caption is sent as WhatsApp does: `documentWithCaptionMessage`). */
  caption?: string;
  /** Audio: a voice note. */
  ptt?: boolean;
  /** Audio / video duration in seconds. */
  seconds?: number;
}

/** Options of {@link WhatsAppFake.sendText} (and the other inbound senders). */
export interface FakeSendOptions {
  /** A group JID (`<id>@g.us`): the message is a group message from `from` (with `participant`). */
  group?: string;
  /** Stanza id; random (WhatsApp-like `3EB0…`) by default. */
  id?: string;
  /** Reply to a message: its stanza id, its author's JID, optionally its text (→ contextInfo.quotedMessage). */
  quoted?: { id: string; participant: string; text?: string };
  /** JIDs mentioned (→ contextInfo.mentionedJid). */
  mentions?: string[];
  /** The sender's push name (`notify` attribute). */
  pushName?: string;
  /** Unix seconds; now by default. */
  timestamp?: number;
  /** The account (phone) the message is for; the most recently linked account by default. */
  to?: string;
  /**
   * How the stanza addresses the sender. `pn` (default): `from` / `participant` is the phone JID, with `sender_lid` /
   * `participant_lid`. `lid`: WhatsApp's newer LID addressing — `from` / `participant` is the sender's `@lid` JID with
   * `sender_pn` / `participant_pn` (baileys then reports `remoteJid` / `participant` as the LID and the phone JID as
   * `remoteJidAlt` / `participantAlt`).
   */
  addressing?: 'pn' | 'lid';
}

/** The loopback WhatsApp; see the module comment. */
export interface WhatsAppFake {
  /** `ws://127.0.0.1:<port>/ws/chat` — baileys' `waWebSocketUrl`. */
  url: string;
  /**
   * Writes a linked-device session, already paired to account `phone` (default '4915123456789'), into `dir` in the
   * format `useMultiFileAuthState(dir)` reads (creds.json: registered, me {id '<phone>:<device>@s.whatsapp.net', lid},
   * identity/signed prekey/noise key/registration id/adv secret, the ADV signed `account`, accountSyncCounter 1 so baileys
   * does not wait 20 s for a history sync; plus 30 `pre-key-<id>.json`). The fake remembers the device's keys so it can
   * encrypt to it. Returns the device JID.
   */
  linkDevice(dir: string, phone?: string): Promise<{ jid: string; phone: string }>;
  /**
   * QR pairing as a phone does it: takes the `qr` string baileys emitted in `connection.update` and pairs the waiting
   * connection to account `phone` (pair-success with a valid ADV signed device identity → baileys saves registered
   * creds, answers pair-device-sign; the fake then ends the stream with the 515 "restart required" error). Resolves
   * once the 515 is sent.
   */
  scanQr(qr: string, phone?: string): Promise<void>;
  /**
   * "Link with phone number instead", the phone's side: the user types `code` (the 8 characters
   * `sock.requestPairingCode(phoneNumber)` returned; `-` / spaces ignored, case-insensitive) on the phone of account
   * `phone` (default: the account of the latest pending request). Waits (up to 5 s, while none is pending at all) for a
   * connection's `companion_hello`, rejects if none is for that account (the phone got no request), then runs the
   * phone's half of the link-code handshake: unwraps the companion's ephemeral key with the typed code, sends `primary_hello` (its own ephemeral key wrapped with the typed code, the account's
   * identity key), decrypts the companion's `companion_finish` key bundle, derives the ADV secret as baileys does and
   * pairs exactly as {@link scanQr} does (pair-success → pair-device-sign → 515). Resolves once the 515 is sent.
   *
   * A wrong code is only detectable when the key bundle fails to decrypt (the wrapped keys are AES-CTR, unauthenticated):
   * the fake then answers `companion_finish` with an IQ error (baileys logs it, stays unregistered, keeps waiting) and
   * rejects with "wrong pairing code"; nothing is linked and the request stays open for another attempt.
   */
  enterPairingCode(code: string, phone?: string): Promise<void>;
  /** A contact (phone number, `+` and `@s.whatsapp.net` optional) writes a text to the linked device(s). Returns the id. */
  sendText(from: string, text: string, opts?: FakeSendOptions): Promise<string>;
  /** The contact edits an earlier message of theirs (protocolMessage MESSAGE_EDIT inside editedMessage). Returns the edit's id. */
  sendEdit(from: string, originalId: string, newText: string, opts?: FakeSendOptions): Promise<string>;
  /** The contact reacts to a message (`key.id` = target stanza id; `fromMe` from the contact's perspective). Returns the id. */
  sendReaction(
    from: string,
    target: { id: string; fromMe: boolean; participant?: string },
    emoji: string,
    opts?: FakeSendOptions,
  ): Promise<string>;
  /**
   * The contact sends a media message, as a WhatsApp phone does: the file is encrypted with a fresh mediaKey
   * (AES-256-CBC + 10-byte HMAC-SHA256 MAC, keys from HKDF "WhatsApp <Type> Keys"), stored on the fake's media server
   * and the message (url `https://mmg.whatsapp.net/v/…`, directPath, mediaKey, fileEncSha256, fileSha256, fileLength,
   * mimetype, caption / fileName / ptt, quote / mentions from `opts`) is delivered, stanza `type="media"` with
   * `<enc mediatype=…>`. baileys' `downloadMediaMessage` then fetches it from the media server (see whatsapp-trust.ts).
   * Returns the id.
   */
  sendMedia(from: string, media: FakeMedia, opts?: FakeSendOptions): Promise<string>;
  /**
   * What a child process needs in its env (with the whatsapp-trust.mjs preload) to reach the media server:
   * `KEEL_WA_FAKE_MEDIA` = JSON `{ port, ca, hosts }`. In this process the fake sets `globalThis.__keelWaMedia` itself.
   */
  mediaEnv(): { KEEL_WA_FAKE_MEDIA: string };
  /** The contact sends an arbitrary proto Message (escape hatch for media stubs etc.). Returns the id. */
  sendMessage(from: string, message: proto.IMessage, opts?: FakeSendOptions & { stanzaType?: string }): Promise<string>;
  /**
   * The account's own phone (device 0 of account `opts.to`, default the last linked) writes `text` to `peer` (a phone
   * number or JID; omitted or the account itself: its "Message yourself" chat). Linked devices get the copy WhatsApp
   * sends them (deviceSentMessage, fromMe). Returns the message id.
   *
   * The stanza is `<message from="<account>@s.whatsapp.net" recipient="<peer JID>" id t type="text">` (baileys:
   * `key.fromMe` true, `key.remoteJid` the peer's JID — the account's own `<phone>@s.whatsapp.net` for a note to self);
   * with `addressing: 'lid'` it is `from="<account LID>" recipient="<peer LID>" addressing_mode="lid"
   * peer_recipient_pn="<peer JID>"` (baileys: `remoteJid` the peer's — or the account's own — `@lid`, `remoteJidAlt` the
   * phone JID) — baileys 7 users report notes to self arriving in that form (remoteJid the own `@lid`). The phone is a Signal party of its own (the account's identity key);
   * delivery, receipts (baileys answers with `type="sender"`), retries and redelivery work as for a contact's message.
   */
  sendFromPhone(
    text: string,
    opts?: { peer?: string; id?: string; timestamp?: number; to?: string; addressing?: 'pn' | 'lid' },
  ): Promise<string>;
  /** The `@lid` JID the fake assigned to a phone number (a contact's or an account's; stable across runs). */
  lidOf(phone: string): string;
  /** Defines (or redefines) a group: subject and member phone numbers (the account is always a member). */
  setGroup(jid: string, opts: { subject?: string; participants: string[] }): void;
  /**
   * Every message the linked device(s) sent, in order; one entry per (`to`, id): a repeated send is dropped as WhatsApp
   * drops it (a retry resend — `<enc count=…>` — is not a repeat).
   */
  sent(): FakeSent[];
  /** How many message stanzas with id `id` the device sent (each acked; only the first of a (`to`, id) pair is kept). */
  sendAttempts(id: string): number;
  /** Resolves with the first (already or later) sent message matching `pred`; rejects after `timeoutMs` (default 5000). */
  waitFor(pred: (m: FakeSent) => boolean, timeoutMs?: number): Promise<FakeSent>;
  /** How many times message `id` was written to a device connection (counting deliveries lost to {@link loseNextDelivery}). */
  deliveries(id: string): number;
  /** Whether the device acknowledged message `id` (receipt or ack). */
  acked(id: string): boolean;
  /**
   * The next delivery is counted but never reaches the client: the fake cuts that connection instead of writing the
   * frame (a network drop mid-delivery). The message stays owed and is re-delivered, offline-marked, on the next login.
   */
  loseNextDelivery(): void;
  /**
   * The next delivery receipt (or plain message ack) for a message the fake delivered is treated as never received: the
   * fake ignores it — the message stays owed — and cuts that connection right away, as if the device's process was
   * killed after decrypting but before its receipt left. On the next login the stored ciphertext is delivered again;
   * baileys cannot decrypt it a second time (its Signal chain key moved on) — a `msg` makes it send a retry receipt,
   * which the fake answers with a re-encrypted `pkmsg`; a replayed `pkmsg` makes it nack with 487 (see the module comment).
   */
  loseNextReceipt(): void;
  /** Retry receipts the device sent for message `id` (each answered with a re-encrypted delivery, up to {@link MAX_RETRIES}). */
  retries(id: string): number;
  /** Error codes of the device's negative acks (`<ack class="message" error=…>`) for message `id`, in order. */
  nacks(id: string): string[];
  /** Closes every client socket abruptly (simulated network drop). */
  drop(): void;
  /** `true`: the fake keeps sockets open but stops answering anything, pings included, and holds deliveries (a deaf connection). */
  silent(on: boolean): void;
  /** Sends `<stream:error><conflict type="replaced"/>` (another session took over; baileys: 440) to every open connection. */
  conflict(): void;
  /**
   * Unlinks the device(s): `<stream:error code="401"><conflict type="device_removed"/>` (baileys: loggedOut 401) to every
   * open connection; the device is forgotten, later logins get `<failure reason="401"/>`.
   */
  logout(): void;
  /** Client WebSocket connections opened so far. */
  connections(): number;
  /** Client WebSocket connections open now. */
  open(): number;
  /** Logged-in (authenticated) connections open now. */
  loggedIn(): number;
  /** Chatstates received (`composing`, `paused`, `recording`) with their `to`. */
  chatstates(): Array<{ to: string; state: string }>;
  /** Presence updates received (`available`, `unavailable`). */
  presences(): string[];
  /** Message ids the device sent read receipts (`read` / `read-self`) for. */
  reads(): string[];
  /** IQs the fake did not know (answered with an empty result), and other oddities, for debugging. */
  debug(): string[];
  /** Stops the server, closing every connection. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------------
// helpers

interface SignalKeyPair {
  pubKey: Buffer;
  privKey: Buffer;
}
interface KeyHelper {
  generateIdentityKeyPair(): SignalKeyPair;
  generateRegistrationId(): number;
  generateSignedPreKey(identity: SignalKeyPair, keyId: number): { keyId: number; keyPair: SignalKeyPair; signature: Buffer };
  generatePreKey(keyId: number): { keyId: number; keyPair: SignalKeyPair };
}
const keyhelper = (libsignal as unknown as { keyhelper: KeyHelper }).keyhelper;
type SessionRecordT = InstanceType<typeof libsignal.SessionRecord>;

const DEFAULT_PHONE = '4915123456789';
/** Retry receipts per message the fake answers (WhatsApp's phones and baileys both stop after 5). */
export const MAX_RETRIES = 5;
const now = () => Math.floor(Date.now() / 1000);
const EMPTY = Buffer.alloc(0);

function n(tag: string, attrs: Record<string, string | undefined> = {}, content?: BinaryNode['content']): BinaryNode {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) clean[k] = v;
  return content === undefined ? { tag, attrs: clean } : { tag, attrs: clean, content };
}
function children(node: BinaryNode | undefined): BinaryNode[] {
  return node && Array.isArray(node.content) ? (node.content as BinaryNode[]) : [];
}
function bytes(node: BinaryNode | undefined): Buffer | undefined {
  const c = node?.content;
  if (c instanceof Uint8Array) return Buffer.from(c);
  if (typeof c === 'string') return Buffer.from(c, 'utf8');
  return undefined;
}
function uintOf(buf: Buffer | undefined): number {
  let v = 0;
  for (const b of buf ?? []) v = v * 256 + b;
  return v;
}
/** Digits of a phone number / PN JID (`+49 151…`, `4915…@s.whatsapp.net`, `4915…:3@s.whatsapp.net`). */
function phoneOf(s: string): string {
  return s
    .split('@')[0]!
    .split(':')[0]!
    .replace(/[^0-9]/g, '');
}
function pnJid(phone: string, device = 0): string {
  return device ? `${phone}:${device}@s.whatsapp.net` : `${phone}@s.whatsapp.net`;
}
/** A stable 15-digit LID user for a phone number, as WhatsApp's opaque LIDs look. */
function lidUserFor(phone: string): string {
  const h = createHash('sha256').update(`lid:${phone}`).digest();
  return (100000000000000n + (h.readBigUInt64BE(0) % 899999999999999n)).toString();
}
function newMessageId(): string {
  return '3EB0' + randomBytes(9).toString('hex').toUpperCase();
}
function textOf(m: proto.IMessage | null | undefined): string | undefined {
  if (!m) return undefined;
  return (
    m.conversation ??
    m.extendedTextMessage?.text ??
    m.imageMessage?.caption ??
    m.videoMessage?.caption ??
    m.documentMessage?.caption ??
    m.documentWithCaptionMessage?.message?.documentMessage?.caption ??
    m.ephemeralMessage?.message?.conversation ??
    m.ephemeralMessage?.message?.extendedTextMessage?.text ??
    undefined
  );
}
function contextOf(m: proto.IMessage): proto.IContextInfo | undefined {
  return (m.extendedTextMessage?.contextInfo ??
    m.imageMessage?.contextInfo ??
    m.documentMessage?.contextInfo ??
    m.videoMessage?.contextInfo ??
    m.audioMessage?.contextInfo ??
    m.documentWithCaptionMessage?.message?.documentMessage?.contextInfo ??
    undefined) as proto.IContextInfo | undefined;
}

// ---- media ----------------------------------------------------------------------------------------------------------

/**
 * The media hosts the fake's `media_conn` names (upload hosts, in order) — a regional CDN host first and
 * `mmg.whatsapp.net` last, as WhatsApp lists them — all served by the one HTTPS media server. Uploads answer with a
 * `https://mmg.whatsapp.net/…` url, so downloads go there. whatsapp-trust.ts routes these names to the fake.
 */
export const FAKE_WA_MEDIA_HOSTS = ['media-lo1-1.cdn.whatsapp.net', 'mmg.whatsapp.net'];
const MEDIA_INFO: Record<FakeMediaKind, string> = {
  image: 'WhatsApp Image Keys',
  video: 'WhatsApp Video Keys',
  audio: 'WhatsApp Audio Keys',
  document: 'WhatsApp Document Keys',
};
/** The `t62.<n>` segment of WhatsApp direct paths, per upload path (`/mms/<type>`). */
const DIRECT_PATH_KIND: Record<string, string> = { image: '7118-24', video: '7161-24', audio: '7114-24', document: '7119-24' };
/** The upload size limit the fake announces and enforces (WhatsApp: 100 MB for media, more for documents). */
const MEDIA_MAX_BYTES = 100 * 1024 * 1024;
const sha256Of = (b: Uint8Array) => createHash('sha256').update(b).digest();

/** iv, cipherKey, macKey: the 112-byte HKDF-SHA256 expansion of a 32-byte mediaKey with the kind's info string. */
function mediaKeys(mediaKey: Uint8Array, kind: FakeMediaKind) {
  const k = Buffer.from(hkdfSync('sha256', mediaKey, Buffer.alloc(0), MEDIA_INFO[kind], 112));
  return { iv: k.subarray(0, 16), cipherKey: k.subarray(16, 48), macKey: k.subarray(48, 80) };
}

/** A file encrypted as WhatsApp clients upload it: AES-256-CBC ciphertext followed by the first 10 bytes of HMAC(iv‖ct). */
function encryptMedia(data: Buffer, kind: FakeMediaKind) {
  const mediaKey = randomBytes(32);
  const { iv, cipherKey, macKey } = mediaKeys(mediaKey, kind);
  const c = createCipheriv('aes-256-cbc', cipherKey, iv);
  const ct = Buffer.concat([c.update(data), c.final()]);
  const mac = createHmac('sha256', macKey).update(iv).update(ct).digest().subarray(0, 10);
  const blob = Buffer.concat([ct, mac]);
  return { mediaKey, blob, fileSha256: sha256Of(data), fileEncSha256: sha256Of(blob), fileLength: data.length };
}

/** The inverse of {@link encryptMedia}, checking what a recipient can: MAC, encrypted and plain hashes, length. */
function decryptMedia(
  blob: Buffer,
  kind: FakeMediaKind,
  m: { mediaKey?: Uint8Array | null; fileEncSha256?: Uint8Array | null; fileSha256?: Uint8Array | null; fileLength?: unknown },
): Buffer {
  if (!m.mediaKey?.length) throw new Error('message has no mediaKey');
  if (blob.length < 26) throw new Error(`upload too short (${blob.length} bytes)`);
  if (m.fileEncSha256 && !sha256Of(blob).equals(Buffer.from(m.fileEncSha256))) throw new Error('fileEncSha256 does not match the upload');
  const { iv, cipherKey, macKey } = mediaKeys(m.mediaKey, kind);
  const ct = blob.subarray(0, -10);
  const mac = createHmac('sha256', macKey).update(iv).update(ct).digest().subarray(0, 10);
  if (!timingSafeEqual(mac, blob.subarray(-10))) throw new Error('media MAC mismatch (wrong mediaKey or kind)');
  const d = createDecipheriv('aes-256-cbc', cipherKey, iv);
  const data = Buffer.concat([d.update(ct), d.final()]);
  if (m.fileSha256 && !sha256Of(data).equals(Buffer.from(m.fileSha256))) throw new Error('fileSha256 does not match the decrypted file');
  if (m.fileLength != null && Number(m.fileLength) !== data.length) throw new Error(`fileLength ${m.fileLength} but ${data.length} bytes`);
  return data;
}

/** The media content of a message (unwrapping documentWithCaption / ephemeral / view-once wrappers). */
function mediaContentOf(
  m: proto.IMessage,
): { kind: FakeMediaKind; c: proto.Message.IImageMessage & proto.Message.IDocumentMessage & proto.Message.IAudioMessage } | undefined {
  const inner =
    m.documentWithCaptionMessage?.message ?? m.ephemeralMessage?.message ?? m.viewOnceMessage?.message ?? m.viewOnceMessageV2?.message ?? m;
  if (inner !== m) return mediaContentOf(inner);
  type C = proto.Message.IImageMessage & proto.Message.IDocumentMessage & proto.Message.IAudioMessage;
  if (m.imageMessage) return { kind: 'image', c: m.imageMessage as C };
  if (m.videoMessage) return { kind: 'video', c: m.videoMessage as C };
  if (m.audioMessage) return { kind: 'audio', c: m.audioMessage as C };
  if (m.documentMessage) return { kind: 'document', c: m.documentMessage as C };
  return undefined;
}

/** The `mediatype` attribute WhatsApp puts on a media message's `<enc>` (baileys' getMediaType). */
function encMediaType(m: proto.IMessage): string | undefined {
  const mc = mediaContentOf(m);
  if (!mc) return undefined;
  if (mc.kind === 'audio') return mc.c.ptt ? 'ptt' : 'audio';
  if (mc.kind === 'video') return m.videoMessage?.gifPlayback ? 'gif' : 'video';
  return mc.kind;
}

let mediaCert: Promise<{ key: string; cert: string }> | undefined;
/**
 * A self-signed P-256 certificate (2 days) for the media hosts and 127.0.0.1, made once per process with the openssl
 * command line in a temp dir that is removed right away (nothing is written to the repository).
 */
function fakeMediaCert(): Promise<{ key: string; cert: string }> {
  mediaCert ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-wa-media-'));
    try {
      const san = [...FAKE_WA_MEDIA_HOSTS.map((h) => `DNS:${h}`), 'IP:127.0.0.1'].join(',');
      const [keyPath, certPath] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
      await promisify(execFile)(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '2',
          '-subj',
          '/CN=mmg.whatsapp.net',
          '-addext',
          `subjectAltName=${san}`,
          '-keyout',
          keyPath,
          '-out',
          certPath,
        ],
        { timeout: 10_000 },
      );
      return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8') };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  mediaCert.catch(() => {
    mediaCert = undefined;
  });
  return mediaCert;
}

/** The Noise XX responder state during the handshake (mirrors baileys' lib/Utils/noise-handler.js from the other side). */
class NoiseResponder {
  private hash: Buffer;
  private salt: Buffer;
  private key: Buffer;
  private counter = 0;
  constructor() {
    const mode = Buffer.from(NOISE_MODE);
    this.hash = mode.byteLength === 32 ? mode : sha256(mode);
    this.salt = this.hash;
    this.key = this.hash;
  }
  authenticate(data: Uint8Array): void {
    this.hash = sha256(Buffer.concat([this.hash, data]));
  }
  private iv(): Buffer {
    const iv = Buffer.alloc(12);
    iv.writeUInt32BE(this.counter++, 8);
    return iv;
  }
  encrypt(plaintext: Uint8Array): Buffer {
    const ct = aesEncryptGCM(plaintext, this.key, this.iv(), this.hash);
    this.authenticate(ct);
    return ct;
  }
  decrypt(ciphertext: Uint8Array): Buffer {
    const pt = aesDecryptGCM(ciphertext, this.key, this.iv(), this.hash);
    this.authenticate(ciphertext);
    return pt;
  }
  mixIntoKey(data: Uint8Array): void {
    const k = Buffer.from(hkdf(Buffer.from(data), 64, { salt: this.salt, info: '' }));
    this.salt = k.subarray(0, 32);
    this.key = k.subarray(32);
    this.counter = 0;
  }
  /** [client write key, client read key]. */
  split(): [Buffer, Buffer] {
    const k = Buffer.from(hkdf(EMPTY, 64, { salt: this.salt, info: '' }));
    return [k.subarray(0, 32), k.subarray(32)];
  }
}

/** A Signal participant the fake plays: a contact's phone, or the account's own phone (device 0). */
class Party {
  readonly identity: SignalKeyPair;
  readonly registrationId: number;
  readonly signedPreKey: { keyId: number; keyPair: SignalKeyPair; signature: Buffer };
  private readonly preKeys = new Map<number, SignalKeyPair>();
  private readonly handedOut = new Set<number>();
  private nextPreKeyId = 1;
  private readonly sessions = new Map<string, SessionRecordT>();
  private readonly senderKeys = new Map<string, SenderKeyRecord>();
  readonly lidUser: string;
  constructor(readonly phone: string) {
    this.identity = keyhelper.generateIdentityKeyPair();
    this.registrationId = keyhelper.generateRegistrationId();
    this.signedPreKey = keyhelper.generateSignedPreKey(this.identity, 1);
    this.lidUser = lidUserFor(phone);
  }
  get jid(): string {
    return pnJid(this.phone);
  }
  get lid(): string {
    return `${this.lidUser}@lid`;
  }
  /** The identity public key without the 0x05 type byte (what WhatsApp puts on the wire / in ADV). */
  get identityPub32(): Buffer {
    return Buffer.from(this.identity.pubKey).subarray(1);
  }
  readonly storage: libsignal.SignalStorage = {
    loadSession: async (id) => this.sessions.get(id),
    storeSession: async (id, record) => {
      this.sessions.set(id, record);
    },
    isTrustedIdentity: () => true,
    loadPreKey: async (id) => this.preKeys.get(Number(id)),
    removePreKey: (id) => {
      this.preKeys.delete(Number(id));
    },
    loadSignedPreKey: () => this.signedPreKey.keyPair,
    getOurRegistrationId: () => this.registrationId,
    getOurIdentity: () => this.identity,
  };
  readonly senderKeyStore = {
    loadSenderKey: async (name: SenderKeyName) => this.senderKeys.get(name.toString()) ?? new SenderKeyRecord(),
    storeSenderKey: async (name: SenderKeyName, record: SenderKeyRecord) => {
      this.senderKeys.set(name.toString(), record);
    },
  };
  /** The `<user>` node of an `encrypt` key fetch: identity, signed prekey and one fresh one-time prekey. */
  bundleNode(jid: string): BinaryNode {
    let id = this.nextPreKeyId++;
    while (this.handedOut.has(id)) id = this.nextPreKeyId++;
    const pk = keyhelper.generatePreKey(id);
    this.preKeys.set(id, pk.keyPair);
    this.handedOut.add(id);
    return n('user', { jid }, [
      n('registration', {}, encodeBigEndian(this.registrationId, 4)),
      n('type', {}, Buffer.from([5])),
      n('identity', {}, this.identityPub32),
      n('skey', {}, [
        n('id', {}, encodeBigEndian(this.signedPreKey.keyId, 3)),
        n('value', {}, Buffer.from(this.signedPreKey.keyPair.pubKey).subarray(1)),
        n('signature', {}, this.signedPreKey.signature),
      ]),
      n('key', {}, [n('id', {}, encodeBigEndian(id, 3)), n('value', {}, Buffer.from(pk.keyPair.pubKey).subarray(1))]),
    ]);
  }
  hasSession(addr: libsignal.ProtocolAddress): boolean {
    return this.sessions.has(addr.toString());
  }
}

interface Account {
  phone: string;
  /** The phone (device 0); its identity key is the account signature key of the ADV identities. */
  party: Party;
  nextDevice: number;
  keyIndex: number;
}

/** A linked device (companion) as the server knows it. */
interface Device {
  account: Account;
  device: number;
  jid: string;
  lid: string;
  noisePub: Buffer;
  identityPub: Buffer; // 32 bytes
  registrationId: number;
  signedPreKey: { keyId: number; pub: Buffer; signature: Buffer };
  /** One-time prekeys uploaded (public halves), not yet handed out. */
  preKeys: Map<number, Buffer>;
  keyIndex: number;
  removed: boolean;
}

interface Registration {
  refs: string[];
  noisePub: Buffer;
  identityPub: Buffer;
  registrationId: number;
  signedPreKey: { keyId: number; pub: Buffer; signature: Buffer };
  pairIqId?: string;
  pending?: { device: Device; resolve: () => void; reject: (e: Error) => void } | undefined;
}

/** A `link_code_companion_reg` `companion_hello` a registering connection sent (`sock.requestPairingCode`). */
interface LinkCodeRequest {
  /** The account the companion wants to link to (digits of the request's `jid`). */
  phone: string;
  /** `link_code_pairing_wrapped_companion_ephemeral_pub`: salt (32) | iv (16) | AES-256-CTR(companion ephemeral pub) (32). */
  wrapped: Buffer;
  /** The `link_code_pairing_ref` the server answered with; `primary_hello` and `companion_finish` carry it. */
  ref: Buffer;
  platformId: string;
  platformDisplay: string;
  seq: number;
  /** The phone, between `primary_hello` and the companion's `companion_finish`. */
  finish?: { resolve: (iq: BinaryNode) => void; reject: (e: Error) => void } | undefined;
}

/** What a Signal session to a device is built from (public keys without the 0x05 type byte). */
interface DeviceBundle {
  registrationId: number;
  identityPub: Buffer;
  signedPreKey: { keyId: number; pub: Buffer; signature: Buffer };
  preKey?: { keyId: number; pub: Buffer };
}

/** A message owed to one device. */
interface Delivery {
  id: string;
  device: Device;
  /** The stanza as stored by the server (replaced by the re-encrypted one when a retry receipt is answered). */
  node: BinaryNode;
  /** The contact who wrote it (whose Signal session to the device a retry rebuilds) and the padded plaintext. */
  sender: Party;
  plaintext: Uint8Array;
  delivered: number;
  acked: boolean;
  /** The device nacked it with an error other than 500: the server stops delivering it. */
  rejected: boolean;
  /** Retry receipts received (answered or not). */
  retries: number;
  nacks: string[];
}

class Conn {
  inBytes: Buffer = EMPTY;
  gotIntro = false;
  stage: 'hello' | 'finish' | 'transport' = 'hello';
  noise = new NoiseResponder();
  eph = Curve.generateKeyPair();
  tx: { enc: Buffer; dec: Buffer; r: number; w: number } | null = null;
  device: Device | null = null;
  reg: Registration | null = null;
  linkCode: LinkCodeRequest | null = null;
  queue: Promise<void> = Promise.resolve();
  /** Cut by the fake (loseNextReceipt): whatever the client had sent after that is never read. */
  killed = false;
  constructor(readonly ws: WebSocket) {}
  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }
}

const pbkdf2Async = promisify(pbkdf2);
/** The link-code wrapping key, as baileys' `derivePairingCodeKey`: PBKDF2-SHA256(code, salt, 2 << 16 rounds), 32 bytes. */
const pairingCodeKey = (code: string, salt: Buffer) => pbkdf2Async(code, salt, 2 << 16, 32, 'sha256');
const aesCtr = (data: Buffer, key: Buffer, iv: Buffer) => {
  const c = createCipheriv('aes-256-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
};

const IV = (c: number): Buffer => {
  const iv = Buffer.alloc(12);
  iv.writeUInt32BE(c, 8);
  return iv;
};

// ---------------------------------------------------------------------------------------------------------------------

/** Starts the fake on 127.0.0.1 (`opts.port`, default an ephemeral port). */
export async function startWhatsAppFake(opts: { port?: number } = {}): Promise<WhatsAppFake> {
  const serverStatic = Curve.generateKeyPair();
  const intermediate = Curve.generateKeyPair();
  const t0 = now();
  const interDetails = proto.CertChain.NoiseCertificate.Details.encode({
    serial: 1,
    issuerSerial: 0,
    key: intermediate.public,
    notBefore: t0 - 86400,
    notAfter: t0 + 365 * 86400,
  }).finish();
  const leafDetails = proto.CertChain.NoiseCertificate.Details.encode({
    serial: 2,
    issuerSerial: 1,
    key: serverStatic.public,
    notBefore: t0 - 86400,
    notAfter: t0 + 30 * 86400,
  }).finish();
  const certChain = proto.CertChain.encode({
    intermediate: { details: interDetails, signature: Curve.sign(FAKE_ROOT_PRIVATE_KEY, interDetails) },
    leaf: { details: leafDetails, signature: Curve.sign(intermediate.private, leafDetails) },
  }).finish();

  const accounts = new Map<string, Account>();
  const parties = new Map<string, Party>(); // phone → party (contacts and account phones)
  const partiesByLid = new Map<string, Party>();
  const devices = new Map<string, Device>(); // '<phone>:<device>' → device
  const groups = new Map<string, { subject: string; participants: string[]; creation: number }>();
  const conns = new Set<Conn>();
  const owed: Delivery[] = [];
  const sentLog: FakeSent[] = [];
  const waiters: Array<{ pred: (m: FakeSent) => boolean; resolve: (m: FakeSent) => void }> = [];
  const chatstateLog: Array<{ to: string; state: string }> = [];
  const presenceLog: string[] = [];
  const readLog: string[] = [];
  const debugLog: string[] = [];
  let connectionCount = 0;
  let deaf = false;
  let loseNext = 0;
  let loseReceipts = 0;
  const sendAttempts = new Map<string, number>(); // message id → stanzas received from the device
  const sentKeys = new Set<string>(); // `${to} ${id}` already in sentLog (or being decrypted)
  let lastAccount: string | undefined;
  // the media server: encrypted uploads by direct-path pathname (with the `oh` signature their URLs carry), auth tokens
  const blobs = new Map<string, { data: Buffer; oh: string }>();
  const mediaAuths = new Set<string>();
  let media: { server: HttpsServer; target: { port: number; ca: string; hosts: string[] } } | undefined;
  let mediaError = 'not started';

  const party = (phoneOrJid: string): Party => {
    if (phoneOrJid.endsWith('@lid')) {
      const p = partiesByLid.get(phoneOrJid.split('@')[0]!.split(':')[0]!);
      if (p) return p;
    }
    const phone = phoneOf(phoneOrJid);
    let p = parties.get(phone);
    if (!p) {
      p = new Party(phone);
      parties.set(phone, p);
      partiesByLid.set(p.lidUser, p);
    }
    return p;
  };
  const account = (phone: string): Account => {
    let a = accounts.get(phone);
    if (!a) {
      a = { phone, party: party(phone), nextDevice: 1, keyIndex: 0 };
      accounts.set(phone, a);
    }
    lastAccount = phone;
    return a;
  };
  const deviceAddr = (d: Device) => new libsignal.ProtocolAddress(d.account.phone, d.device);

  /** ADV signed device identity for `identityPub` (32 bytes), signed by the account's phone. */
  const advIdentity = (acct: Account, identityPub: Buffer) => {
    acct.keyIndex += 1;
    const details = Buffer.from(
      proto.ADVDeviceIdentity.encode({ rawId: randomInt(1, 2 ** 31), timestamp: now(), keyIndex: acct.keyIndex }).finish(),
    );
    const accountSignature = Buffer.from(
      Curve.sign(acct.party.identity.privKey, Buffer.concat([WA_ADV_ACCOUNT_SIG_PREFIX, details, identityPub])),
    );
    return { details, accountSignatureKey: acct.party.identityPub32, accountSignature, keyIndex: acct.keyIndex };
  };

  // ---- transport ------------------------------------------------------------------------------------------------

  const sendRaw = (c: Conn, payload: Uint8Array) => {
    if (!c.isOpen) return;
    let data = Buffer.from(payload);
    if (c.tx) data = aesEncryptGCM(data, c.tx.enc, IV(c.tx.w++), EMPTY);
    const frame = Buffer.alloc(3 + data.length);
    frame.writeUIntBE(data.length, 0, 3);
    data.copy(frame, 3);
    c.ws.send(frame);
  };
  const sendNode = (c: Conn, node: BinaryNode) => {
    if (!c.tx) return;
    sendRaw(c, encodeBinaryNode(node));
  };
  const iqResult = (c: Conn, iq: BinaryNode, content?: BinaryNode[], from = S_WHATSAPP_NET) =>
    sendNode(c, n('iq', { id: iq.attrs.id, type: 'result', from }, content));
  const streamError = (c: Conn, attrs: Record<string, string>, child?: BinaryNode) => {
    sendNode(c, n('stream:error', attrs, child ? [child] : undefined));
    setTimeout(() => c.ws.close(), 20);
  };

  const onData = (c: Conn, data: Buffer) => {
    c.inBytes = c.inBytes.length ? Buffer.concat([c.inBytes, data]) : data;
    if (!c.gotIntro) {
      if (c.inBytes.length < 4) return;
      let off = 0;
      if (c.inBytes[0] === 0x45 && c.inBytes[1] === 0x44) {
        // 'ED' edge routing prefix: 'ED' 0 1 <len:3> <routing info>, then the WA header
        if (c.inBytes.length < 7) return;
        const len = c.inBytes.readUIntBE(4, 3);
        if (c.inBytes.length < 7 + len + 4) return;
        off = 7 + len;
      }
      const header = c.inBytes.subarray(off, off + 4);
      if (header[0] !== 0x57 || header[1] !== 0x41) {
        debugLog.push('bad intro header');
        c.ws.terminate();
        return;
      }
      c.noise.authenticate(header);
      c.inBytes = c.inBytes.subarray(off + 4);
      c.gotIntro = true;
    }
    while (c.inBytes.length >= 3) {
      const size = c.inBytes.readUIntBE(0, 3);
      if (c.inBytes.length < 3 + size) return;
      const frame = c.inBytes.subarray(3, 3 + size);
      c.inBytes = c.inBytes.subarray(3 + size);
      try {
        onFrame(c, frame);
      } catch (err) {
        debugLog.push(`frame error: ${(err as Error).message}`);
        c.ws.terminate();
        return;
      }
    }
  };

  const onFrame = (c: Conn, frame: Buffer) => {
    if (c.stage === 'hello') {
      if (deaf) return;
      const hello = proto.HandshakeMessage.decode(frame);
      const clientEph = hello.clientHello?.ephemeral;
      if (!clientEph) throw new Error('no client hello');
      c.noise.authenticate(clientEph);
      c.noise.authenticate(c.eph.public);
      c.noise.mixIntoKey(Curve.sharedKey(c.eph.private, clientEph));
      const staticEnc = c.noise.encrypt(serverStatic.public);
      c.noise.mixIntoKey(Curve.sharedKey(serverStatic.private, clientEph));
      const payloadEnc = c.noise.encrypt(certChain);
      c.stage = 'finish';
      sendRaw(
        c,
        proto.HandshakeMessage.encode({ serverHello: { ephemeral: c.eph.public, static: staticEnc, payload: payloadEnc } }).finish(),
      );
      return;
    }
    if (c.stage === 'finish') {
      const finish = proto.HandshakeMessage.decode(frame).clientFinish;
      if (!finish?.static || !finish.payload) throw new Error('no client finish');
      const clientNoise = c.noise.decrypt(finish.static);
      c.noise.mixIntoKey(Curve.sharedKey(c.eph.private, clientNoise));
      const payload = proto.ClientPayload.decode(c.noise.decrypt(finish.payload));
      const [write, read] = c.noise.split();
      c.tx = { enc: read, dec: write, r: 0, w: 0 };
      c.stage = 'transport';
      onLogin(c, Buffer.from(clientNoise), payload);
      return;
    }
    const tx = c.tx!;
    const plain = aesDecryptGCM(frame, tx.dec, IV(tx.r++), EMPTY);
    c.queue = c.queue
      .then(async () => {
        const node = await decodeBinaryNode(plain);
        if (deaf || c.killed) return;
        await onNode(c, node);
      })
      .catch((err) => {
        debugLog.push(`node error: ${(err as Error).stack ?? err}`);
      });
  };

  // ---- login / pairing ------------------------------------------------------------------------------------------

  const onLogin = (c: Conn, clientNoise: Buffer, payload: proto.ClientPayload) => {
    const pairing = payload.devicePairingData;
    if (pairing && !payload.username) {
      const refs = Array.from({ length: 6 }, () => `2@${randomBytes(24).toString('base64')}`);
      c.reg = {
        refs: [...refs],
        noisePub: clientNoise,
        identityPub: Buffer.from(pairing.eIdent ?? EMPTY),
        registrationId: uintOf(Buffer.from(pairing.eRegid ?? EMPTY)),
        signedPreKey: {
          keyId: uintOf(Buffer.from(pairing.eSkeyId ?? EMPTY)),
          pub: Buffer.from(pairing.eSkeyVal ?? EMPTY),
          signature: Buffer.from(pairing.eSkeySig ?? EMPTY),
        },
      };
      sendNode(
        c,
        n('iq', { from: S_WHATSAPP_NET, type: 'set', id: `pair-${randomBytes(4).toString('hex')}`, xmlns: 'md' }, [
          n(
            'pair-device',
            {},
            refs.map((r) => n('ref', {}, Buffer.from(r))),
          ),
        ]),
      );
      return;
    }
    const phone = String(payload.username ?? '');
    const dev = devices.get(`${phone}:${payload.device ?? 0}`);
    if (!dev || dev.removed || !dev.noisePub.equals(clientNoise)) {
      debugLog.push(`login refused for ${phone}:${payload.device}`);
      sendNode(c, n('failure', { reason: '401', location: 'fake' }));
      setTimeout(() => c.ws.close(), 20);
      return;
    }
    // a new login of the same device replaces the old connection, as WhatsApp does
    for (const other of conns) {
      if (other !== c && other.device === dev && other.isOpen) streamError(other, {}, n('conflict', { type: 'replaced' }));
    }
    c.device = dev;
    sendNode(
      c,
      n('success', {
        t: String(now()),
        props: '1',
        abprops: '1',
        location: 'fake',
        lid: dev.lid,
        display_name: '',
        creation: String(now() - 86400),
      }),
    );
    // the offline queue: everything still owed, offline-marked, then the offline marker
    let count = 0;
    for (const d of owed) {
      if (d.device !== dev || d.acked || d.rejected) continue;
      count++;
      deliver(d, c, true);
    }
    sendNode(c, n('ib', { from: S_WHATSAPP_NET }, [n('offline', { count: String(count) })]));
  };

  const scanQr: WhatsAppFake['scanQr'] = async (qr, phone = DEFAULT_PHONE) => {
    const [ref, noiseB64, identB64, advB64] = qr.replace(/^https:\/\/wa\.me\/settings\/linked_devices#/, '').split(',');
    if (!ref || !noiseB64 || !identB64 || !advB64) throw new Error(`not a WhatsApp pairing QR: ${qr}`);
    const c = [...conns].find((x) => x.isOpen && x.reg?.refs.includes(ref));
    if (!c?.reg) throw new Error('no connection is waiting for that QR (expired ref?)');
    const reg = c.reg;
    if (!reg.noisePub.equals(Buffer.from(noiseB64, 'base64')) || !reg.identityPub.equals(Buffer.from(identB64, 'base64'))) {
      throw new Error('QR keys do not match the waiting connection');
    }
    return pairConnection(c, reg, phoneOf(phone), Buffer.from(advB64, 'base64'));
  };

  /**
   * What the phone does once it trusts the waiting connection `c` (QR scanned, or link code confirmed): pair-success
   * with an ADV signed device identity HMAC'd with `advSecret`; resolves when pair-device-sign came back and the 515 is out.
   */
  const pairConnection = async (c: Conn, reg: Registration, phone: string, advSecret: Buffer): Promise<void> => {
    const acct = account(phone);
    const deviceNo = acct.nextDevice++;
    const adv = advIdentity(acct, reg.identityPub);
    const signed = Buffer.from(
      proto.ADVSignedDeviceIdentity.encode({
        details: adv.details,
        accountSignatureKey: adv.accountSignatureKey,
        accountSignature: adv.accountSignature,
      }).finish(),
    );
    const hmac = hmacSign(signed, advSecret);
    const identityHmac = proto.ADVSignedDeviceIdentityHMAC.encode({ details: signed, hmac }).finish();
    const device: Device = {
      account: acct,
      device: deviceNo,
      jid: pnJid(phone, deviceNo),
      lid: `${acct.party.lidUser}:${deviceNo}@lid`,
      noisePub: reg.noisePub,
      identityPub: reg.identityPub,
      registrationId: reg.registrationId,
      signedPreKey: reg.signedPreKey,
      preKeys: new Map(),
      keyIndex: adv.keyIndex,
      removed: false,
    };
    const iqId = `pair-success-${randomBytes(4).toString('hex')}`;
    reg.pairIqId = iqId;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no pair-device-sign from the client')), 10_000);
      reg.pending = {
        device,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      sendNode(
        c,
        n('iq', { from: S_WHATSAPP_NET, type: 'set', id: iqId, xmlns: 'md' }, [
          n('pair-success', {}, [
            n('device-identity', {}, identityHmac),
            n('platform', { name: 'android' }),
            n('device', { jid: device.jid, lid: device.lid }),
          ]),
        ]),
      );
    });
  };

  const onPairSign = (c: Conn, iq: BinaryNode) => {
    const reg = c.reg;
    const pending = reg?.pending;
    if (!reg || !pending) return;
    const sign = getBinaryNodeChild(iq, 'pair-device-sign');
    const ident = bytes(getBinaryNodeChild(sign, 'device-identity'));
    if (!ident) {
      pending.reject(new Error('pair-device-sign without device-identity'));
      return;
    }
    const account = proto.ADVSignedDeviceIdentity.decode(ident);
    const dev = pending.device;
    const ok = Curve.verify(
      dev.identityPub,
      Buffer.concat([WA_ADV_DEVICE_SIG_PREFIX, Buffer.from(account.details ?? EMPTY), dev.identityPub, dev.account.party.identityPub32]),
      Buffer.from(account.deviceSignature ?? EMPTY),
    );
    if (!ok) {
      pending.reject(new Error('bad device signature in pair-device-sign'));
      return;
    }
    devices.set(`${dev.account.phone}:${dev.device}`, dev);
    reg.pending = undefined;
    c.reg = null;
    // WhatsApp ends the registration stream: the client must log in again with its new identity
    streamError(c, { code: '515' });
    pending.resolve();
  };

  // ---- pairing with a link code ("Link with phone number instead") -------------------------------------------------

  let linkCodeSeq = 0;
  const iqError = (c: Conn, iq: BinaryNode, code: string, text: string) =>
    sendNode(c, n('iq', { id: iq.attrs.id, type: 'error', from: S_WHATSAPP_NET }, [n('error', { code, text })]));

  /** `<iq xmlns="md" type="set"><link_code_companion_reg stage=…>`: the companion's `companion_hello` / `companion_finish`. */
  const onLinkCodeIq = (c: Conn, iq: BinaryNode, reg: BinaryNode) => {
    const stage = reg.attrs.stage;
    if (stage === 'companion_hello') {
      const wrapped = bytes(getBinaryNodeChild(reg, 'link_code_pairing_wrapped_companion_ephemeral_pub'));
      const authKey = bytes(getBinaryNodeChild(reg, 'companion_server_auth_key_pub'));
      const phone = phoneOf(reg.attrs.jid ?? '');
      if (!c.reg || !phone || wrapped?.length !== 80 || !authKey?.equals(c.reg.noisePub)) {
        debugLog.push(`companion_hello refused (registering: ${!!c.reg}, jid ${reg.attrs.jid}, wrapped ${wrapped?.length})`);
        return iqError(c, iq, '400', 'bad-request');
      }
      c.linkCode?.finish?.reject(new Error('the device requested a new pairing code'));
      const ref = Buffer.from(`2@${randomBytes(18).toString('base64')}`);
      c.linkCode = {
        phone,
        wrapped,
        ref,
        platformId: bytes(getBinaryNodeChild(reg, 'companion_platform_id'))?.toString() ?? '',
        platformDisplay: bytes(getBinaryNodeChild(reg, 'companion_platform_display'))?.toString() ?? '',
        seq: ++linkCodeSeq,
      };
      return iqResult(c, iq, [n('link_code_companion_reg', {}, [n('link_code_pairing_ref', {}, ref)])]);
    }
    if (stage === 'companion_finish') {
      const req = c.linkCode;
      const ref = bytes(getBinaryNodeChild(reg, 'link_code_pairing_ref'));
      if (!req?.finish || !ref?.equals(req.ref)) {
        debugLog.push('companion_finish without a primary_hello');
        return iqError(c, iq, '404', 'item-not-found');
      }
      // the phone (enterPairingCode) checks the bundle and answers the IQ
      return req.finish.resolve(iq);
    }
    debugLog.push(`link_code_companion_reg stage=${stage}`);
    return iqError(c, iq, '400', 'bad-request');
  };

  const enterPairingCode: WhatsAppFake['enterPairingCode'] = async (code, phone) => {
    const typed = code.replace(/[\s-]/g, '').toUpperCase();
    if (typed.length !== 8) throw new Error(`a pairing code has 8 characters, got ${JSON.stringify(code)}`);
    const want = phone === undefined ? undefined : phoneOf(phone);
    // the request reaches the phone as a push notification: while none is pending at all, give it a moment to arrive
    const requests = () =>
      [...conns].filter((x) => x.isOpen && x.reg && !x.reg.pending && x.linkCode).sort((a, b) => b.linkCode!.seq - a.linkCode!.seq);
    const deadline = Date.now() + 5000;
    while (requests().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const c = requests().find((x) => !want || x.linkCode!.phone === want);
    if (!c?.reg || !c.linkCode) {
      const pending = requests().map((x) => x.linkCode!.phone);
      throw new Error(
        `no device is waiting to link${want ? ` to ${want}` : ''} with a pairing code (pending: ${pending.join(', ') || 'none'})`,
      );
    }
    const req = c.linkCode;
    const reg = c.reg;
    if (req.finish) throw new Error('a pairing code is already being entered for that device');
    const acct = account(req.phone);

    // the companion's ephemeral key, unwrapped with the typed code (a wrong code gives 32 random bytes: CTR has no tag)
    const w = req.wrapped;
    const companionEph = aesCtr(w.subarray(48, 80), await pairingCodeKey(typed, w.subarray(0, 32)), w.subarray(32, 48));
    // the phone's ephemeral key, wrapped with the typed code as well
    const eph = Curve.generateKeyPair();
    const salt = randomBytes(32);
    const iv = randomBytes(16);
    const wrappedPrimary = Buffer.concat([salt, iv, aesCtr(Buffer.from(eph.public), await pairingCodeKey(typed, salt), iv)]);
    const finishIq = await new Promise<BinaryNode>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        req.finish = undefined;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error('no companion_finish from the client within 10 s'));
      }, 10_000);
      req.finish = {
        resolve: (iq) => {
          done();
          resolve(iq);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      };
      sendNode(
        c,
        n('notification', { from: S_WHATSAPP_NET, type: 'link_code_companion_reg', id: String(randomInt(1, 2 ** 31)), t: String(now()) }, [
          n('link_code_companion_reg', { stage: 'primary_hello' }, [
            n('link_code_pairing_ref', {}, req.ref),
            n('primary_identity_pub', {}, acct.party.identityPub32),
            n('link_code_pairing_wrapped_primary_ephemeral_pub', {}, wrappedPrimary),
          ]),
        ]),
      );
    });

    // companion_finish: salt (32) | iv (12) | AES-256-GCM(companion identity | primary identity | random (32 each))
    // under HKDF-SHA256(ECDH(ephemerals), salt, 'link_code_pairing_key_bundle_encryption_key')
    const finish = getBinaryNodeChild(finishIq, 'link_code_companion_reg');
    const bundle = bytes(getBinaryNodeChild(finish, 'link_code_pairing_wrapped_key_bundle')) ?? EMPTY;
    const companionIdentity = bytes(getBinaryNodeChild(finish, 'companion_identity_public'));
    const shared = Curve.sharedKey(eph.private, companionEph);
    let plain: Buffer | undefined;
    if (bundle.length > 32 + 12 + 16) {
      const key = Buffer.from(hkdfSync('sha256', shared, bundle.subarray(0, 32), 'link_code_pairing_key_bundle_encryption_key', 32));
      try {
        const d = createDecipheriv('aes-256-gcm', key, bundle.subarray(32, 44));
        d.setAuthTag(bundle.subarray(bundle.length - 16));
        plain = Buffer.concat([d.update(bundle.subarray(44, bundle.length - 16)), d.final()]);
      } catch {
        plain = undefined;
      }
    }
    if (!plain) {
      iqError(c, finishIq, '401', 'not-authorized');
      throw new Error(`wrong pairing code ${JSON.stringify(code)}: the phone cannot decrypt the companion's key bundle`);
    }
    const random = plain.subarray(64, 96);
    if (
      plain.length !== 96 ||
      !companionIdentity?.equals(reg.identityPub) ||
      !plain.subarray(0, 32).equals(reg.identityPub) ||
      !plain.subarray(32, 64).equals(acct.party.identityPub32)
    ) {
      iqError(c, finishIq, '400', 'bad-request');
      throw new Error("companion_finish: the key bundle does not carry the registering device's and the account's identity keys");
    }
    // both sides: adv_secret = HKDF-SHA256(ECDH(ephemerals) | ECDH(identities) | random, no salt, 'adv_secret')
    const identityShared = Curve.sharedKey(acct.party.identity.privKey, reg.identityPub);
    const advSecret = Buffer.from(hkdfSync('sha256', Buffer.concat([shared, identityShared, random]), EMPTY, 'adv_secret', 32));
    iqResult(c, finishIq);
    c.linkCode = null;
    return pairConnection(c, reg, req.phone, advSecret);
  };

  // ---- inbound node dispatch --------------------------------------------------------------------------------------

  const onNode = async (c: Conn, node: BinaryNode) => {
    switch (node.tag) {
      case 'iq':
        return onIq(c, node);
      case 'message':
        return onClientMessage(c, node);
      case 'receipt':
        return onReceipt(c, node);
      case 'ack':
        if (node.attrs.class !== 'message') return;
        if (node.attrs.error) return onNack(c, node.attrs.id ?? '', node.attrs.error);
        if (loseThisReceipt(c, [node.attrs.id ?? ''])) return;
        markAcked(c, [node.attrs.id ?? '']);
        return;
      case 'chatstate': {
        const child = children(node)[0];
        if (child) chatstateLog.push({ to: node.attrs.to ?? '', state: child.attrs.media === 'audio' ? 'recording' : child.tag });
        return;
      }
      case 'presence':
        presenceLog.push(node.attrs.type ?? 'available');
        return;
      case 'ib':
      case 'call':
        return;
      default:
        debugLog.push(`unhandled node <${node.tag}>`);
    }
  };

  const markAcked = (c: Conn, ids: string[]) => {
    for (const d of owed) if (d.device === c.device && ids.includes(d.id)) d.acked = true;
  };

  /** A negative ack: 500 (baileys, after a retry receipt or a handler error) keeps the message owed; others end it. */
  const onNack = (c: Conn, id: string, error: string) => {
    debugLog.push(`nack ${error} for ${id}`);
    for (const d of owed) {
      if (d.device !== c.device || d.id !== id) continue;
      d.nacks.push(error);
      if (error !== '500' && !d.acked) d.rejected = true;
    }
  };

  /** {@link WhatsAppFake.loseNextReceipt}: swallows a receipt for an owed message and kills the connection. */
  const loseThisReceipt = (c: Conn, ids: string[]): boolean => {
    if (loseReceipts <= 0) return false;
    if (!owed.some((d) => d.device === c.device && !d.acked && ids.includes(d.id))) return false;
    loseReceipts--;
    debugLog.push(`receipt for ${ids.join(',')} lost with the connection`);
    c.killed = true;
    c.ws.terminate();
    return true;
  };

  const onReceipt = async (c: Conn, node: BinaryNode) => {
    const ids = [node.attrs.id ?? '', ...getBinaryNodeChildren(getBinaryNodeChild(node, 'list'), 'item').map((i) => i.attrs.id ?? '')];
    const type = node.attrs.type;
    const isDelivery = type === undefined || type === 'inactive' || type === 'sender' || type === 'peer_msg';
    if (isDelivery && loseThisReceipt(c, ids)) return;
    if (type !== 'retry') markAcked(c, ids);
    if (type === 'read' || type === 'read-self') readLog.push(...ids);
    sendNode(
      c,
      n('ack', {
        class: 'receipt',
        id: node.attrs.id,
        from: node.attrs.to,
        type,
        participant: node.attrs.participant,
      }),
    );
    // the sender's phone answers the retry receipt (after the server acked it)
    if (type === 'retry') await onRetryReceipt(c, node);
  };

  /**
   * A retry receipt: the contact's phone re-encrypts the message for the device on a fresh session (keys from the
   * receipt, else the device's prekeys the server holds) and sends it again, same id, `<enc type=pkmsg count=…>`.
   */
  const onRetryReceipt = async (c: Conn, node: BinaryNode) => {
    const dev = c.device;
    const id = node.attrs.id ?? '';
    const retry = getBinaryNodeChild(node, 'retry');
    const count = Number(retry?.attrs.count) || 1;
    const mine = owed.filter((d) => d.device === dev && d.id === id);
    const d = mine.findLast((x) => !x.acked) ?? mine.at(-1);
    if (!dev || !d) {
      debugLog.push(`retry receipt (count ${count}) for unknown message ${id}`);
      return;
    }
    d.retries++;
    if (d.retries > MAX_RETRIES) {
      debugLog.push(`retry receipt ${d.retries} for ${id}: retry limit reached, not answered`);
      return;
    }
    const keys = getBinaryNodeChild(node, 'keys');
    let bundle: DeviceBundle;
    try {
      bundle = keys ? bundleFromRetryKeys(dev, node, keys) : deviceBundle(dev);
    } catch (err) {
      debugLog.push(`retry receipt for ${id} refused: ${(err as Error).message}`);
      return;
    }
    const addr = deviceAddr(dev);
    try {
      await startSession(d.sender, addr, bundle);
      const { type: sigType, body } = await new libsignal.SessionCipher(d.sender.storage, addr).encrypt(Buffer.from(d.plaintext));
      if (sigType !== 3) throw new Error(`expected a pkmsg, got Signal type ${sigType}`);
      const mediatype = children(d.node).find((e) => e.tag === 'enc')?.attrs.mediatype;
      const enc = n('enc', { v: '2', type: 'pkmsg', count: String(count), mediatype }, Buffer.from(body as unknown as Uint8Array));
      d.node = { ...d.node, content: [enc] };
    } catch (err) {
      debugLog.push(`retry for ${id} failed: ${(err as Error).message}`);
      return;
    }
    debugLog.push(
      `retry ${count} for ${id} answered (${keys ? 'keys from the receipt' : bundle.preKey ? `prekey ${bundle.preKey.keyId}` : 'signed prekey only'})`,
    );
    d.rejected = false;
    if (!deaf && c.isOpen && !c.killed) deliver(d, c, false);
  };

  /** The `<keys>` of a retry receipt (identity, one-time `key`, signed `skey`, ADV `device-identity`) as a bundle. */
  const bundleFromRetryKeys = (dev: Device, receipt: BinaryNode, keys: BinaryNode): DeviceBundle => {
    const identityPub = bytes(getBinaryNodeChild(keys, 'identity'));
    const signedPreKey = readSkey(getBinaryNodeChild(keys, 'skey'));
    if (!identityPub || !signedPreKey) throw new Error('<keys> without identity or skey');
    const advNode = bytes(getBinaryNodeChild(keys, 'device-identity'));
    if (advNode) {
      const adv = proto.ADVSignedDeviceIdentity.decode(advNode);
      const ok = Curve.verify(
        dev.account.party.identityPub32,
        Buffer.concat([WA_ADV_ACCOUNT_SIG_PREFIX, Buffer.from(adv.details ?? EMPTY), identityPub]),
        Buffer.from(adv.accountSignature ?? EMPTY),
      );
      if (!ok) throw new Error('device-identity not signed by the account for that identity key');
    }
    if (!identityPub.equals(dev.identityPub)) debugLog.push(`retry keys carry a new identity for ${dev.jid}`);
    const keyNode = getBinaryNodeChild(keys, 'key');
    const preKeyPub = bytes(getBinaryNodeChild(keyNode, 'value'));
    const preKeyId = uintOf(bytes(getBinaryNodeChild(keyNode, 'id')));
    const regNode = bytes(getBinaryNodeChild(receipt, 'registration'));
    dev.signedPreKey = signedPreKey;
    dev.preKeys.delete(preKeyId);
    return {
      registrationId: regNode ? uintOf(regNode) : dev.registrationId,
      identityPub,
      signedPreKey,
      ...(keyNode && preKeyPub ? { preKey: { keyId: preKeyId, pub: preKeyPub } } : {}),
    };
  };

  /** The device's bundle as the server hands it out: its next one-time prekey (consumed) or the signed prekey alone. */
  const deviceBundle = (dev: Device): DeviceBundle => {
    const [pkId, pkPub] = [...dev.preKeys.entries()][0] ?? [];
    if (pkId !== undefined) dev.preKeys.delete(pkId);
    return {
      registrationId: dev.registrationId,
      identityPub: dev.identityPub,
      signedPreKey: dev.signedPreKey,
      ...(pkId !== undefined && pkPub ? { preKey: { keyId: pkId, pub: pkPub } } : {}),
    };
  };

  /** A new outgoing Signal session from `sender` to a device (closing any open one). */
  const startSession = (sender: Party, addr: libsignal.ProtocolAddress, b: DeviceBundle) =>
    new libsignal.SessionBuilder(sender.storage, addr).initOutgoing({
      registrationId: b.registrationId,
      identityKey: generateSignalPubKey(b.identityPub),
      signedPreKey: {
        keyId: b.signedPreKey.keyId,
        publicKey: generateSignalPubKey(b.signedPreKey.pub),
        signature: b.signedPreKey.signature,
      },
      ...(b.preKey ? { preKey: { keyId: b.preKey.keyId, publicKey: generateSignalPubKey(b.preKey.pub) } } : {}),
    } as Parameters<libsignal.SessionBuilder['initOutgoing']>[0]);

  const onIq = async (c: Conn, iq: BinaryNode) => {
    const { type, xmlns } = iq.attrs;
    if (type === 'result' || type === 'error') {
      if (getBinaryNodeChild(iq, 'pair-device-sign')) onPairSign(c, iq);
      return;
    }
    const first = children(iq)[0];
    const dev = c.device;
    switch (xmlns) {
      case 'w:p':
        return iqResult(c, iq);
      case 'passive':
        return iqResult(c, iq);
      case 'encrypt': {
        if (!dev) return iqResult(c, iq);
        if (first?.tag === 'count') return iqResult(c, iq, [n('count', { value: String(dev.preKeys.size) })]);
        if (first?.tag === 'digest') return iqResult(c, iq, [n('digest', {})]);
        if (first?.tag === 'key')
          return iqResult(c, iq, [
            n(
              'list',
              {},
              children(first).map((u) => keyBundle(u.attrs.jid ?? '')),
            ),
          ]);
        if (first?.tag === 'rotate') {
          const skey = getBinaryNodeChild(first, 'skey');
          dev.signedPreKey = readSkey(skey) ?? dev.signedPreKey;
          return iqResult(c, iq);
        }
        // prekey upload
        const list = getBinaryNodeChild(iq, 'list');
        for (const k of getBinaryNodeChildren(list, 'key')) {
          const id = uintOf(bytes(getBinaryNodeChild(k, 'id')));
          const pub = bytes(getBinaryNodeChild(k, 'value'));
          if (pub) dev.preKeys.set(id, pub);
        }
        dev.signedPreKey = readSkey(getBinaryNodeChild(iq, 'skey')) ?? dev.signedPreKey;
        return iqResult(c, iq);
      }
      case 'usync':
        return iqResult(c, iq, [usync(first!)]);
      case 'abt':
        return iqResult(c, iq, [n('props', { protocol: '1' }, [])]);
      case 'privacy':
        if (type === 'get') {
          const cats: Array<[string, string]> = [
            ['last', 'all'],
            ['online', 'all'],
            ['profile', 'all'],
            ['status', 'all'],
            ['groupadd', 'all'],
            ['readreceipts', 'all'],
            ['calladd', 'all'],
          ];
          return iqResult(c, iq, [
            n(
              'privacy',
              {},
              cats.map(([name, value]) => n('category', { name, value })),
            ),
          ]);
        }
        return iqResult(c, iq);
      case 'blocklist':
        return iqResult(c, iq, [n('list', {}, [])]);
      case 'w:g2': {
        const to = iq.attrs.to ?? '';
        const g = groups.get(to);
        if (type === 'get' && first?.tag === 'query') {
          if (!g)
            return sendNode(
              c,
              n('iq', { id: iq.attrs.id, type: 'error', from: to }, [n('error', { code: '404', text: 'item-not-found' })]),
            );
          return iqResult(c, iq, [groupNode(to, g)], to);
        }
        if (type === 'get' && first?.tag === 'participating') {
          return iqResult(c, iq, [
            n(
              'groups',
              {},
              [...groups.entries()].map(([jid, grp]) => groupNode(jid, grp)),
            ),
          ]);
        }
        debugLog.push(`w:g2 ${type} ${first?.tag}`);
        return iqResult(c, iq);
      }
      case 'md':
        if (first?.tag === 'link_code_companion_reg') return onLinkCodeIq(c, iq, first);
        if (first?.tag === 'remove-companion-device' && dev) dev.removed = true;
        return iqResult(c, iq);
      case 'w:m': {
        if (first?.tag !== 'media_conn') break;
        if (!media) {
          debugLog.push(`media_conn refused: ${mediaError}`);
          return sendNode(
            c,
            n('iq', { id: iq.attrs.id, type: 'error', from: S_WHATSAPP_NET }, [n('error', { code: '503', text: 'service-unavailable' })]),
          );
        }
        // as WhatsApp: an upload auth token with its ttl, and the upload hosts in order of preference
        const auth = randomBytes(36).toString('base64');
        mediaAuths.add(auth);
        return iqResult(c, iq, [
          n(
            'media_conn',
            { auth, ttl: '21600', auth_ttl: '21600', max_buckets: '12' },
            FAKE_WA_MEDIA_HOSTS.map((hostname, i) =>
              n('host', {
                hostname,
                class: i === FAKE_WA_MEDIA_HOSTS.length - 1 ? 'fallback' : 'pop',
                maxContentLengthBytes: String(MEDIA_MAX_BYTES),
              }),
            ),
          ),
        ]);
      }
    }
    debugLog.push(`unknown iq xmlns=${xmlns} type=${type} child=${first?.tag}`);
    return iqResult(c, iq);
  };

  const readSkey = (skey: BinaryNode | undefined) => {
    if (!skey) return undefined;
    const pub = bytes(getBinaryNodeChild(skey, 'value'));
    const signature = bytes(getBinaryNodeChild(skey, 'signature'));
    if (!pub || !signature) return undefined;
    return { keyId: uintOf(bytes(getBinaryNodeChild(skey, 'id'))), pub, signature };
  };

  /** A key bundle `<user>` for a JID: a party the fake plays, or another linked device's uploaded keys. */
  const keyBundle = (jid: string): BinaryNode => {
    const dec = jidDecode(jid);
    const deviceNo = dec?.device ?? 0;
    if (deviceNo === 0) return party(jid).bundleNode(jid);
    const p = party(jid);
    const d = devices.get(`${p.phone}:${deviceNo}`);
    if (!d) return n('user', { jid }, [n('error', { code: '404', text: 'item-not-found' })]);
    const [pkId, pkPub] = [...d.preKeys.entries()][0] ?? [];
    if (pkId !== undefined) d.preKeys.delete(pkId);
    return n('user', { jid }, [
      n('registration', {}, encodeBigEndian(d.registrationId, 4)),
      n('type', {}, Buffer.from([5])),
      n('identity', {}, d.identityPub),
      n('skey', {}, [
        n('id', {}, encodeBigEndian(d.signedPreKey.keyId, 3)),
        n('value', {}, d.signedPreKey.pub),
        n('signature', {}, d.signedPreKey.signature),
      ]),
      ...(pkId !== undefined && pkPub ? [n('key', {}, [n('id', {}, encodeBigEndian(pkId, 3)), n('value', {}, pkPub)])] : []),
    ]);
  };

  /** The `<usync>` answer: devices (contacts: device 0; accounts: the phone + linked devices), LIDs, contact=in. */
  const usync = (req: BinaryNode): BinaryNode => {
    const protocols = children(getBinaryNodeChild(req, 'query')).map((p) => p.tag);
    const users = children(getBinaryNodeChild(req, 'list'));
    const out = users.map((u) => {
      const contactNode = getBinaryNodeChild(u, 'contact');
      const raw = u.attrs.jid ?? (typeof contactNode?.content === 'string' ? contactNode.content : (bytes(contactNode)?.toString() ?? ''));
      const p = party(raw);
      const jid = u.attrs.jid ?? p.jid;
      const content: BinaryNode[] = [];
      for (const proto_ of protocols) {
        if (proto_ === 'devices') {
          const acct = accounts.get(p.phone);
          const linked = [...devices.values()].filter((d) => d.account === acct && !d.removed);
          content.push(
            n('devices', {}, [
              n('device-list', {}, [
                n('device', { id: '0' }),
                ...linked.map((d) => n('device', { id: String(d.device), 'key-index': String(d.keyIndex) })),
              ]),
              ...(linked.length ? [n('key-index-list', { ts: String(now()) })] : []),
            ]),
          );
        } else if (proto_ === 'lid') {
          content.push(n('lid', { val: p.lid }));
        } else if (proto_ === 'contact') {
          content.push(n('contact', { type: 'in' }));
        } else {
          content.push(n(proto_, {}));
        }
      }
      return n('user', { jid }, content);
    });
    return n('usync', { ...req.attrs }, [n('result', {}, []), n('list', {}, out)]);
  };

  const groupNode = (jid: string, g: { subject: string; participants: string[]; creation: number }): BinaryNode =>
    n(
      'group',
      {
        id: jid.split('@')[0],
        subject: g.subject,
        s_t: String(g.creation),
        s_o: pnJid(g.participants[0] ?? DEFAULT_PHONE),
        creation: String(g.creation),
        creator: pnJid(g.participants[0] ?? DEFAULT_PHONE),
        addressing_mode: 'pn',
        size: String(g.participants.length),
      },
      g.participants.map((ph, i) => n('participant', { jid: pnJid(ph), lid: party(ph).lid, type: i === 0 ? 'superadmin' : undefined })),
    );

  // ---- messages the device sends ---------------------------------------------------------------------------------

  const decryptFor = async (p: Party, from: libsignal.ProtocolAddress, enc: BinaryNode): Promise<proto.Message> => {
    const cipher = new libsignal.SessionCipher(p.storage, from);
    const body = bytes(enc) ?? EMPTY;
    const padded = enc.attrs.type === 'pkmsg' ? await cipher.decryptPreKeyWhisperMessage(body) : await cipher.decryptWhisperMessage(body);
    return proto.Message.decode(unpadRandomMax16(padded));
  };

  const onClientMessage = async (c: Conn, node: BinaryNode) => {
    const dev = c.device;
    const id = node.attrs.id ?? '';
    const to = node.attrs.to ?? '';
    sendNode(c, n('ack', { class: 'message', id, from: to, t: String(now()) }));
    if (!dev) return;
    sendAttempts.set(id, (sendAttempts.get(id) ?? 0) + 1);
    // WhatsApp drops a second stanza with the same id to the same chat (a resend after a lost ack): acked, not
    // forwarded. Retry resends (`<enc count=…>`, answering a retry receipt) are forwarded.
    const isRetryResend = [node, ...children(getBinaryNodeChild(node, 'participants'))]
      .flatMap((x) => getBinaryNodeChildren(x, 'enc'))
      .some((e) => e.attrs.count !== undefined);
    const sentKey = `${to} ${id}`;
    if (sentKeys.has(sentKey) && !isRetryResend) {
      debugLog.push(`duplicate message ${id} to ${to} (attempt ${sendAttempts.get(id)}) dropped`);
      return;
    }
    sentKeys.add(sentKey);
    const from = deviceAddr(dev);
    const isGroup = to.endsWith('@g.us');
    // the account's "Message yourself" chat (`to` its own PN or LID): the only recipients are the account's own devices,
    // and the copy for the phone (device 0, a deviceSentMessage) is the one the fake reads
    const toSelf = !isGroup && party(to) === dev.account.party;
    const recipients: string[] = [];
    let primary: proto.IMessage | undefined;
    let encType = '';
    let skdmParty: Party | undefined;
    for (const toNode of getBinaryNodeChildren(getBinaryNodeChild(node, 'participants'), 'to')) {
      const rjid = toNode.attrs.jid ?? '';
      recipients.push(rjid);
      const enc = getBinaryNodeChild(toNode, 'enc');
      if (!enc) continue;
      const p = party(rjid);
      // another linked device of the account: only that device can decrypt its copy (the server cannot)
      if ((jidDecode(rjid)?.device ?? 0) !== 0 && accounts.get(p.phone)) continue;
      try {
        let msg: proto.IMessage = await decryptFor(p, from, enc);
        if (msg.deviceSentMessage?.message) msg = msg.deviceSentMessage.message;
        const skdm = msg.senderKeyDistributionMessage;
        if (skdm?.axolotlSenderKeyDistributionMessage && skdm.groupId) {
          await new GroupSessionBuilder(p.senderKeyStore).process(
            new SenderKeyName(skdm.groupId, from),
            new SenderKeyDistributionMessage(null, null, null, null, skdm.axolotlSenderKeyDistributionMessage),
          );
          skdmParty ??= p;
        }
        const isOwnPhone = dev.account.party === p;
        if (!isGroup && isOwnPhone === toSelf && !primary) {
          primary = msg;
          encType = enc.attrs.type ?? '';
        }
      } catch (err) {
        debugLog.push(`decrypt ${enc.attrs.type} for ${rjid} failed: ${(err as Error).message}`);
      }
    }
    const sk = getBinaryNodeChildren(node, 'enc').find((e) => e.attrs.type === 'skmsg');
    if (isGroup && sk) {
      const g = groups.get(to);
      const candidates = [skdmParty, ...(g?.participants ?? []).map((ph) => party(ph))].filter((x): x is Party => !!x);
      for (const p of candidates) {
        try {
          const plain = await new GroupCipher(p.senderKeyStore, new SenderKeyName(to, from)).decrypt(bytes(sk) ?? EMPTY);
          primary = proto.Message.decode(unpadRandomMax16(plain));
          encType = 'skmsg';
          break;
        } catch (err) {
          debugLog.push(`skmsg decrypt as ${p.phone} failed: ${(err as Error).message}`);
        }
      }
    }
    if (!primary) {
      debugLog.push(`could not decrypt message ${id} to ${to}`);
      return;
    }
    const record = describe(primary, { id, to, type: node.attrs.type ?? '', recipients, encType });
    sentLog.push(record);
    for (const w of [...waiters]) {
      if (w.pred(record)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(record);
      }
    }
    // the recipient's phone confirms delivery; for a note to self that is the account's own phone, whose receipt reaches
    // the sending device as a `sender` receipt with the chat as `recipient` (baileys: fromMe, remoteJid = the chat)
    if (toSelf) sendNode(c, n('receipt', { from: to, recipient: to, type: 'sender', id, t: String(now()) }));
    else if (!isGroup) sendNode(c, n('receipt', { from: to, id, t: String(now()) }));
  };

  const describe = (m: proto.IMessage, base: { id: string; to: string; type: string; recipients: string[]; encType: string }): FakeSent => {
    const rec: FakeSent = { ...base, message: m };
    if (!base.to.endsWith('@g.us')) rec.toPhone = party(base.to).phone;
    const text = textOf(m);
    if (text !== undefined) rec.text = text;
    const ctx = contextOf(m);
    if (ctx?.stanzaId) rec.quotedId = ctx.stanzaId;
    if (ctx?.mentionedJid?.length) rec.mentions = ctx.mentionedJid;
    if (m.reactionMessage) rec.reaction = { key: m.reactionMessage.key ?? {}, text: m.reactionMessage.text ?? '' };
    const media = sentMedia(m, base.id);
    if (media) rec.media = media;
    const pm = m.protocolMessage ?? m.editedMessage?.message?.protocolMessage;
    if (pm?.type === proto.Message.ProtocolMessage.Type.MESSAGE_EDIT) {
      const editText = textOf(pm.editedMessage);
      rec.edit = { id: pm.key?.id ?? '', ...(editText !== undefined ? { text: editText } : {}) };
    }
    return rec;
  };

  /** {@link FakeSent.media}: the upload the message points at, decrypted (or why not). */
  const sentMedia = (m: proto.IMessage, id: string): FakeSentMedia | undefined => {
    const mc = mediaContentOf(m);
    if (!mc) return undefined;
    const { kind, c } = mc;
    const out: FakeSentMedia = { kind, mimetype: c.mimetype ?? '', data: EMPTY };
    if (c.fileName) out.fileName = c.fileName;
    if (c.caption) out.caption = c.caption;
    if (kind === 'audio') out.ptt = !!c.ptt;
    try {
      const where = c.directPath ?? c.url;
      if (!where) throw new Error('message has neither directPath nor url');
      const path = new URL(where, 'https://mmg.whatsapp.net').pathname;
      const blob = blobs.get(path);
      if (!blob) throw new Error(`nothing uploaded at ${path}`);
      out.data = decryptMedia(blob.data, kind, c);
    } catch (err) {
      out.error = (err as Error).message;
      debugLog.push(`media of message ${id}: ${out.error}`);
    }
    return out;
  };

  // ---- messages to the device -----------------------------------------------------------------------------------

  const deliver = (d: Delivery, c: Conn, offline: boolean) => {
    d.delivered++;
    if (loseNext > 0) {
      loseNext--;
      c.ws.terminate();
      return;
    }
    sendNode(c, offline ? { ...d.node, attrs: { ...d.node.attrs, offline: '1' } } : d.node);
  };

  const targetAccount = (opts?: FakeSendOptions): Account => {
    const phone = opts?.to ? phoneOf(opts.to) : lastAccount;
    const acct = phone ? accounts.get(phone) : undefined;
    if (!acct) throw new Error('no linked account: call linkDevice() or scanQr() first');
    return acct;
  };

  const sendMessage: WhatsAppFake['sendMessage'] = async (from, message, opts = {}) => {
    const acct = targetAccount(opts);
    const sender = party(from);
    const id = opts.id ?? newMessageId();
    const t = String(opts.timestamp ?? now());
    const group = opts.group;
    if (group) {
      const g = groups.get(group);
      if (!g) groups.set(group, { subject: 'Group', participants: [acct.phone, sender.phone], creation: now() });
      else if (!g.participants.includes(sender.phone)) g.participants.push(sender.phone);
    }
    const type = opts.stanzaType ?? (message.reactionMessage ? 'reaction' : mediaContentOf(message) ? 'media' : 'text');
    const lid = opts.addressing === 'lid';
    const attrs: Record<string, string | undefined> = group
      ? {
          from: group,
          participant: lid ? sender.lid : sender.jid,
          ...(lid ? { participant_pn: sender.jid } : { participant_lid: sender.lid }),
          addressing_mode: lid ? 'lid' : 'pn',
          id,
          t,
          type,
          notify: opts.pushName,
        }
      : {
          from: lid ? sender.lid : sender.jid,
          ...(lid ? { sender_pn: sender.jid, addressing_mode: 'lid' } : { sender_lid: sender.lid }),
          id,
          t,
          type,
          notify: opts.pushName,
        };
    await fanOut(acct, sender, message, attrs, { mediatype: encMediaType(message) });
    return id;
  };

  /**
   * Encrypts `message` from `sender` (a contact's phone, or the account's own phone) to every linked device of `acct`
   * (one Signal session per device: pkmsg on a new one, msg afterwards) and delivers — or queues — one stanza per device.
   */
  const fanOut = async (
    acct: Account,
    sender: Party,
    message: proto.IMessage,
    attrs: Record<string, string | undefined>,
    encAttrs: Record<string, string | undefined> = {},
  ) => {
    const plaintext = writeRandomPadMax16(proto.Message.encode(message).finish());
    const targets = [...devices.values()].filter((d) => d.account === acct && !d.removed);
    if (!targets.length) throw new Error(`account ${acct.phone} has no linked device`);
    for (const dev of targets) {
      const addr = deviceAddr(dev);
      if (!sender.hasSession(addr)) await startSession(sender, addr, deviceBundle(dev));
      const { type: sigType, body } = await new libsignal.SessionCipher(sender.storage, addr).encrypt(plaintext);
      const enc = n('enc', { v: '2', type: sigType === 3 ? 'pkmsg' : 'msg', ...encAttrs }, Buffer.from(body as unknown as Uint8Array));
      const d: Delivery = {
        id: attrs.id ?? '',
        device: dev,
        node: n('message', attrs, [enc]),
        sender,
        plaintext,
        delivered: 0,
        acked: false,
        rejected: false,
        retries: 0,
        nacks: [],
      };
      owed.push(d);
      if (!deaf) {
        const c = [...conns].find((x) => x.device === dev && x.isOpen);
        if (c) deliver(d, c, false);
      }
    }
  };

  /**
   * The account's own phone writes `text` to `peer` (default: the account itself, its "Message yourself" chat). As
   * WhatsApp fans a message out to the sender's other devices, each linked device gets a copy from the phone (device 0)
   * with `recipient` = the chat: `<message from="<account>" recipient="<peer>" …>` whose plaintext is a
   * `deviceSentMessage { destinationJid: <peer>, message }`. baileys' decodeMessageNode then reports `fromMe: true` and
   * `remoteJid` = the `recipient` attribute (the account's own JID for a note to self).
   */
  const sendFromPhone: WhatsAppFake['sendFromPhone'] = async (text, opts = {}) => {
    const acct = targetAccount(opts);
    const phone = acct.party;
    if (opts.peer?.endsWith('@g.us')) throw new Error('sendFromPhone: 1:1 chats only (not a group JID)');
    const peer = opts.peer === undefined ? phone : party(opts.peer);
    const lid = opts.addressing === 'lid';
    const id = opts.id ?? newMessageId();
    const destinationJid = lid ? peer.lid : peer.jid;
    const attrs: Record<string, string | undefined> = {
      from: lid ? phone.lid : phone.jid,
      recipient: destinationJid,
      ...(lid ? { addressing_mode: 'lid', peer_recipient_pn: peer.jid } : {}),
      id,
      t: String(opts.timestamp ?? now()),
      type: 'text',
    };
    await fanOut(acct, phone, { deviceSentMessage: { destinationJid, message: { conversation: text } } }, attrs);
    return id;
  };

  /** contextInfo for a quote / mentions in `opts`, if any. */
  const contextInfoFor = (opts: FakeSendOptions): proto.IContextInfo | undefined =>
    opts.quoted || opts.mentions?.length
      ? {
          ...(opts.quoted
            ? {
                stanzaId: opts.quoted.id,
                participant: opts.quoted.participant,
                quotedMessage: { conversation: opts.quoted.text ?? '' },
              }
            : {}),
          ...(opts.mentions?.length ? { mentionedJid: opts.mentions } : {}),
        }
      : undefined;

  const sendText: WhatsAppFake['sendText'] = (from, text, opts = {}) => {
    const contextInfo = contextInfoFor(opts);
    const message: proto.IMessage = contextInfo ? { extendedTextMessage: { text, contextInfo } } : { conversation: text };
    return sendMessage(from, message, opts);
  };

  /** Stores an encrypted upload; returns the JSON WhatsApp's upload endpoint answers (url on mmg.whatsapp.net, direct_path). */
  const storeBlob = (mmsType: string, data: Buffer) => {
    const pathname = `/v/t62.${DIRECT_PATH_KIND[mmsType] ?? '7118-24'}/${randomInt(1e8, 1e9)}_${randomInt(1e14, 2 ** 47)}_${randomInt(1e14, 2 ** 47)}_n.enc`;
    const oh = `01_${randomBytes(30).toString('base64url')}`;
    const oe = (now() + 30 * 86400).toString(16).toUpperCase();
    const directPath = `${pathname}?ccb=11-4&oh=${oh}&oe=${oe}&_nc_sid=5e03e0`;
    blobs.set(pathname, { data, oh });
    return { url: `https://mmg.whatsapp.net${directPath}&mms3=true`, direct_path: directPath, handle: null, object_id: randomUUID() };
  };

  const sendMedia: WhatsAppFake['sendMedia'] = async (from, file, opts = {}) => {
    if (!media) throw new Error(`the fake's media server is not running: ${mediaError}`);
    const enc = encryptMedia(file.data, file.kind);
    const { url, direct_path: directPath } = storeBlob(file.kind, enc.blob);
    const contextInfo = contextInfoFor(opts);
    const common = {
      url,
      directPath,
      mediaKey: enc.mediaKey,
      fileEncSha256: enc.fileEncSha256,
      fileSha256: enc.fileSha256,
      fileLength: enc.fileLength,
      mimetype: file.mimetype,
      mediaKeyTimestamp: now(),
      ...(contextInfo ? { contextInfo } : {}),
    };
    const caption = file.caption !== undefined ? { caption: file.caption } : {};
    const seconds = file.seconds !== undefined ? { seconds: file.seconds } : {};
    let message: proto.IMessage;
    switch (file.kind) {
      case 'image':
        message = { imageMessage: { ...common, ...caption } };
        break;
      case 'video':
        message = { videoMessage: { ...common, ...caption, ...seconds } };
        break;
      case 'audio':
        message = { audioMessage: { ...common, ...seconds, ptt: !!file.ptt } };
        break;
      case 'document': {
        const fileName = file.fileName ?? 'file';
        const documentMessage: proto.Message.IDocumentMessage = { ...common, fileName, title: fileName, ...caption };
        message = file.caption !== undefined ? { documentWithCaptionMessage: { message: { documentMessage } } } : { documentMessage };
        break;
      }
    }
    return sendMessage(from, message, opts);
  };

  const sendEdit: WhatsAppFake['sendEdit'] = (from, originalId, newText, opts = {}) => {
    const sender = party(from);
    const remoteJid = opts.group ?? targetAccount(opts).party.jid;
    return sendMessage(
      from,
      {
        editedMessage: {
          message: {
            protocolMessage: {
              key: { remoteJid, fromMe: true, id: originalId, ...(opts.group ? { participant: sender.jid } : {}) },
              type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
              editedMessage: { conversation: newText },
              timestampMs: Date.now(),
            },
          },
        },
      },
      { ...opts, stanzaType: 'text' },
    );
  };

  const sendReaction: WhatsAppFake['sendReaction'] = (from, target, emoji, opts = {}) => {
    const remoteJid = opts.group ?? (target.fromMe ? targetAccount(opts).party.jid : party(from).jid);
    return sendMessage(
      from,
      {
        reactionMessage: {
          key: { remoteJid, fromMe: target.fromMe, id: target.id, ...(target.participant ? { participant: target.participant } : {}) },
          text: emoji,
          senderTimestampMs: Date.now(),
        },
      },
      opts,
    );
  };

  // ---- linked sessions ------------------------------------------------------------------------------------------

  const linkDevice: WhatsAppFake['linkDevice'] = async (dir, phone = DEFAULT_PHONE) => {
    phone = phoneOf(phone);
    const acct = account(phone);
    const deviceNo = acct.nextDevice++;
    const creds = initAuthCreds();
    const identityPub = Buffer.from(creds.signedIdentityKey.public);
    const adv = advIdentity(acct, identityPub);
    const deviceSignature = Buffer.from(
      Curve.sign(
        creds.signedIdentityKey.private,
        Buffer.concat([WA_ADV_DEVICE_SIG_PREFIX, adv.details, identityPub, adv.accountSignatureKey]),
      ),
    );
    const jid = pnJid(phone, deviceNo);
    const lid = `${acct.party.lidUser}:${deviceNo}@lid`;
    const preKeyCount = 30;
    await mkdir(dir, { recursive: true });
    const preKeys = new Map<number, Buffer>();
    for (let i = 1; i <= preKeyCount; i++) {
      const kp = Curve.generateKeyPair();
      preKeys.set(i, Buffer.from(kp.public));
      await writeFile(join(dir, `pre-key-${i}.json`), JSON.stringify(kp, BufferJSON.replacer));
    }
    const full = {
      ...creds,
      registered: true,
      me: { id: jid, lid, name: 'Keel Test' },
      account: {
        details: adv.details,
        accountSignatureKey: adv.accountSignatureKey,
        accountSignature: adv.accountSignature,
        deviceSignature,
      },
      signalIdentities: [{ identifier: { name: lid, deviceId: 0 }, identifierKey: generateSignalPubKey(adv.accountSignatureKey) }],
      platform: 'android',
      nextPreKeyId: preKeyCount + 1,
      firstUnuploadedPreKeyId: preKeyCount + 1,
      accountSyncCounter: 1,
      lastAccountSyncTimestamp: now(),
    };
    await writeFile(join(dir, 'creds.json'), JSON.stringify(full, BufferJSON.replacer));
    devices.set(`${phone}:${deviceNo}`, {
      account: acct,
      device: deviceNo,
      jid,
      lid,
      noisePub: Buffer.from(creds.noiseKey.public),
      identityPub: Buffer.from(creds.signedIdentityKey.public),
      registrationId: creds.registrationId,
      signedPreKey: {
        keyId: creds.signedPreKey.keyId,
        pub: Buffer.from(creds.signedPreKey.keyPair.public),
        signature: Buffer.from(creds.signedPreKey.signature),
      },
      preKeys,
      keyIndex: adv.keyIndex,
      removed: false,
    });
    return { jid, phone };
  };

  // ---- server -----------------------------------------------------------------------------------------------------

  const http: Server = createServer((_req, res) => {
    res.writeHead(426).end();
  });
  const wss = new WebSocketServer({ server: http, path: '/ws/chat' });
  wss.on('connection', (ws) => {
    connectionCount++;
    const c = new Conn(ws);
    conns.add(c);
    ws.on('message', (data: Buffer) => onData(c, Buffer.from(data)));
    ws.on('close', () => {
      conns.delete(c);
      c.linkCode?.finish?.reject(new Error('the device disconnected before companion_finish'));
    });
    ws.on('error', () => conns.delete(c));
  });
  await new Promise<void>((resolve) => http.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;

  // ---- media server ---------------------------------------------------------------------------------------------

  /**
   * WhatsApp's media servers: `POST /mms/<type>/<fileEncSha256, base64url>?auth=<media_conn auth>&token=<same hash>`
   * with the encrypted file (checked: auth, token, hash, size) → `{ url, direct_path, handle, object_id }`;
   * `GET <direct path>` → the stored bytes (`oh` signature checked; `Range` honoured, as baileys asks for byte ranges
   * when a caller passes startByte / endByte).
   */
  const onMediaRequest = (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'https://mmg.whatsapp.net');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const upload = /^\/mms\/([a-z0-9-]+)\/([A-Za-z0-9_-]+)$/.exec(u.pathname);
    if (req.method === 'POST' && upload) {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MEDIA_MAX_BYTES) chunks.push(chunk);
      });
      req.on('end', () => {
        const [, mmsType = '', token = ''] = upload;
        const auth = u.searchParams.get('auth') ?? '';
        if (!mediaAuths.has(auth)) return json(401, { error: 'bad or missing auth' });
        if (u.searchParams.get('token') !== token) return json(400, { error: 'token does not match the path' });
        if (size > MEDIA_MAX_BYTES) return json(413, { error: 'too large' });
        const data = Buffer.concat(chunks);
        if (sha256Of(data).toString('base64url') !== token) return json(400, { error: 'hash mismatch' });
        const result = storeBlob(mmsType, data);
        debugLog.push(`media upload ${mmsType} ${data.length} bytes → ${result.direct_path.split('?')[0]}`);
        json(200, result);
      });
      return;
    }
    const blob = blobs.get(u.pathname);
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'method not allowed' });
    if (!blob) return json(404, { error: 'not found' });
    if (u.searchParams.get('oh') !== blob.oh) return json(403, { error: 'URL signature mismatch' });
    const total = blob.data.length;
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (req.headers.range && range) {
      let start = range[1] ? Number(range[1]) : undefined;
      let end = range[2] ? Number(range[2]) : total - 1;
      if (start === undefined) [start, end] = [Math.max(0, total - end), total - 1]; // suffix range: the last N bytes
      end = Math.min(end, total - 1);
      if (start > end || start >= total) {
        res.writeHead(416, { 'content-range': `bytes */${total}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-type': 'application/octet-stream',
        'content-length': String(end - start + 1),
        'content-range': `bytes ${start}-${end}/${total}`,
        'accept-ranges': 'bytes',
      });
      res.end(req.method === 'HEAD' ? undefined : blob.data.subarray(start, end + 1));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total), 'accept-ranges': 'bytes' });
    res.end(req.method === 'HEAD' ? undefined : blob.data);
  };
  try {
    const { key, cert } = await fakeMediaCert();
    const server = createHttpsServer({ key, cert }, onMediaRequest);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const mediaPort = (server.address() as AddressInfo).port;
    media = { server, target: { port: mediaPort, ca: cert, hosts: [...FAKE_WA_MEDIA_HOSTS] } };
    (globalThis as { __keelWaMedia?: unknown }).__keelWaMedia = media.target;
  } catch (err) {
    mediaError = (err as Error).message;
    debugLog.push(`media server not started: ${mediaError}`);
  }

  const flushOwed = () => {
    for (const c of conns) {
      if (!c.device || !c.isOpen) continue;
      for (const d of owed) if (d.device === c.device && !d.acked && !d.rejected && d.delivered === 0) deliver(d, c, false);
    }
  };

  return {
    url: `ws://127.0.0.1:${port}/ws/chat`,
    linkDevice,
    scanQr,
    enterPairingCode,
    sendText,
    sendEdit,
    sendReaction,
    sendMessage,
    sendMedia,
    mediaEnv: () => {
      if (!media) throw new Error(`the fake's media server is not running: ${mediaError}`);
      return { KEEL_WA_FAKE_MEDIA: JSON.stringify(media.target) };
    },
    sendFromPhone,
    lidOf: (phone) => party(phone).lid,
    setGroup: (jid, o) => {
      const existing = groups.get(jid);
      groups.set(jid, {
        subject: o.subject ?? existing?.subject ?? 'Group',
        participants: [...new Set([...(lastAccount ? [lastAccount] : []), ...o.participants.map(phoneOf)])],
        creation: existing?.creation ?? now(),
      });
    },
    sent: () => [...sentLog],
    waitFor: (pred, timeoutMs = 5000) => {
      const hit = sentLog.find(pred);
      if (hit) return Promise.resolve(hit);
      return new Promise<FakeSent>((resolve, reject) => {
        const w = {
          pred,
          resolve: (m: FakeSent) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no matching message sent within ${timeoutMs} ms (sent: ${JSON.stringify(sentLog.map((s) => s.text))})`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    deliveries: (id) => owed.filter((d) => d.id === id).reduce((sum, d) => sum + d.delivered, 0),
    acked: (id) => owed.some((d) => d.id === id && d.acked),
    loseNextDelivery: () => {
      loseNext++;
    },
    loseNextReceipt: () => {
      loseReceipts++;
    },
    retries: (id) => owed.filter((d) => d.id === id).reduce((sum, d) => sum + d.retries, 0),
    nacks: (id) => owed.filter((d) => d.id === id).flatMap((d) => d.nacks),
    sendAttempts: (id) => sendAttempts.get(id) ?? 0,
    drop: () => {
      for (const c of conns) c.ws.terminate();
    },
    silent: (on) => {
      deaf = on;
      if (!on) flushOwed();
    },
    conflict: () => {
      for (const c of conns) if (c.tx && c.isOpen) streamError(c, {}, n('conflict', { type: 'replaced' }));
    },
    logout: () => {
      for (const c of conns) {
        if (c.device) c.device.removed = true;
        if (c.tx && c.isOpen) streamError(c, { code: '401' }, n('conflict', { type: 'device_removed' }));
      }
      for (const d of devices.values()) d.removed = true;
    },
    connections: () => connectionCount,
    open: () => [...conns].filter((c) => c.isOpen).length,
    loggedIn: () => [...conns].filter((c) => c.isOpen && c.device).length,
    chatstates: () => [...chatstateLog],
    presences: () => [...presenceLog],
    reads: () => [...readLog],
    debug: () => [...debugLog],
    close: async () => {
      for (const c of conns) c.ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
      if (media) {
        const g = globalThis as { __keelWaMedia?: unknown };
        if (g.__keelWaMedia === media.target) delete g.__keelWaMedia;
        const server = media.server;
        media = undefined;
        mediaError = 'closed';
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      }
    },
  };
}
