/**
 * Whether the receiving server proved the From address (RFC 8601 Authentication-Results): DMARC pass for the
 * From domain, or a DKIM or SPF pass aligned with it. The From header alone proves nothing, so an address in
 * `adminUsers.email` counts as admin only when this says yes (docs/email.md).
 */

export interface AuthVerdict {
  proven: boolean;
  /** Which result proved it (`dmarc`, `dkim`, `spf`), or why nothing did. */
  detail: string;
}

interface MethodResult {
  method: string;
  result: string;
  props: Record<string, string>;
}

/** Drops RFC 5322 comments `( ... )`, which may nest. */
function stripComments(s: string): string {
  let out = '';
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      if (!depth) out += c + s[i + 1];
      i++;
      continue;
    }
    if (c === '"' && !depth) quoted = !quoted;
    if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')' && depth) depth--;
    else if (!depth) out += c;
  }
  return out;
}

/** The authserv-id and the method results of one header value. */
export function parseAuthResults(value: string): { servId: string; results: MethodResult[] } {
  const parts = stripComments(value)
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
  const servId = (parts.shift() ?? '').split(/\s+/)[0]!.toLowerCase();
  const results: MethodResult[] = [];
  for (const p of parts) {
    const tokens = p.split(/\s+/);
    const head = /^([a-z0-9_-]+)(?:\/[0-9]+)?=([a-z]+)$/i.exec(tokens.shift() ?? '');
    if (!head) continue;
    const props: Record<string, string> = {};
    for (const t of tokens) {
      const kv = /^([a-z0-9_-]+\.[a-z0-9_.-]+)=(.+)$/i.exec(t);
      if (kv) props[kv[1]!.toLowerCase()] = kv[2]!.replace(/^"|"$/g, '').toLowerCase();
    }
    results.push({ method: head[1]!.toLowerCase(), result: head[2]!.toLowerCase(), props });
  }
  return { servId, results };
}

const domainOf = (v: string | undefined) => {
  if (!v) return undefined;
  const at = v.lastIndexOf('@');
  return (at >= 0 ? v.slice(at + 1) : v).replace(/[>\s]+$/, '').toLowerCase() || undefined;
};

/** Relaxed alignment (RFC 7489 3.1): the same domain, or one a subdomain of the other. */
function aligned(a: string | undefined, b: string): boolean {
  if (!a) return false;
  return a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`);
}

/**
 * Decide from the Authentication-Results values (topmost first) whether `from` is proven. Only the topmost header
 * carrying the receiving server's authserv-id (`servId`, from emailAuthServId) counts: a header with any other id,
 * or any header at all when the id is not configured, may have been written by the sender (on a server that adds
 * none, a forged one would be the topmost), so nothing is proven then.
 * @example authVerdict(['mx.example.org; dmarc=pass header.from=example.org'], 'ada@example.org', 'mx.example.org').proven // true
 */
export function authVerdict(values: string[], from: string, servId: string | undefined): AuthVerdict {
  const fromDomain = domainOf(from);
  if (!fromDomain) return { proven: false, detail: 'no From address' };
  if (!servId) return { proven: false, detail: 'emailAuthServId is not set, so no Authentication-Results header is trusted' };
  const ours = values.map(parseAuthResults).find((h) => h.servId === servId);
  const trusted = ours ? [ours] : [];
  if (!trusted.length) return { proven: false, detail: `no Authentication-Results from ${servId}` };
  for (const h of trusted) {
    for (const r of h.results) {
      if (r.result !== 'pass') continue;
      if (r.method === 'dmarc' && (r.props['header.from'] === undefined || r.props['header.from'] === fromDomain))
        return { proven: true, detail: 'dmarc=pass' };
      if (r.method === 'dkim' && aligned(domainOf(r.props['header.d'] ?? r.props['header.i']), fromDomain))
        return { proven: true, detail: 'dkim=pass (aligned)' };
      if (r.method === 'spf' && aligned(domainOf(r.props['smtp.mailfrom']), fromDomain))
        return { proven: true, detail: 'spf=pass (aligned)' };
    }
  }
  return { proven: false, detail: 'no DMARC, aligned DKIM or aligned SPF pass' };
}
