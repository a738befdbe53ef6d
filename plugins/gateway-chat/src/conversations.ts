/**
 * The recent messages of each conversation, in memory and bounded, so a page that reloads can show them again
 * (`GET /api/chat/:conversationId`). The queue keeps the actions themselves; this is only the view.
 */

export interface ChatMessage {
  role: 'user' | 'agent' | 'error';
  text: string;
  at: string;
  messageId: string;
  actionId?: string;
}

/** Messages kept per conversation, and conversations kept (the least recently used go first). */
export const HISTORY_PER_CONVERSATION = 200;
export const CONVERSATIONS_KEPT = 100;

export class Conversations {
  private readonly map = new Map<string, ChatMessage[]>();

  add(conversationId: string, m: ChatMessage): void {
    const list = this.map.get(conversationId) ?? [];
    this.map.delete(conversationId);
    list.push(m);
    if (list.length > HISTORY_PER_CONVERSATION) list.splice(0, list.length - HISTORY_PER_CONVERSATION);
    this.map.set(conversationId, list);
    if (this.map.size > CONVERSATIONS_KEPT) this.map.delete(this.map.keys().next().value!);
  }

  get(conversationId: string): ChatMessage[] {
    return [...(this.map.get(conversationId) ?? [])];
  }
}
