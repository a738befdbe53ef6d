/**
 * Which gateway events belong to the chat screen. A chat message becomes a task (`POST /api/tasks`); its thoughts and
 * its end arrive as events over the WebSocket. With a fast model the end can arrive before the POST has answered with
 * the task's id: such an end is kept (the last 100 unknown ones) and shown when the id comes back, so no reply is lost.
 */
import type { ChatLine } from './views.js';

const KEEP_EARLY = 100;

export class ChatTracker {
  /** Tasks of the chat whose end has not arrived yet. */
  private readonly open = new Set<string>();
  /** Ends of tasks not known (yet) to be the chat's: id → the line to show. */
  private readonly early = new Map<string, ChatLine>();

  /**
   * The POST answered with the task's id: the line to show now if its end came first, else undefined (and its
   * events are the chat's from now on).
   */
  sent(taskId: string): ChatLine | undefined {
    const done = this.early.get(taskId);
    if (done) {
      this.early.delete(taskId);
      return done;
    }
    this.open.add(taskId);
    return undefined;
  }

  /** A gateway event: the chat line it makes, if it is about a chat task. */
  event(name: string, data: Record<string, unknown>): ChatLine | undefined {
    const id = typeof data.actionId === 'string' ? data.actionId : undefined;
    if (!id) return undefined;
    const end = name === 'action.completed' || name === 'action.failed';
    if (!this.open.has(id)) {
      if (end) {
        this.early.set(id, line(name, data));
        if (this.early.size > KEEP_EARLY) this.early.delete(this.early.keys().next().value!);
      }
      return undefined;
    }
    if (end) {
      this.open.delete(id);
      return line(name, data);
    }
    if (name === 'thinking') return { who: 'thinking', text: String(data.thought ?? '') };
    return undefined;
  }
}

function line(name: string, data: Record<string, unknown>): ChatLine {
  return name === 'action.completed'
    ? { who: 'agent', text: String(data.result ?? '') }
    : { who: 'error', text: String(data.error ?? 'the task failed') };
}
