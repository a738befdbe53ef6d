/**
 * Progress feedback while an action runs: a typing indicator refreshed until the action settles (always
 * stopped: on completion, failure, cancel, and by a ceiling if the settle is never seen), and, unless typing only,
 * one short status message edited in place. Plus the one brief failure notice.
 */
import type { Logger } from '../types.js';
import type { ProgressUpdate } from '../channel.js';

export interface ProgressTransport {
  /** Shows "typing…" once (platforms expire it after a few seconds). */
  typing(chatId: string): Promise<void>;
  /** Sends the status message (no id) or edits it (id); returns its id. */
  status(chatId: string, text: string, messageId?: string): Promise<string>;
  /** Ends the status message when the action settles (delete it, or edit it to a last line). */
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

/** The status line shown for a step: short, one line. */
export function statusLine(u: ProgressUpdate): string {
  const thought = (u.thought ?? '').replace(/\s+/g, ' ').trim();
  const cut = thought.length > 120 ? `${thought.slice(0, 117)}…` : thought;
  return `\u23f3 ${u.step ? `Step ${u.step}: ` : ''}${cut || 'Working…'}`;
}

/**
 * What the user is told when their action failed: once, briefly, no stack trace, no paths into the code.
 * @example failureNotice('provider timeout\n    at x (/app/y.js:1:2)') // 'Sorry, that did not work: provider timeout'
 */
export function failureNotice(detail: string | undefined): string {
  const first = (detail ?? '').split('\n').find((l) => l.trim() && !/^\s*at\s/.test(l)) ?? '';
  const clean = first
    .replace(/\s+/g, ' ')
    .replace(/(\/[\w.-]+){2,}(:\d+)*/g, '…')
    .trim();
  const cut = clean.length > 200 ? `${clean.slice(0, 197)}…` : clean;
  return cut ? `Sorry, that did not work: ${cut}` : 'Sorry, that did not work.';
}

/**
 * @example
 * const progress = new ProgressFeedback({ transport: { typing: (c) => api.sendChatAction(c, 'typing').then(() => {}),
 *   status: async (c, t, id) => id ? (await api.editMessageText(c, +id, t), id) : String((await api.sendMessage(c, t)).message_id) }, log });
 * progress.update(action.id, chatId, { typingOnly: true }); ... progress.stop(action.id);
 */
export class ProgressFeedback {
  private readonly running = new Map<string, Running>();

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
    await r.editing.catch(() => undefined);
    if (r.statusId && this.o.transport.finish) await this.o.transport.finish(r.chatId, r.statusId).catch(() => undefined);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running.keys()].map((id) => this.stop(id)));
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
        .then(() => this.o.transport.status(r.chatId, t, r.statusId))
        .then((id) => {
          r.statusId = id;
        })
        .catch((e) => this.o.log.debug(`status edit: ${String(e)}`));
    }, wait);
  }
}
