/**
 * The blank-page circuit breaker of SPEC: a blank load is recovered automatically (at most 3 attempts); 3
 * consecutive blank pages from the same domain switch the browser to headful mode; a successful navigation
 * clears the domain's count.
 */
export const MAX_RECOVERY = 3;
export const BLANKS_TO_HEADFUL = 3;

export class BlankPageBreaker {
  private readonly counts = new Map<string, number>();

  static domainOf(url: string): string {
    try {
      return new URL(url).hostname.toLowerCase();
    } catch {
      return '';
    }
  }

  /** Records a blank load; true when this domain has now reached the headful threshold. */
  blank(url: string): boolean {
    const d = BlankPageBreaker.domainOf(url);
    const n = (this.counts.get(d) ?? 0) + 1;
    this.counts.set(d, n);
    return n >= BLANKS_TO_HEADFUL;
  }

  /** A navigation that showed content clears the domain's count. */
  success(url: string): void {
    this.counts.delete(BlankPageBreaker.domainOf(url));
  }

  count(url: string): number {
    return this.counts.get(BlankPageBreaker.domainOf(url)) ?? 0;
  }
}
