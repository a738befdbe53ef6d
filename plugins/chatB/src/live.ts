/**
 * chatB (WhatsApp, a linked device through baileys): the adapter `defineChannel` runs. Each message recorded durably
 * (`kit.recordSoon`, FULL) before WhatsApp gets its receipt (ack-gate.ts), replies rendered once as WhatsApp
 * formatting, cut to 4,096 characters, quoting the message and sent under message ids derived from the ledger key,
 * edits and "delete for everyone" handed to the kit, QR or pairing-code linking, reactions. The kit owns the rest
 * (ledger, rate limits, supervision, owner lock, ingress, status). See docs/whatsapp.md and docs/channels.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { chmod, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import type { CacheStore, proto, WASocket } from '@whiskeysockets/baileys';
import makeWASocket, {
  Browsers,
  DisconnectReason,
  jidNormalizedUser,
  makeCacheableSignalKeyStore,
  useMultiFileAuthState as loadMultiFileAuthState,
} from '@whiskeysockets/baileys';
import QRCode from 'qrcode';
import { errorMessage, reportIgnored, type Action, type PluginContext } from '../../../sdk/index.js';
import {
  type ChannelAdapter,
  type ChannelKit,
  editKey,
  OwnerLock,
  makeTranscriber,
  RATE_POLICIES,
  renderChunks,
  setting,
  TtlCache,
  transcriptNote,
} from '../../../sdk/channel-kit/index.js';
import type manifest from '../manifest.js';
import { AckGate } from './ack-gate.js';
import { saveMedia } from './media.js';
import { addressed, type Me, showJid, toInbound, toWaIn, type WaIn } from './inbound.js';
import { quietSignal } from './quiet-signal.js';
import { registerSkills } from './skills.js';
import { CHAT_JID, chunkMessageId, classifyWhatsApp, fatalMessage, sendChunk, type WaChunk, WhatsAppClosedError } from './whatsapp.js';

const coded = errorsFor('chatB');

const LIMIT = 4096;

/** Where the session lives: `$KEEL_HOME` and `~` expanded. */
export function sessionPath(ctx: PluginContext): string {
  const raw = setting(ctx, 'chatBSessionPath', '$KEEL_HOME/chatB-session');
  return raw.replace(/^\$KEEL_HOME(?=\/|$)/, ctx.home).replace(/^~(?=\/|$)/, homedir());
}

/** baileys' pino-shaped logger onto Keel's: its errors as warnings, the rest at debug. */
function baileysLogger(log: PluginContext['log']) {
  const at = (f: (s: string) => void) => (obj: unknown, msg?: string) => {
    const detail =
      obj && typeof obj === 'object' && 'err' in obj ? errorMessage((obj as { err: unknown }).err) : typeof obj === 'string' ? obj : '';
    f(`chatB (baileys): ${msg ?? ''}${msg && detail ? ': ' : ''}${detail}`.trim());
  };
  const logger = {
    level: 'warn',
    child: () => logger,
    trace: () => {},
    debug: () => {},
    info: () => {},
    warn: at((s) => log.debug(s)),
    error: at((s) => log.warn(s)),
  };
  return logger;
}

/** The WhatsApp adapter (only once enabled: baileys loads with this module). */
export async function whatsapp(kit: ChannelKit<WaIn>, ctx: PluginContext<typeof manifest>): Promise<ChannelAdapter<WaIn, WaChunk>> {
  quietSignal((line) => ctx.log.debug(line));
  const dir = sessionPath(ctx);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700).catch(() => {});
  const auth = await loadMultiFileAuthState(dir);
  const logger = baileysLogger(ctx.log);
  const url = setting(ctx, 'chatBWebSocketUrl', 'wss://web.whatsapp.com/ws/chat');
  const transcribe = makeTranscriber(ctx);
  const keepAliveMs = () => setting<number>(ctx, 'chatBKeepAliveInterval', 30) * 1000;

  let sock: WASocket | undefined;
  let waitingForScan = false;
  /** Texts of recent sends by id, for a recipient's phone that asks for a message again (it could not decrypt it). */
  const recentlySent = new TtlCache<string, string>(3600_000, 2000);
  const gate = new AckGate({
    maxHoldMs: 5000,
    onTimeout: (id) => ctx.log.debug(`chatB: message ${id} was not handed on within 5 s; its receipt goes out unrecorded`),
    onWriteFailed: (e) => {
      ctx.log.warn(`chatB: could not save the session's keys: ${errorMessage(e)}; reconnecting without acknowledging`);
      kit.connection?.restart('the session could not be saved');
    },
  });
  // One store for every connection: the gate above baileys' cache (its writes wait while a message is held).
  // With a cache of our own: baileys' default one starts a check timer that nothing stops (one more per restart).
  const keys = gate.wrapKeys(makeCacheableSignalKeyStore(auth.state.keys, logger, signalKeyCache()));

  const trusted = (jid: string) => {
    const owner = setting<string | undefined>(ctx, 'chatBOwnerJID', undefined);
    const admins = setting<Record<string, string[]>>(ctx, 'adminUsers', {})?.chatB ?? [];
    const user = jidNormalizedUser(jid);
    return (owner !== undefined && jidNormalizedUser(owner) === user) || admins.some((a) => jidNormalizedUser(a) === user);
  };

  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const chatId = typeof r.chatId === 'string' ? r.chatId : '';
    if (!CHAT_JID.test(chatId))
      throw coded('KEEL_E_CHANNEL_SEND_FAILED', `Action ${action.id} has no chatB chat to answer (metadata.replyTo.chatId).`);
    const messageId = typeof r.messageId === 'string' ? r.messageId : undefined;
    return { chatId, options: messageId ? { replyToMessageId: messageId } : {} };
  };

  /** The message answered, as a quote: its author and the start of its text (WhatsApp shows both). */
  const quoteFor = (messageId: string | undefined): WaChunk['quote'] => {
    if (!messageId) return undefined;
    const m = kit.ingress.payload(messageId);
    if (!m) return { id: messageId, text: '' };
    return { id: m.id, ...(m.group ? { participant: m.sender } : {}), text: m.text.slice(0, 200) };
  };

  // ---------------------------------------------------------------- inbound
  /**
   * The linked account, from the session (baileys' `sock.user` is the same object): known before 'open', when the
   * messages WhatsApp kept for the device come first.
   */
  const account = (): Me | undefined => {
    const c = auth.state.creds.me;
    return c?.id ? { pn: jidNormalizedUser(c.id), ...(c.lid ? { lid: jidNormalizedUser(c.lid) } : {}) } : undefined;
  };
  /**
   * One arrived message: recorded, then its receipt released. What chatB never records (our own sends echoed, what
   * toWaIn skips, a revoke of nothing of ours) only has its receipt released: it never reaches `kit.recordSoon`, so
   * it is not reported as a duplicate.
   */
  const record = (msg: proto.IWebMessageInfo) => {
    const id = msg.key?.id ?? '';
    const who = account();
    if (!who) return gate.release(id);
    const w = toWaIn(msg as Parameters<typeof toWaIn>[0], who, {
      statusReplies: setting<boolean>(ctx, 'chatBStatusReplyEnabled', false) === true,
    });
    if ('skip' in w || !w.id || recentlySent.get(w.id)) return gate.release(id);
    if (w.revoke && !kit.ingress.payload(w.revoke.of)) return gate.release(id); // nothing of ours to take back
    const key = w.edit ? editKey(w.edit.of, String(w.at)) : w.revoke ? `${w.revoke.of}:deleted` : w.id;
    // FULL: WhatsApp is told "delivered" only after this commit (the gate holds the receipt until then).
    kit.recordSoon({ messageId: key, chatId: w.chat, payload: w }, [], { durability: 'FULL' }).then(
      () => gate.release(id),
      (e: unknown) => {
        // Not recorded: its receipt must not go. Dropping the connection discards it; WhatsApp delivers again.
        ctx.log.warn(`chatB: could not record message ${id}: ${errorMessage(e)}; reconnecting so that WhatsApp delivers it again`);
        gate.abandon();
        gate.release(id);
        kit.connection?.restart('a message could not be recorded');
      },
    );
  };

  const statusLine = () => {
    const s = kit.status();
    const me = s.connected ? account() : undefined;
    return `WhatsApp: ${s.state}${me ? ` as ${showJid(me.pn)}` : waitingForScan ? ', waiting for the QR code to be scanned' : ''}.`;
  };

  /** A queued message is marked read (blue ticks) and, with chatBAutoReactEnabled, gets 👀. Ignored ones are left unread. */
  const afterQueued = (m: WaIn) => {
    const s = sock;
    if (!s?.user) return;
    const key = {
      remoteJid: m.status ? 'status@broadcast' : m.chat,
      id: m.id,
      fromMe: m.self === true,
      ...(m.group || m.status ? { participant: m.sender } : {}),
    };
    if (!m.self) void s.readMessages([key]).catch((e: unknown) => ctx.log.debug(`chatB: read receipt: ${errorMessage(e)}`));
    if (setting<boolean>(ctx, 'chatBAutoReactEnabled', false) === true)
      void s
        .sendMessage(m.chat, { react: { text: '👀', key } })
        .catch((e: unknown) => ctx.log.debug(`chatB: auto-react: ${errorMessage(e)}`));
  };

  /**
   * The QR code goes to the process's stderr (the terminal, or daemon.log with --daemon), never into the log: the log
   * is served by the gateway (`GET /api/logs`, the dashboard), and whoever scans the code attaches their account to
   * this Keel. The log says once where to look.
   */
  let toldWhereQrIs = false;
  const showQr = async (qr: string) => {
    const art = await QRCode.toString(qr, { type: 'terminal', small: true }).catch(() => '');
    process.stderr.write(
      `\nchatB: link Keel to WhatsApp: on your phone open WhatsApp → Settings → Linked devices → Link a device, and scan this code (a new one comes every 20 s):\n${art}\n`,
    );
    if (toldWhereQrIs) return;
    toldWhereQrIs = true;
    ctx.log.info(
      'chatB: not linked yet: scan the QR code printed on the terminal Keel runs in (with --daemon: in daemon.log) with WhatsApp → Settings → Linked devices → Link a device.',
    );
  };

  /** chatBPairingPhone as WhatsApp wants it (digits only), when set. */
  const pairingPhone = () => {
    const raw = setting<string | undefined>(ctx, 'chatBPairingPhone', undefined);
    return raw ? raw.replace(/\D/g, '') : undefined;
  };
  let pairingCode: string | undefined;
  /**
   * A pairing code works only on the phone of the number it was asked for, so unlike the QR code it may be shown
   * where the operator looks on a server without a terminal: the log and `keel status` (channel status).
   */
  const showCode = (code: string) => {
    pairingCode = code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code;
    ctx.log.info(
      `chatB: link Keel to WhatsApp: on the phone of +${pairingPhone()}, open WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead, and enter ${pairingCode}`,
    );
  };

  return {
    lock: new OwnerLock(ctx.home, 'chatB', dir),
    policy: RATE_POLICIES.whatsapp,
    classify: classifyWhatsApp,
    sendChunk: (c, _i, to) =>
      sendChunk(sock, to, c).then((id) => {
        if (c.kind === 'text') recentlySent.set(id, c.text);
        return id;
      }),
    badAddress: (to) =>
      CHAT_JID.test(to) ? undefined : `"${to}" is not a WhatsApp chat (a contact: <number>@s.whatsapp.net; a group: <id>@g.us).`,
    chunks: (m, options, key) => {
      const quote = quoteFor(options.replyToMessageId);
      const texts = renderChunks(m.text ?? '', options.format === 'plain' ? 'plain' : 'whatsapp', { limit: LIMIT });
      const parts: Array<Omit<WaChunk, 'id' | 'quote'>> = [
        ...texts.map((text) => ({ kind: 'text' as const, text })),
        ...(m.files ?? []).map((f) => ({
          kind: 'file' as const,
          path: f.path,
          ...(f.caption ? { caption: f.caption } : {}),
          ...(f.kind ? { as: f.kind } : {}),
        })),
      ];
      return parts.map((p, i) => ({ ...p, id: chunkMessageId(key, i), ...(i === 0 && quote ? { quote } : {}) }) as WaChunk);
    },
    target: replyTarget,
    // WhatsApp shows "typing…" for about 25 s after each update.
    refreshMs: 10_000,
    statusMessages: false,
    transport: () => ({
      typing: async (jid) => {
        if (sock?.user) await sock.sendPresenceUpdate('composing', jid);
      },
      status: async () => {
        throw coded('KEEL_E_CHANNEL_SEND_FAILED', 'chatB shows progress as typing only');
      },
    }),

    connection: {
      // baileys pings every chatBKeepAliveInterval and closes a connection whose pings go unanswered; this is the backstop.
      stallMs: () => keepAliveMs() * 3 + 5000,
      fatal: fatalMessage,
      connect: (signal, hooks) =>
        new Promise<void | 'reconnect'>((resolve, reject) => {
          const s = makeWASocket({
            auth: { creds: auth.state.creds, keys },
            waWebSocketUrl: url,
            logger,
            browser: Browsers.ubuntu('Keel'),
            keepAliveIntervalMs: keepAliveMs(),
            markOnlineOnConnect: false,
            syncFullHistory: false,
            shouldSyncHistoryMessage: () => false,
            emitOwnEvents: false,
            generateHighQualityLinkPreview: false,
            getMessage: async (key) => {
              const text = key.id ? recentlySent.get(key.id)?.value : undefined;
              return text !== undefined ? { conversation: text } : undefined;
            },
          });
          gate.attach(s);
          let codeAsked = false;
          const ws = s.ws as unknown as { on(e: string, f: () => void): void };
          ws.on('frame', () => hooks.live());
          s.ev.on(
            'creds.update',
            () => void auth.saveCreds().catch((e: unknown) => ctx.log.warn(`chatB: saving the session failed: ${errorMessage(e)}`)),
          );
          s.ev.on('messages.upsert', ({ messages }) => {
            for (const m of messages) record(m);
          });
          s.ev.on('connection.update', (u) => {
            if (u.qr) {
              waitingForScan = true;
              const phone = pairingPhone();
              if (!phone) void showQr(u.qr);
              else if (!codeAsked) {
                // Linking by phone number: one code per connection (baileys keeps offering QR codes meanwhile).
                codeAsked = true;
                void s
                  .requestPairingCode(phone)
                  .then(showCode, (e: unknown) => ctx.log.warn(`chatB: asking WhatsApp for a pairing code failed: ${errorMessage(e)}`));
              }
            }
            if (u.connection === 'open') {
              waitingForScan = false;
              pairingCode = undefined;
              sock = s;
              // The kit resumes what a crash left unsent right after this.
              hooks.connected(`as ${showJid(account()?.pn ?? '')} (linked device)`);
            }
            if (u.connection === 'close') {
              if (sock === s) sock = undefined;
              gate.abandon();
              const err = u.lastDisconnect?.error as { output?: { statusCode?: number } } | undefined;
              const code = err?.output?.statusCode;
              if (signal.aborted) return resolve();
              if (code === DisconnectReason.restartRequired) return resolve('reconnect'); // after linking, as WhatsApp asks
              if (code === 401 || code === 440 || code === 411 || code === 403) return reject(new WhatsAppClosedError(code, dir));
              reject(u.lastDisconnect?.error ?? new Error('WhatsApp closed the connection'));
            }
          });
          signal.addEventListener('abort', () => s.end(undefined), { once: true });
        }),
    },

    status: () => {
      const me = kit.connection?.state === 'connected' ? account() : undefined;
      return {
        ...(me ? { botUsername: showJid(me.pn), account: me.pn } : {}),
        // The ADV-signed identity the phone gives at pairing (baileys sets `registered` only for pairing codes).
        linked: auth.state.creds.account != null,
        ...(waitingForScan ? { waitingForScan: true } : {}),
        ...(waitingForScan && pairingCode ? { pairingCode } : {}),
      };
    },

    receive: async ({ payload: m }, turn) => {
      const rt = kit.runtime;
      if (m.revoke) return rt.deleted(m.revoke.of);
      const autoReply = setting<boolean>(ctx, 'chatBAutoReplyEnabled', false) === true;
      const linked = account() ?? { pn: '' };
      if (m.edit) {
        const original = kit.ingress.payload(m.edit.of);
        const edited: WaIn = { ...(original ?? m), id: m.edit.of, text: m.text, at: m.at };
        const inbound = toInbound(edited, addressed(edited, linked, { trusted, autoReply }), { autoReply });
        return rt.edited({ inbound, editedAt: String(m.at), ...(original ? { sentAt: original.at * 1000 } : {}) }, { statusLine, turn });
      }
      const isAddressed = addressed(m, linked, { trusted, autoReply });
      const inbound = toInbound(m, isAddressed, { autoReply });
      // A file is fetched only for a message that will be handled (not for chatter the gating ignores).
      if (m.media && (isAddressed || (autoReply && !m.group))) {
        const saved = await saveMedia(m.media, { home: ctx.home, prefix: `${m.chat}_${m.id}`, log: ctx.log });
        if (saved.attachment) inbound.attachments = [saved.attachment];
        if (saved.note) inbound.text = `${inbound.text}\n${saved.note}`;
        // A voice note or audio file is read to the agent as its transcript (untrusted: anyone may have spoken).
        const a = saved.attachment;
        if (a && (a.kind === 'voice' || a.kind === 'audio'))
          inbound.text = `${inbound.text}\n${await transcriptNote(a.kind, a.path, a.mime ?? 'audio/ogg', { transcribe, signal: rt.signal, warn: (w) => ctx.log.warn(`chatB: ${w}`) })}`;
      }
      // A group message that does not address the account is never a task, auto-reply or not.
      if (m.group && !isAddressed && !inbound.command) {
        reportIgnored(ctx, inbound, 'auto-reply-off');
        return 'ignored:auto-reply-off';
      }
      const outcome = await rt.handle(inbound, { statusLine, turn });
      if (outcome === 'queued') afterQueued(m);
      return outcome;
    },

    async react(chatId, messageId, emoji) {
      if (!CHAT_JID.test(chatId)) throw coded('KEEL_E_INVALID_ARGUMENT', `react on WhatsApp needs a chat JID (got "${chatId}").`);
      if (!sock?.user) throw coded('KEEL_E_CHANNEL_NOT_CONNECTED', 'WhatsApp is not connected.');
      const m = kit.ingress.payload(messageId);
      const key = {
        remoteJid: chatId,
        id: messageId,
        fromMe: m?.self === true || (!m && recentlySent.get(messageId) !== undefined),
        ...(m?.group ? { participant: m.sender } : {}),
      };
      await kit.runtime.outbox.edit(chatId, () => sock!.sendMessage(chatId, { react: { text: emoji, key } }));
      return { native: true };
    },

    start() {
      registerSkills(ctx, { send: kit.runtime.send });
    },
  };
}

/**
 * The Signal keys' cache in front of the session files: five minutes per key as baileys' own, at most 20,000 keys
 * (one evicted is read from the files again), and no timer.
 */
function signalKeyCache(): CacheStore {
  const cache = new TtlCache<string, unknown>(5 * 60_000, 20_000);
  return {
    get: <T>(key: string) => cache.get(key)?.value as T | undefined,
    set: (key, value) => cache.set(key, value),
    del: (key) => cache.delete(key),
    flushAll: () => cache.clear(),
  };
}
