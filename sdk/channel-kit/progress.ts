/**
 * Progress feedback while an action runs: a typing indicator refreshed until the action settles (always
 * stopped: on completion, failure, cancel, and by a ceiling if the settle is never seen), and, unless typing only,
 * one short status message edited in place. Plus the one brief failure notice.
 *
 * Crash recovery: with a store, each status message is recorded (`status:<actionId>` → `{ chatId, messageId }`) as
 * soon as the platform gave it an id and forgotten once it is ended, so `recover()` in the next process can end the
 * ones a killed process left behind. Typing needs nothing: every platform expires it by itself within seconds.
 */
import type { Logger } from '../types.js';
import type { ProgressUpdate } from '../channel.js';
import type { ChannelStore } from './store.js';

/**
 * What a status message left by a killed process becomes when it cannot be deleted.
 * @example await transport.status(chatId, INTERRUPTED_LINE, leftoverId);
 */
export const INTERRUPTED_LINE = '\u23f9 Interrupted \u2014 resuming.';
/**
 * What a status message becomes when its action settled but deleting it failed, then failed again at the next start.
 * @example await transport.status(chatId, FINISHED_LINE, settledId);
 */
export const FINISHED_LINE = '\u23f9 Finished.';

const PREFIX = 'status:';

interface StatusRecord {
  chatId: string;
  messageId: string;
  /** The action settled, only deleting the message failed. */
  settled?: boolean;
}

export interface ProgressTransport {
  /** Shows "typing…" once (platforms expire it after a few seconds). */
  typing(chatId: string): Promise<void>;
  /** Sends the status message (no id) or edits it (id); returns its id. */
  status(chatId: string, text: string, messageId?: string): Promise<string>;
  /**
   * Ends the status message when the action settles (delete it, or edit it to a last line). Should reject when that
   * failed: the message is then kept on record, and `recover()` edits it to a last line instead.
   */
  finish?(chatId: string, messageId: string): Promise<void>;
}

export interface ProgressOptions {
  transport: ProgressTransport;
  log: Logger;
  /** Typing refresh (Telegram shows it for 5 s; default 4000 ms). */
  refreshMs?: number;
  /** Least time between two edits of the status message (default 3000 ms). */
  editMinMs?: number;
  /** Typing stops after this long even if no settle is seen (default 10 min). */
  ceilingMs?: number;
  /**
   * The channel's store: status messages are recorded in it so that `recover()` in the next process ends the ones
   * a crash left in the chat. Without it they are kept in memory only.
   */
  store?: ChannelStore;
}

interface Running {
  chatId: string;
  timer: NodeJS.Timeout;
  ceiling: NodeJS.Timeout;
  statusId?: string | undefined;
  lastEdit: number;
  queued?: string | undefined;
  editTimer?: NodeJS.Timeout | undefined;
  editing: Promise<unknown>;
}

/**
 * The status line shown for a step: short, one line, with the step number once. A thought that already begins
 * with "Step <n>:" (the agent's own line when the model gave no reasoning, "Step 1: calling recall_memory.") is
 * not prefixed again.
 */
export function statusLine(u: ProgressUpdate): string {
  let thought = (u.thought ?? '').replace(/\s+/g, ' ').trim();
  if (u.step) thought = thought.replace(/^step\s*\d+\s*:\s*/i, '');
  const cut = thought.length > 120 ? `${thought.slice(0, 117)}…` : thought;
  return `\u23f3 ${u.step ? `Step ${u.step}: ` : ''}${cut || 'Working…'}`;
}

/**
 * What the user is told when their action failed: once, briefly, no stack trace, no paths into the code. `lead`
 * is how it begins (a channel whose clients know another wording: the gateway chat's `Sorry, this failed`).
 * @example failureNotice('provider timeout\n    at x (/app/y.js:1:2)') // 'Sorry, that did not work: provider timeout'
 */
export function failureNotice(detail: string | undefined, lead = 'Sorry, that did not work'): string {
  const first = (detail ?? '').split('\n').find((l) => l.trim() && !/^\s*at\s/.test(l)) ?? '';
  const clean = first
    .replace(/\s+/g, ' ')
    .replace(/(\/[\w.-]+){2,}(:\d+)*/g, '…')
    .trim();
  const cut = clean.length > 200 ? `${clean.slice(0, 197)}…` : clean;
  return cut ? `${lead}: ${cut}` : `${lead}.`;
}

/**
 * @example
 * const progress = new ProgressFeedback({ transport: { typing: (c) => api.sendChatAction(c, 'typing').then(() => {}),
 *   status: async (c, t, id) => id ? (await api.editMessageText(c, +id, t), id) : String((await api.sendMessage(c, t)).message_id),
 *   finish: async (c, id) => void (await api.deleteMessage(c, +id)) }, store, log });
 * void progress.recover(); // once connected: ends the status messages a killed process left
 * progress.update(action.id, chatId, { typingOnly: true }); ... progress.stop(action.id);
 */
export class ProgressFeedback {
  private readonly running = new Map<string, Running>();
  /** Actions whose recorded status message belongs to this process (live, or being ended): `recover()` skips them. */
  private readonly mine = new Set<string>();
  /** Status messages being ended, by action: a new one for the same action waits for it. */
  private readonly ending = new Map<string, Promise<unknown>>();
  /** Leftovers being recovered, by `actionId messageId`: never ended twice. */
  private readonly recovering = new Map<string, Promise<void>>();

  constructor(private readonly o: ProgressOptions) {}

  /** Starts (or continues) feedback for an action; a status text is shown unless `typingOnly`. */
  update(actionId: string, chatId: string, u: ProgressUpdate): void {
    let r = this.running.get(actionId);
    if (!r) {
      const tick = () => void this.o.transport.typing(chatId).catch((e) => this.o.log.debug(`typing: ${String(e)}`));
      tick();
      r = {
        chatId,
        timer: setInterval(tick, this.o.refreshMs ?? 4000),
        ceiling: setTimeout(() => void this.stop(actionId), this.o.ceilingMs ?? 600_000),
        lastEdit: 0,
        editing: Promise.resolve(),
      };
      r.timer.unref?.();
      r.ceiling.unref?.();
      this.running.set(actionId, r);
    }
    if (!u.typingOnly && (u.thought || u.step)) this.edit(actionId, r, statusLine(u));
  }

  /** Whether feedback runs for the action. */
  active(actionId: string): boolean {
    return this.running.has(actionId);
  }

  /** Stops typing and ends the status message. Safe to call for unknown or stopped actions. */
  async stop(actionId: string): Promise<void> {
    const r = this.running.get(actionId);
    if (!r) return;
    this.running.delete(actionId);
    clearInterval(r.timer);
    clearTimeout(r.ceiling);
    if (r.editTimer) clearTimeout(r.editTimer);
    r.queued = undefined;
    const ended = r.editing.catch(() => undefined).then(() => (r.statusId ? this.end(actionId, r.chatId, r.statusId) : undefined));
    this.ending.set(actionId, ended);
    await ended;
    if (this.ending.get(actionId) === ended) this.ending.delete(actionId);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.stop(id)));
  }

  /**
   * Ends every status message a previous process recorded and did not end (it was killed): deleted through
   * `finish`, or edited to `INTERRUPTED_LINE` when that fails, then forgotten either way (one attempt: a message
   * that can be neither deleted nor edited is gone or out of reach). Call it when the connection is up; calling it
   * again (each reconnect) only retries what this process failed to end. Returns how many were found.
   * @example connected(); void outbox.resumeAll(sendOne); void progress.recover();
   */
  async recover(): Promise<number> {
    const left = this.records().filter((r) => !this.mine.has(r.actionId));
    await Promise.all(left.map((r) => this.recoverOne(r.actionId, r)));
    return left.length;
  }

  /** Deletes (or finally edits) a status message; forgets its record when that worked, else marks it settled. */
  private async end(actionId: string, chatId: string, messageId: string): Promise<void> {
    try {
      if (this.o.transport.finish) await this.o.transport.finish(chatId, messageId);
      this.forget(actionId, messageId);
    } catch (e) {
      this.o.log.debug(`status finish: ${String(e)}`);
      // Kept on record (settled) for the next recover(), which no longer counts it as this process's.
      this.write(actionId, { chatId, messageId, settled: true });
    }
    this.mine.delete(actionId);
  }

  private recoverOne(actionId: string, rec: StatusRecord): Promise<void> {
    const key = `${actionId} ${rec.messageId}`;
    const busy = this.recovering.get(key);
    if (busy) return busy;
    const p = (async () => {
      try {
        try {
          if (!this.o.transport.finish) throw new Error('no finish');
          await this.o.transport.finish(rec.chatId, rec.messageId);
        } catch {
          await this.o.transport.status(rec.chatId, rec.settled ? FINISHED_LINE : INTERRUPTED_LINE, rec.messageId);
        }
      } catch (e) {
        this.o.log.warn(`A status message (${rec.messageId}) left by an earlier run could not be removed: ${String(e)}`);
      }
      this.forget(actionId, rec.messageId);
    })().finally(() => this.recovering.delete(key));
    this.recovering.set(key, p);
    return p;
  }

  /** Before an action's first status message: the previous one of the same action (a crashed run) is ended first. */
  private async clearBefore(actionId: string): Promise<void> {
    await this.ending.get(actionId);
    const rec = this.read(actionId);
    if (rec) await this.recoverOne(actionId, rec);
  }

  private records(): Array<StatusRecord & { actionId: string }> {
    if (!this.o.store) return [];
    const out: Array<StatusRecord & { actionId: string }> = [];
    try {
      for (const { key, value } of this.o.store.values(PREFIX)) {
        const rec = parse(value);
        if (rec) out.push({ ...rec, actionId: key.slice(PREFIX.length) });
        else this.o.store.deleteValue(key);
      }
    } catch (e) {
      this.o.log.warn(`Could not read the recorded status messages: ${String(e)}`);
    }
    return out;
  }

  private read(actionId: string): StatusRecord | undefined {
    try {
      const v = this.o.store?.getValue(PREFIX + actionId);
      return v ? parse(v) : undefined;
    } catch {
      return undefined;
    }
  }

  private write(actionId: string, rec: StatusRecord): void {
    try {
      this.o.store?.setValue(PREFIX + actionId, JSON.stringify(rec));
    } catch (e) {
      this.o.log.debug(`status record: ${String(e)}`);
    }
  }

  /** Forgets the record only if it still names this message (a newer one of the same action stays). */
  private forget(actionId: string, messageId: string): void {
    try {
      if (this.read(actionId)?.messageId === messageId) this.o.store?.deleteValue(PREFIX + actionId);
    } catch (e) {
      this.o.log.debug(`status record: ${String(e)}`);
    }
  }

  private edit(actionId: string, r: Running, text: string): void {
    r.queued = text;
    if (r.editTimer) return;
    const wait = Math.max(0, r.lastEdit + (this.o.editMinMs ?? 3000) - Date.now());
    r.editTimer = setTimeout(() => {
      r.editTimer = undefined;
      const t = r.queued;
      r.queued = undefined;
      if (!t || this.running.get(actionId) !== r) return;
      r.lastEdit = Date.now();
      r.editing = r.editing
        .then(async () => {
          if (r.statusId) return void (await this.o.transport.status(r.chatId, t, r.statusId));
          if (this.o.store) await this.clearBefore(actionId);
          const id = await this.o.transport.status(r.chatId, t);
          // Recorded before anything else happens: a kill from here on leaves a message recover() can end.
          this.mine.add(actionId);
          this.write(actionId, { chatId: r.chatId, messageId: id });
          r.statusId = id;
        })
        .catch((e) => this.o.log.debug(`status edit: ${String(e)}`));
    }, wait);
  }
}

function parse(value: string): StatusRecord | undefined {
  try {
    const v = JSON.parse(value) as Partial<StatusRecord>;
    return typeof v.chatId === 'string' && typeof v.messageId === 'string' ? (v as StatusRecord) : undefined;
  } catch {
    return undefined;
  }
}
