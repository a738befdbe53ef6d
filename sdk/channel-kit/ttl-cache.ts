/**
 * A small bounded map whose entries expire: what a channel keeps of the platform's answers to lookups (people's
 * names, a thread's first message), so a busy chat asks once, and memory stays bounded. The newest `max` entries
 * are kept, each for `ttlMs`; setting a key again makes it the newest.
 * @example
 * const names = new TtlCache<string, string | undefined>(60 * 60_000, 5000);
 * const hit = names.get(id); if (hit) return hit.value; names.set(id, await lookUp(id));
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { at: number; value: V }>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
  ) {}

  /** `{ value }` when a fresh entry is kept for `key` (its value may be undefined: "asked, nothing there"). */
  get(key: K): { value: V } | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (Date.now() - e.at >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return { value: e.value };
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { at: Date.now(), value });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
