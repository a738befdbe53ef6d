/**
 * Record before acknowledge, on WhatsApp. WhatsApp keeps a message for a device until the device sends its receipt,
 * and delivers it again on the next connection otherwise. Baileys sends that receipt right after decrypting, before it
 * hands the message to the app; a process killed in between would have told WhatsApp "delivered" for a message it
 * never recorded: lost.
 *
 * The gate holds two things from the moment a `message` frame arrives until the channel has recorded that message (or
 * decided it records nothing):
 * - **what the connection writes.** Frames leave later, in their order (the Noise transport numbers them); baileys is
 *   told each write went out. If the connection dies meanwhile the receipt is never sent, and WhatsApp delivers the
 *   message again.
 * - **what the Signal state writes to disk** (sessions advanced, the one-time prekey a first message used up). Those
 *   writes are applied, in order, just before the frames leave. Without this, a message decrypted and then lost to a
 *   kill could never be decrypted again when WhatsApp delivers it again ("Key used already": its prekey is gone, and
 *   baileys rejects it for good). With it, the disk holds the state that matches what the connection sent: a process
 *   killed before the record restarts from the state before the decrypt, and decrypts the redelivered message as the
 *   first time.
 *
 * A message baileys never hands on (it could not decrypt it and answered with a retry request or a negative ack) is
 * let go after `maxHoldMs`, so a stuck hold costs a short delay, never the connection.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { SignalDataSet, SignalDataTypeMap, SignalKeyStore, WASocket } from '@whiskeysockets/baileys';

const coded = errorsFor('chatB');

type Send = (data: unknown, cb?: (err?: Error) => void) => void;

export class AckGate {
  /**
   * Messages being recorded, each with the marks of what had been written when it arrived: what was written before
   * the earliest of them may go, whatever came after waits for it.
   */
  private readonly held = new Map<string, { timer: NodeJS.Timeout; frameMark: number; writeMark: number }>();
  /** Frames written while something is held, in order, each with its number and the connection it belongs to. */
  private frames: Array<{ seq: number; gen: number; data: unknown }> = [];
  private frameSeq = 0;
  /** The connection now: frames of an earlier one are never sent on this one (their Noise session is another). */
  private gen = 0;
  /** Signal state writes made while something is held, in order, numbered. */
  private keyWrites: Array<{ seq: number; data: SignalDataSet }> = [];
  /** Writes taken by a drain and not yet in the store. */
  private writing: SignalDataSet[] = [];
  /** The newest value of every key in `writing` and `keyWrites` (null: deleted), by type and id: what reads see. */
  private readonly pending = new Map<string, Map<string, unknown>>();
  private writeSeq = 0;
  private send: Send | undefined;
  private store: SignalKeyStore | undefined;
  private draining = false;
  /** How many frames were held at least once, for tests and status. */
  heldFrames = 0;

  constructor(
    private readonly o: {
      maxHoldMs?: number;
      onTimeout?: (id: string) => void;
      /** Writing the held Signal state failed: the held frames are dropped (never sent); reconnect. */
      onWriteFailed?: (e: unknown) => void;
    } = {},
  ) {}

  /**
   * Wraps the device's key store (above baileys' cache, so that a dropped write leaves no trace in memory either):
   * its writes wait while a message is held.
   */
  wrapKeys(store: SignalKeyStore): SignalKeyStore {
    this.store = store;
    return {
      get: async <T extends keyof SignalDataTypeMap>(type: T, ids: string[]) => {
        // Writes not yet on disk are the newest state; only the rest is read from the store.
        const newest = this.pending.get(type);
        const rest = newest ? ids.filter((id) => !newest.has(id)) : ids;
        const got = (rest.length ? { ...(await store.get(type, rest)) } : {}) as Record<string, SignalDataTypeMap[T]>;
        if (newest)
          for (const id of ids) {
            const v = newest.get(id);
            if (v !== undefined && v !== null) got[id] = v as SignalDataTypeMap[T];
          }
        return got;
      },
      set: (data: SignalDataSet) => {
        if (this.busy()) {
          this.keyWrites.push({ seq: this.writeSeq++, data });
          this.index(data);
          return;
        }
        return store.set(data);
      },
      ...(store.clear ? { clear: () => store.clear!() } : {}),
    };
  }

  private index(data: SignalDataSet): void {
    for (const [type, values] of Object.entries(data)) {
      let byId = this.pending.get(type);
      if (!byId) this.pending.set(type, (byId = new Map()));
      for (const [id, v] of Object.entries(values ?? {})) byId.set(id, v ?? null);
    }
  }

  private reindex(): void {
    this.pending.clear();
    for (const w of this.writing) this.index(w);
    for (const w of this.keyWrites) this.index(w.data);
  }

  private busy(): boolean {
    return this.held.size > 0 || this.draining || this.frames.length > 0 || this.keyWrites.length > 0;
  }

  /** Puts the gate on one baileys socket (call right after `makeWASocket`, before it can receive anything). */
  attach(sock: WASocket): void {
    this.frames = [];
    const gen = ++this.gen;
    const ws = sock.ws as unknown as { socket?: { send: Send } | null; on(e: string, f: (n: unknown) => void): void };
    const raw = ws.socket;
    if (!raw) throw coded('KEEL_E_PLUGIN_FAILED', 'chatB: the WhatsApp socket has no connection to gate (baileys changed?)');
    const send = raw.send.bind(raw);
    this.send = send;
    raw.send = (data, cb) => {
      if (!this.busy()) return send(data, cb);
      this.heldFrames++;
      this.frames.push({ seq: this.frameSeq++, gen, data });
      // Baileys waits for the write before it hands the message on: tell it the write is done.
      if (cb) queueMicrotask(() => cb());
    };
    // 'frame' is emitted for every decoded frame before baileys' own handlers run.
    ws.on('frame', (node) => {
      const n = node as { tag?: string; attrs?: Record<string, string> };
      if (n?.tag === 'message' && n.attrs?.id) this.hold(n.attrs.id);
    });
  }

  private hold(id: string): void {
    if (this.held.has(id)) return;
    const timer = setTimeout(() => {
      this.o.onTimeout?.(id);
      this.release(id);
    }, this.o.maxHoldMs ?? 3000);
    timer.unref?.();
    this.held.set(id, { timer, frameMark: this.frameSeq, writeMark: this.writeSeq });
  }

  /** The message is recorded (or will never be): the state it changed is written, then its receipt may go. */
  release(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    clearTimeout(h.timer);
    this.held.delete(id);
    void this.drain();
  }

  /** What may go now: everything written before the earliest message still being recorded arrived. */
  private limits(): { frames: number; writes: number } {
    let frames = Number.POSITIVE_INFINITY;
    let writes = Number.POSITIVE_INFINITY;
    for (const h of this.held.values()) {
      frames = Math.min(frames, h.frameMark);
      writes = Math.min(writes, h.writeMark);
    }
    return { frames, writes };
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (;;) {
        const limit = this.limits();
        // The state first, then the frames that depend on it. A receipt written before the earliest held message
        // arrived belongs to a message that was decrypted, and so wrote its state, before that too.
        const w = this.keyWrites.findIndex((x) => x.seq >= limit.writes);
        const writes = this.keyWrites.splice(0, w < 0 ? this.keyWrites.length : w);
        const f = this.frames.findIndex((x) => x.seq >= limit.frames);
        const frames = this.frames.splice(0, f < 0 ? this.frames.length : f);
        if (!writes.length && !frames.length) return;
        try {
          // Until each is in the store, reads still see it.
          this.writing = writes.map((x) => x.data);
          const gen = this.gen;
          for (const x of writes) {
            // Abandoned meanwhile: the rest is dropped with the frames that depend on it.
            if (this.gen !== gen) return;
            await this.store?.set(x.data);
            this.writing.shift();
          }
          this.reindex();
        } catch (e) {
          this.abandon();
          this.o.onWriteFailed?.(e);
          return;
        }
        for (const x of frames) if (x.gen === this.gen) this.send?.(x.data);
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * The connection is gone, or a message could not be recorded: everything written since the last drain is dropped,
   * frames and Signal state together. The receipts never go, so WhatsApp delivers those messages again, and the state
   * is back to what it was before they were decrypted, so they decrypt again (a message whose record did finish is
   * then recognised by the ingress). Sends whose frames are dropped lose their state change with them.
   */
  abandon(): void {
    this.frames = [];
    this.keyWrites = [];
    this.writing = [];
    this.pending.clear();
    this.send = undefined;
    this.gen++;
  }

  /** Message ids waiting to be recorded. */
  get holding(): number {
    return this.held.size;
  }
}
