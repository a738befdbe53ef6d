/**
 * Holding a chat's live messages while its history is caught up, so that the chat's messages are still recorded (and
 * handled) in the order they were written: a catch-up holds every chat it is going to read, a live message of a held
 * chat waits for its gate (and asks for that chat to be read next), and each chat is let go once its history is
 * recorded. Several catch-ups may hold the same chat; it opens when the last one lets it go.
 *
 * @example
 * const gates = new HistoryGates();
 * const held = new Set<string>();
 * for (const chat of due) gates.hold(chat, held);
 * for (const rest = [...due]; rest.length; ) {
 *   const chat = gates.next(rest);
 *   try { await readHistory(chat); } finally { gates.unhold(chat, held); }
 * }
 * // live: const wait = gates.gate(chatId); if (wait) await wait; record(message);
 */
interface Gate {
  holds: number;
  open: Promise<void>;
  release: () => void;
}

export class HistoryGates {
  private readonly gates = new Map<string, Gate>();
  /** Held chats a live message is waiting for: read before the others. */
  private readonly wanted = new Set<string>();
  /** While the chats to read are still being found (a list call): the promise `listed()` resolves. */
  private finding: { done: Promise<void>; resolve: () => void } | undefined;

  /**
   * The chats to read are being found (e.g. a platform call listing conversations after a new connection): until
   * `listed()`, a live message of a chat that may be among them (`gate(chat, mayBeListed)`) waits, then waits for
   * that chat's gate if the list held it. Starting again ends the previous wait.
   */
  listing(): void {
    this.listed();
    let resolve!: () => void;
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    this.finding = { done, resolve };
  }

  /** The list is in (or failed, or was cut short): the live messages waiting for it go on to their chat's gate. */
  listed(): void {
    this.finding?.resolve();
    this.finding = undefined;
  }

  /** Holds `chat` for one catch-up (`held`: the chats that catch-up holds; holding twice is one hold). */
  hold(chat: string, held: Set<string>): void {
    if (held.has(chat)) return;
    held.add(chat);
    let g = this.gates.get(chat);
    if (!g) {
      let release!: () => void;
      const open = new Promise<void>((r) => {
        release = r;
      });
      g = { holds: 0, open, release };
      this.gates.set(chat, g);
    }
    g.holds++;
  }

  /** Lets `chat` go for that catch-up; its live messages go on once no catch-up holds it. */
  unhold(chat: string, held: Set<string>): void {
    if (!held.delete(chat)) return;
    const g = this.gates.get(chat);
    if (!g || --g.holds > 0) return;
    this.gates.delete(chat);
    this.wanted.delete(chat);
    g.release();
  }

  /** Lets go of every chat `held` still holds. */
  releaseAll(held: Set<string>): void {
    for (const c of [...held]) this.unhold(c, held);
  }

  /** Opens every gate (the channel stops): the live messages waiting go on. */
  openAll(): void {
    this.listed();
    for (const g of this.gates.values()) g.release();
    this.gates.clear();
    this.wanted.clear();
  }

  /**
   * While `chat` is held, a promise that resolves when it is let go (and the chat is read next); else undefined, and
   * the live message is recorded at once. While the chats to read are being found (`listing()`), a chat for which
   * `mayBeListed()` says yes (e.g. one without a history cursor) waits for the list first.
   */
  gate(chat: string, mayBeListed?: () => boolean): Promise<void> | undefined {
    const g = this.gates.get(chat);
    if (g) {
      this.wanted.add(chat);
      return g.open;
    }
    const finding = this.finding;
    if (!finding || !mayBeListed?.()) return undefined;
    return finding.done.then(() => this.gate(chat));
  }

  /** Whether a live message waits for `chat`. */
  isWanted(chat: string): boolean {
    return this.wanted.has(chat);
  }

  /** Takes the chat to read next out of `rest`: one a live message waits for, else the first. */
  next(rest: string[]): string {
    const at = rest.findIndex((c) => this.wanted.has(c));
    const [chat] = rest.splice(Math.max(0, at), 1) as [string];
    this.wanted.delete(chat);
    return chat;
  }
}
