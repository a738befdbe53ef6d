/**
 * The inboxes of the actions running in this process (capability `agent:inbox`). An action's inbox exists from
 * the start of its loop to its end; what is offered in between is read before the next model call. Bounded: a
 * full inbox refuses (the channel then makes a new message of the input), so a flood cannot grow memory.
 */
import type { AgentInboxCapability, AgentInput } from '../../../sdk/index.js';

/** Inputs waiting per action. */
export const INBOX_LIMIT = 20;
/** Characters of one input the model is shown. */
export const INPUT_CAP = 4000;

export class Inboxes {
  private readonly open = new Map<string, AgentInput[]>();

  /** The action's loop starts: it takes input from now on. */
  start(actionId: string): void {
    if (!this.open.has(actionId)) this.open.set(actionId, []);
  }

  /** What was offered since the last call, oldest first. */
  drain(actionId: string): AgentInput[] {
    const box = this.open.get(actionId);
    return box ? box.splice(0) : [];
  }

  /** How many inputs wait for the action. */
  pending(actionId: string): number {
    return this.open.get(actionId)?.length ?? 0;
  }

  /** The loop ends: inputs nobody read are given back to their senders (`onUnread`). */
  end(actionId: string): void {
    const left = this.open.get(actionId) ?? [];
    this.open.delete(actionId);
    for (const input of left) {
      try {
        input.onUnread?.();
      } catch {
        // The sender's fallback failing must not fail the action's end.
      }
    }
  }

  capability(): AgentInboxCapability {
    return {
      offer: (actionId, input) => {
        const box = this.open.get(actionId);
        if (!box || box.length >= INBOX_LIMIT || typeof input?.text !== 'string' || !input.text.trim()) return false;
        box.push({ ...input, text: input.text.slice(0, INPUT_CAP) });
        return true;
      },
      running: (actionId) => this.open.has(actionId),
    };
  }
}

/** The user message an input becomes; untrusted text is wrapped as data, and cannot close its wrapper early. */
export function inputMessage(input: AgentInput): string {
  if (!input.untrusted) return input.text;
  const body = input.text.replace(/<\/?channel_input/gi, (m) => m.replace('<', '&lt;'));
  return `<channel_input untrusted="true"${input.from ? ` from="${input.from.replace(/[^\w:.@-]/g, '_')}"` : ''}>\n${body}\n</channel_input>`;
}
