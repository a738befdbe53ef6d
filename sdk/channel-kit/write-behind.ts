/**
 * Rows of one UPDATE written behind: held until the end of the current turn of the event loop, then committed
 * together (one commit for all the rows of a turn), with `synchronous=NORMAL`. For marks whose loss to a crash only
 * repeats work that is safe to repeat (the ledger's "sent", the ingress's "done"). `flush()` writes them at once
 * (before a read that must see them, or a request that must not leave while one is held); `take()` hands them to a
 * caller's own transaction. The store's close writes what is still held.
 */
import type { StatementSync } from 'node:sqlite';
import type { ChannelStore } from './store.js';

type Param = string | number | null;

export class WriteBehind<R extends Param[]> {
  private rows: R[] = [];
  private timer: NodeJS.Immediate | undefined;

  /** `onError`: a failed end-of-turn write (its rows stay held for the next flush, which throws to its caller). */
  constructor(
    private readonly store: ChannelStore,
    private readonly stmt: StatementSync,
    private readonly onError: (e: unknown, held: number) => void = () => undefined,
  ) {
    store.beforeClose(() => this.flush());
  }

  /** Holds a row until the end of this turn. */
  add(row: R): void {
    this.rows.push(row);
    this.timer ??= setImmediate(() => {
      this.timer = undefined;
      try {
        if (this.store.db.isOpen) this.flush();
      } catch (e) {
        this.onError(e, this.rows.length);
      }
    });
  }

  /** Commits the rows held (one commit). Throws if the store refuses them; they stay held then. */
  flush(): void {
    const rows = this.take();
    if (!rows.length) return;
    try {
      if (rows.length === 1) {
        this.store.durability('NORMAL');
        this.stmt.run(...rows[0]!);
      } else this.store.tx(() => this.write(rows), 'NORMAL');
    } catch (e) {
      this.restore(rows);
      throw e;
    }
  }

  /** The rows held, no longer held: for the caller's own transaction (`write` them there, `restore` on failure). */
  take(): R[] {
    if (this.timer) clearImmediate(this.timer);
    this.timer = undefined;
    const rows = this.rows;
    this.rows = [];
    return rows;
  }

  /** Writes `rows` in the transaction the caller has open. */
  write(rows: R[]): void {
    for (const r of rows) this.stmt.run(...r);
  }

  /** Puts back rows `take` returned whose transaction failed (before any held since). */
  restore(rows: R[]): void {
    this.rows = rows.concat(this.rows);
  }
}
