/**
 * The persisted action timelines: one SQLite file (node:sqlite, WAL) under `$KEEL_HOME/timeline/`, so a timeline
 * survives restarts, several Keel processes of one home (the agent, a background gateway) write to it together,
 * and `keel trace` reads it whether or not Keel runs.
 *
 * Bounds (docs/timelines.md): at most `maxEvents` events per action (the oldest after its origin are dropped and
 * counted), at most `maxActions` actions (the oldest by first sight go, with their events) and as many ignored
 * inbound records. Timelines are a diagnostic record: commits use synchronous=NORMAL (a power cut may lose the
 * last events, never corrupt the file).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

export const DEFAULT_MAX_EVENTS = 200;
export const DEFAULT_MAX_ACTIONS = 1000;

/** Event kinds, in the order they usually happen. */
export type TimelineEventType = 'received' | 'queued' | 'amended' | 'started' | 'model_call' | 'skill_call' | 'reply' | 'retry' | 'settled';

/**
 * One entry of an action's timeline. `data` depends on `type` (docs/timelines.md).
 * @example { seq: 3, at: '2026-11-24T03:00:00.000Z', type: 'model_call', data: { provider: 'providerA', model: 'gpt-4o-mini', inputTokens: 310, outputTokens: 12, durationMs: 840, ok: true } }
 */
export interface TimelineEvent {
  seq: number;
  at: string;
  type: TimelineEventType;
  data: Record<string, unknown>;
}

/** What the timeline keeps about the action itself (so `keel trace` needs neither the queue nor a running Keel). */
export interface TimelineAction {
  id: string;
  task: string;
  source: string;
  status: string;
  createdAt: string;
  settledAt?: string;
  /**
   * Where it came from, for actions a channel pushed (`metadata.inbound`); `untrusted` when the sender is not an
   * admin, `quotedFrom` / `quotedTrusted` when it replies to a message (`metadata.quoted`).
   */
  inbound?: {
    channel: string;
    messageId: string;
    userId?: string;
    untrusted?: true;
    quotedFrom?: string;
    quotedTrusted?: boolean;
    /** An edit of the message `messageId` (then also `messageId`): when, and the action that took up its earlier version. */
    editOf?: string;
    editedAt?: string;
    after?: string;
  };
  result?: string;
  error?: string;
}

export interface Timeline {
  action: TimelineAction;
  events: TimelineEvent[];
  /** Events dropped by the per-action bound. */
  dropped: number;
}

/** An inbound message that did not become an action. */
export interface IgnoredRecord {
  at: string;
  channel: string;
  messageId: string;
  chatId?: string;
  userId?: string;
  reason: string;
}

interface ActionRow {
  id: string;
  task: string;
  source: string;
  status: string;
  created_at: string;
  settled_at: string | null;
  channel: string | null;
  message_id: string | null;
  user_id: string | null;
  result: string | null;
  error: string | null;
  events: number;
  dropped: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS actions (
  rid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  task TEXT NOT NULL,
  source TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  settled_at TEXT,
  channel TEXT,
  message_id TEXT,
  user_id TEXT,
  result TEXT,
  error TEXT,
  events INTEGER NOT NULL DEFAULT 0,
  dropped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS actions_message ON actions (message_id);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  action_id TEXT NOT NULL,
  at TEXT NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_action ON events (action_id, seq);
CREATE TABLE IF NOT EXISTS ignored (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  channel TEXT NOT NULL,
  message_id TEXT NOT NULL,
  chat_id TEXT,
  user_id TEXT,
  reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ignored_message ON ignored (message_id);
`;

/** Events that say where an action came from: never dropped by the per-action bound. */
const KEPT = "('received', 'queued')";

export function timelineFile(home: string): string {
  return join(home, 'timeline', 'timeline.db');
}

/**
 * @example
 * const store = TimelineStore.open(ctx.home, { maxEvents: 200, maxActions: 1000 });
 * store.ensure(action); store.add(action.id, 'started', { attempt: 1 });
 */
export class TimelineStore {
  private readonly statements = new Map<string, StatementSync>();

  private constructor(
    readonly db: DatabaseSync,
    private readonly bounds: () => { maxEvents: number; maxActions: number },
  ) {}

  /** Opens (creating) the store for writing. `bounds` is read at each write, so configuration changes apply at once. */
  static open(
    home: string,
    bounds: () => { maxEvents: number; maxActions: number } = () => ({ maxEvents: DEFAULT_MAX_EVENTS, maxActions: DEFAULT_MAX_ACTIONS }),
  ): TimelineStore {
    const file = timelineFile(home);
    mkdirSync(join(home, 'timeline'), { recursive: true, mode: 0o700 });
    const db = new DatabaseSync(file, { timeout: 5000 });
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    db.exec(SCHEMA);
    return new TimelineStore(db, bounds);
  }

  /** Opens an existing store read-only (`keel trace`); undefined when nothing was ever recorded. */
  static read(home: string): TimelineStore | undefined {
    try {
      const db = new DatabaseSync(timelineFile(home), { readOnly: true, timeout: 5000 });
      return new TimelineStore(db, () => ({ maxEvents: DEFAULT_MAX_EVENTS, maxActions: DEFAULT_MAX_ACTIONS }));
    } catch {
      return undefined;
    }
  }

  private st(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private depth = 0;

  /** One transaction around `fn`; nested calls join the outer one (a batch of writes commits once). */
  tx<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.db.exec('BEGIN IMMEDIATE');
    this.depth++;
    try {
      const r = fn();
      this.depth--;
      this.db.exec('COMMIT');
      return r;
    } catch (e) {
      this.depth--;
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  has(id: string): boolean {
    return this.st('SELECT 1 FROM actions WHERE id = ?').get(id) !== undefined;
  }

  /**
   * Starts the timeline of an action the first time it is seen: its origin (`received`, for actions a channel
   * pushed) and `queued` at its creation time. Returns false when it already had one.
   */
  ensure(a: TimelineAction & { status: string }): boolean {
    return this.tx(() => {
      const r = this.st(
        'INSERT OR IGNORE INTO actions (id, task, source, status, created_at, channel, message_id, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ).run(
        a.id,
        a.task.slice(0, 500),
        a.source,
        a.status,
        a.createdAt,
        a.inbound?.channel ?? null,
        a.inbound?.messageId ?? null,
        a.inbound?.userId ?? null,
      );
      if (r.changes !== 1) return false;
      if (a.inbound) this.insert(a.id, a.createdAt, 'received', { ...a.inbound });
      this.insert(a.id, a.createdAt, 'queued', { source: a.source });
      this.pruneActions();
      return true;
    });
  }

  /** Appends an event to an action's timeline (which must exist: see `ensure`), keeping the per-action bound. */
  add(actionId: string, type: TimelineEventType, data: Record<string, unknown>, at = new Date().toISOString()): void {
    this.tx(() => {
      if (!this.has(actionId)) return;
      this.insert(actionId, at, type, data);
      const { maxEvents } = this.bounds();
      const row = this.st('SELECT events FROM actions WHERE id = ?').get(actionId) as { events: number };
      const excess = row.events - Math.max(maxEvents, 3);
      if (excess > 0) {
        const gone = this.st(
          `DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE action_id = ? AND type NOT IN ${KEPT} ORDER BY seq LIMIT ?)`,
        ).run(actionId, excess).changes;
        this.st('UPDATE actions SET events = events - ?, dropped = dropped + ? WHERE id = ?').run(gone, gone, actionId);
      }
    });
  }

  /** A waiting action's task changed in place (an edited chat message): the new task is the action's. */
  retask(actionId: string, task: string): void {
    this.st('UPDATE actions SET task = ? WHERE id = ?').run(task.slice(0, 500), actionId);
  }

  /** Records the action's state after it settled (or went back for a retry). */
  update(actionId: string, s: { status: string; settledAt?: string; result?: string; error?: string }): void {
    this.st(
      'UPDATE actions SET status = ?, settled_at = COALESCE(?, settled_at), result = COALESCE(?, result), error = COALESCE(?, error) WHERE id = ?',
    ).run(s.status, s.settledAt ?? null, s.result?.slice(0, 500) ?? null, s.error?.slice(0, 500) ?? null, actionId);
  }

  ignored(r: IgnoredRecord): void {
    this.tx(() => {
      this.st('INSERT INTO ignored (at, channel, message_id, chat_id, user_id, reason) VALUES (?, ?, ?, ?, ?, ?)').run(
        r.at,
        r.channel,
        r.messageId,
        r.chatId ?? null,
        r.userId ?? null,
        r.reason,
      );
      const { maxActions } = this.bounds();
      this.st('DELETE FROM ignored WHERE seq <= (SELECT MAX(seq) FROM ignored) - ?').run(maxActions);
    });
  }

  get(actionId: string): Timeline | undefined {
    const row = this.st('SELECT * FROM actions WHERE id = ?').get(actionId) as ActionRow | undefined;
    if (!row) return undefined;
    const events = (
      this.st('SELECT seq, at, type, data FROM events WHERE action_id = ? ORDER BY seq').all(actionId) as Array<{
        seq: number;
        at: string;
        type: string;
        data: string;
      }>
    ).map((e) => ({ seq: e.seq, at: e.at, type: e.type as TimelineEventType, data: JSON.parse(e.data) as Record<string, unknown> }));
    return { action: toAction(row), events, dropped: row.dropped };
  }

  /**
   * Timelines of the actions pushed for a platform message id (any channel), oldest first. Channels whose ids are
   * `<chat>:<message>` (chatA) are found by the message part alone too, when nothing matches exactly.
   */
  byMessageId(messageId: string): Timeline[] {
    let ids = this.st('SELECT id FROM actions WHERE message_id = ? ORDER BY rid').all(messageId) as Array<{ id: string }>;
    if (!ids.length && !messageId.includes(':'))
      ids = this.st("SELECT id FROM actions WHERE message_id LIKE '%:' || ? ESCAPE '\\' ORDER BY rid").all(escapeLike(messageId)) as Array<{
        id: string;
      }>;
    return ids.map((r) => this.get(r.id)).filter((t): t is Timeline => t !== undefined);
  }

  /** Ignored records of a platform message id, oldest first (matched as `byMessageId` does). */
  ignoredFor(messageId: string): IgnoredRecord[] {
    const cols = 'SELECT at, channel, message_id, chat_id, user_id, reason FROM ignored';
    type Row = { at: string; channel: string; message_id: string; chat_id: string | null; user_id: string | null; reason: string };
    let rows = this.st(`${cols} WHERE message_id = ? ORDER BY seq`).all(messageId) as Row[];
    if (!rows.length && !messageId.includes(':'))
      rows = this.st(`${cols} WHERE message_id LIKE '%:' || ? ESCAPE '\\' ORDER BY seq`).all(escapeLike(messageId)) as Row[];
    return rows.map((r) => ({
      at: r.at,
      channel: r.channel,
      messageId: r.message_id,
      ...(r.chat_id ? { chatId: r.chat_id } : {}),
      ...(r.user_id ? { userId: r.user_id } : {}),
      reason: r.reason,
    }));
  }

  counts(): { actions: number; events: number; ignored: number } {
    const n = (sql: string) => (this.st(sql).get() as { n: number }).n;
    return {
      actions: n('SELECT COUNT(*) AS n FROM actions'),
      events: n('SELECT COUNT(*) AS n FROM events'),
      ignored: n('SELECT COUNT(*) AS n FROM ignored'),
    };
  }

  close(): void {
    try {
      this.db.close();
    } catch {
      // already closed
    }
  }

  private insert(actionId: string, at: string, type: TimelineEventType, data: Record<string, unknown>): void {
    this.st('INSERT INTO events (action_id, at, type, data) VALUES (?, ?, ?, ?)').run(actionId, at, type, JSON.stringify(data));
    this.st('UPDATE actions SET events = events + 1 WHERE id = ?').run(actionId);
  }

  private pruneActions(): void {
    const { maxActions } = this.bounds();
    const old = this.st('SELECT id FROM actions WHERE rid <= (SELECT MAX(rid) FROM actions) - ?').all(Math.max(1, maxActions)) as Array<{
      id: string;
    }>;
    for (const { id } of old) {
      this.st('DELETE FROM events WHERE action_id = ?').run(id);
      this.st('DELETE FROM actions WHERE id = ?').run(id);
    }
  }
}

/** `%` and `_` of a platform id match themselves (with `ESCAPE '\\'`). */
function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function toAction(r: ActionRow): TimelineAction {
  return {
    id: r.id,
    task: r.task,
    source: r.source,
    status: r.status,
    createdAt: r.created_at,
    ...(r.settled_at ? { settledAt: r.settled_at } : {}),
    ...(r.channel && r.message_id
      ? { inbound: { channel: r.channel, messageId: r.message_id, ...(r.user_id ? { userId: r.user_id } : {}) } }
      : {}),
    ...(r.result ? { result: r.result } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}
