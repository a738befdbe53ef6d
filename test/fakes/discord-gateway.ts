/**
 * The gateway half of the loopback Discord (see discord-server.ts): sessions that outlive their sockets so a RESUME
 * can replay what was missed, HELLO / IDENTIFY → READY + GUILD_CREATE / heartbeats / RESUME → RESUMED or
 * INVALID_SESSION, close codes, and the failure modes tests need (a dropped socket, a zombie that stops acking, a
 * deaf gateway that sends nothing).
 */
import type { WebSocket } from 'ws';

const EPOCH = 1420070400000n;
let counter = 0n;
/** A snowflake: timestamp (`at`, default now) since Discord's epoch, shifted, plus a counter (unique and increasing). */
export function snowflake(at = Date.now()): string {
  counter = (counter + 1n) & 0xfffn;
  return (((BigInt(Math.floor(at)) - EPOCH) << 22n) | (1n << 17n) | counter).toString();
}

interface Session {
  id: string;
  seq: number;
  events: Array<{ t: string; d: unknown; s: number }>;
  socket: WebSocket | undefined;
  silent: boolean;
  /** The intents of its IDENTIFY (undefined: none given, every event sent). */
  intents: number | undefined;
}

/** GUILD_MESSAGES and DIRECT_MESSAGES: without them Discord sends a session no MESSAGE_CREATE of that kind. */
const GUILD_MESSAGES = 1 << 9;
const DIRECT_MESSAGES = 1 << 12;

function wants(s: Session, t: string, d: unknown): boolean {
  if (t !== 'MESSAGE_CREATE' || s.intents === undefined) return true;
  return (s.intents & ((d as { guild_id?: string }).guild_id ? GUILD_MESSAGES : DIRECT_MESSAGES)) !== 0;
}

const isThread = (c: Record<string, unknown>) => [10, 11, 12].includes(Number(c.type));

/** A GUILD_CREATE payload with the given channels (threads among them go under `threads`). */
export function guildCreate(
  guildId: string,
  channels: Array<Record<string, unknown>>,
  members: Array<Record<string, unknown>> = [],
  roles: Array<Record<string, unknown>> = [],
): Record<string, unknown> {
  return {
    id: guildId,
    name: 'Keel test server',
    icon: null,
    owner_id: '900000000000000009',
    unavailable: false,
    member_count: 2,
    large: false,
    joined_at: new Date().toISOString(),
    features: [],
    roles: [
      {
        id: guildId,
        name: '@everyone',
        permissions: '68608',
        position: 0,
        color: 0,
        hoist: false,
        managed: false,
        mentionable: false,
        flags: 0,
      },
      ...roles,
    ],
    emojis: [],
    stickers: [],
    members,
    presences: [],
    voice_states: [],
    // Active threads (types 10, 11, 12) come apart from the channels, as Discord sends them to a bot.
    threads: channels.filter(isThread),
    stage_instances: [],
    guild_scheduled_events: [],
    channels: channels.filter((c) => !isThread(c)).map((c) => ({ position: 0, permission_overwrites: [], ...c })),
  };
}

export class FakeGateway {
  readonly stats = { connections: 0, identifies: 0, resumes: 0, resumed: 0, heartbeats: 0 };
  /** While true, new sockets get nothing at all (not even HELLO). */
  deaf = false;
  /**
   * While true, MESSAGE_CREATE events are lost (not sent, not kept for a resume) while the sockets go on answering
   * heartbeats: a session that stopped delivering events.
   */
  withholdMessages = false;
  /** Close code to answer IDENTIFY with (4004, 4014). */
  identifyCloseCode: number | undefined;
  private readonly sessions = new Map<string, Session>();
  private readonly sockets = new Set<WebSocket>();

  constructor(
    private readonly o: {
      token: string;
      heartbeatMs(): number;
      ready(sessionId: string): Record<string, unknown>;
      guild(): Record<string, unknown>;
    },
  ) {}

  /** Sends an event to every session (kept for a resume when its socket is gone or silent). */
  dispatch(t: string, d: unknown): void {
    if (this.withholdMessages && t === 'MESSAGE_CREATE') return;
    for (const s of this.sessions.values()) {
      if (!wants(s, t, d)) continue;
      const ev = { t, d, s: ++s.seq };
      s.events.push(ev);
      if (s.socket && !s.silent) send(s.socket, { op: 0, ...ev });
    }
  }

  drop(): void {
    for (const ws of this.sockets) ws.terminate();
  }

  silence(): void {
    for (const s of this.sessions.values()) if (s.socket) s.silent = true;
  }

  onSocket(ws: WebSocket): void {
    this.stats.connections++;
    this.sockets.add(ws);
    let session: Session | undefined;
    ws.on('close', () => {
      this.sockets.delete(ws);
      if (session?.socket === ws) session.socket = undefined;
    });
    if (this.deaf) return;
    send(ws, { op: 10, d: { heartbeat_interval: this.o.heartbeatMs() }, s: null, t: null });
    ws.on('message', (raw) => {
      let p: { op: number; d: { token?: string; session_id?: string; seq?: number; intents?: number } | null };
      try {
        p = JSON.parse(String(raw));
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      if (p.op === 1) {
        this.stats.heartbeats++;
        if (!session?.silent) send(ws, { op: 11, d: null, s: null, t: null });
        return;
      }
      if (p.op === 2) {
        this.stats.identifies++;
        if (p.d?.token !== this.o.token) return ws.close(4004, 'Authentication failed.');
        const code = this.identifyCloseCode;
        if (code) return ws.close(code, code === 4004 ? 'Authentication failed.' : 'Disallowed intent(s).');
        const s: Session = {
          id: `s${Math.random().toString(36).slice(2, 12)}`,
          seq: 0,
          events: [],
          socket: ws,
          silent: false,
          intents: typeof p.d?.intents === 'number' ? p.d.intents : undefined,
        };
        session = s;
        this.sessions.set(s.id, s);
        for (const [t, d] of [
          ['READY', this.o.ready(s.id)],
          ['GUILD_CREATE', this.o.guild()],
        ] as const) {
          s.events.push({ t, d, s: ++s.seq });
          send(ws, { op: 0, t, d, s: s.seq });
        }
        return;
      }
      if (p.op === 6) {
        this.stats.resumes++;
        if (p.d?.token !== this.o.token) return ws.close(4004, 'Authentication failed.');
        const s = this.sessions.get(String(p.d?.session_id));
        if (!s) return send(ws, { op: 9, d: false, s: null, t: null });
        if (s.socket && s.socket !== ws) s.socket.terminate();
        s.socket = ws;
        s.silent = false;
        session = s;
        for (const ev of s.events.filter((e) => e.s > Number(p.d?.seq ?? 0))) send(ws, { op: 0, ...ev });
        this.stats.resumed++;
        send(ws, { op: 0, t: 'RESUMED', d: {}, s: ++s.seq });
      }
    });
  }
}

function send(ws: WebSocket, payload: unknown): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(payload));
}
