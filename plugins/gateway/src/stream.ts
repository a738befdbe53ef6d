/**
 * The resumable event stream (docs/websocket.md "Resuming"): every event gets the next `seq`, and the last
 * {@link REPLAY_BUFFER} frames are kept so that a client reconnecting with `?since=<seq>` gets what it missed,
 * or one `{type: 'gap'}` message when the buffer no longer reaches back that far.
 *
 * `seq` starts at the gateway's start time in microseconds (then +1 per event), so it also increases across
 * gateway restarts: a client's `since` from before a restart is older than anything buffered and gets a `gap`,
 * never a wrong replay.
 */
import type { EventBus, GatewayEvent } from './events.js';

/** Frames kept for replay. */
export const REPLAY_BUFFER = 2000;

export interface StreamFrame {
  seq: number;
  /** The JSON text sent to clients. */
  text: string;
}

export type Replay = { kind: 'frames'; frames: StreamFrame[] } | { kind: 'gap'; text: string };

export interface EventStream {
  /** The seq of the newest event (the start value minus one before any event). */
  last(): number;
  /** Listen to stamped frames; returns the unsubscribe. */
  onFrame(listener: (f: StreamFrame) => void): () => void;
  /** What a client that saw everything up to `since` missed. */
  replay(since: number): Replay;
  dispose(): void;
}

export function createEventStream(bus: EventBus, opts: { size?: number; start?: number } = {}): EventStream {
  const size = opts.size ?? REPLAY_BUFFER;
  let seq = (opts.start ?? Date.now() * 1000) - 1;
  // Ring buffer: `ring[(head + i) % size]` for i < count, oldest first.
  const ring: StreamFrame[] = new Array(size);
  let head = 0;
  let count = 0;
  const listeners = new Set<(f: StreamFrame) => void>();

  const unsubscribe = bus.subscribe((e: GatewayEvent) => {
    const frame: StreamFrame = { seq: ++seq, text: JSON.stringify({ type: 'event', seq: seq, event: e.event, data: e.data }) };
    if (count < size) ring[(head + count++) % size] = frame;
    else {
      ring[head] = frame;
      head = (head + 1) % size;
    }
    for (const l of listeners) l(frame);
  });

  return {
    last: () => seq,
    onFrame(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    replay(since) {
      const oldest = count ? ring[head]!.seq : seq + 1;
      // Nothing missed (or a since from the future, which only a confused client sends: treated as a gap).
      if (since === seq) return { kind: 'frames', frames: [] };
      if (since > seq || since < oldest - 1) {
        return {
          kind: 'gap',
          text: JSON.stringify({
            type: 'gap',
            since,
            seq,
            oldest,
            message:
              'Events after your seq are no longer buffered: refetch state over REST (GET /api/status, /api/tasks), then continue from seq.',
          }),
        };
      }
      const frames: StreamFrame[] = [];
      for (let i = 0; i < count; i++) {
        const f = ring[(head + i) % size]!;
        if (f.seq > since) frames.push(f);
      }
      return { kind: 'frames', frames };
    },
    dispose() {
      unsubscribe();
      listeners.clear();
    },
  };
}
