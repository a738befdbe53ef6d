/**
 * Record before acknowledge, on WhatsApp. WhatsApp keeps a message for a device until the device sends its receipt,
 * and baileys sends that receipt right after decrypting, before it hands the message to the app. A process killed in
 * between would have told WhatsApp "delivered" for a message it never recorded: lost.
 *
 * So the gate holds everything the connection writes from the moment a `message` frame arrives until the channel has
 * recorded that message (or decided it records nothing): frames leave in their order (the Noise transport numbers
 * them), baileys is told each write went out, and if the connection dies meanwhile the receipt is never sent and
 * WhatsApp delivers the message again on the next connection, where the ingress recognises it if it was recorded.
 *
 * A message baileys never hands on (it could not decrypt it and answered with a retry request or a negative ack) is
 * let go after `maxHoldMs`, so a stuck hold costs a short delay, never the connection.
 */
import type { WASocket } from '@whiskeysockets/baileys';

type Send = (data: unknown, cb?: (err?: Error) => void) => void;

export class AckGate {
  private readonly held = new Map<string, NodeJS.Timeout>();
  private queue: unknown[] = [];
  private send: Send | undefined;
  /** How many frames were held at least once, for tests and status. */
  heldFrames = 0;

  constructor(private readonly o: { maxHoldMs?: number; onTimeout?: (id: string) => void } = {}) {}

  /** Puts the gate on one baileys socket (call right after `makeWASocket`, before it can receive anything). */
  attach(sock: WASocket): void {
    this.detach();
    const ws = sock.ws as unknown as { socket?: { send: Send } | null; on(e: string, f: (n: unknown) => void): void };
    const raw = ws.socket;
    if (!raw) throw new Error('chatB: the WhatsApp socket has no connection to gate (baileys changed?)');
    const send = raw.send.bind(raw);
    this.send = send;
    raw.send = (data, cb) => {
      if (this.held.size === 0 && this.queue.length === 0) return send(data, cb);
      this.heldFrames++;
      this.queue.push(data);
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
    const t = setTimeout(() => {
      this.o.onTimeout?.(id);
      this.release(id);
    }, this.o.maxHoldMs ?? 3000);
    t.unref?.();
    this.held.set(id, t);
  }

  /** The message is recorded (or will never be): its receipt, and what waited behind it, may go. */
  release(id: string): void {
    const t = this.held.get(id);
    if (!t) return;
    clearTimeout(t);
    this.held.delete(id);
    if (this.held.size === 0) this.flush();
  }

  private flush(): void {
    const q = this.queue;
    this.queue = [];
    // Baileys was already told these went out; a write error now surfaces as the connection closing.
    for (const data of q) this.send?.(data);
  }

  /** Drops what is held (the connection is gone: its receipts must not be sent, so WhatsApp delivers again). */
  detach(): void {
    for (const t of this.held.values()) clearTimeout(t);
    this.held.clear();
    this.queue = [];
    this.send = undefined;
  }

  /** Message ids waiting to be recorded. */
  get holding(): number {
    return this.held.size;
  }
}
