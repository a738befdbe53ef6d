/**
 * Last line of defence for "keys never appear in logs or errors": provider plugins must not put a key in an
 * error, and the router still masks anything shaped like one before it logs or rethrows a message.
 */
const PATTERNS: RegExp[] = [
  /\bsk-(?:ant-|proj-|or-)?[A-Za-z0-9_-]{8,}/g, // providers A, C, E
  /\bAKIA[0-9A-Z]{12,}\b/g, // AWS access key ids
  /\bASIA[0-9A-Z]{12,}\b/g,
  /\bAIza[0-9A-Za-z_-]{20,}/g, // Google API keys
  /\b(?:xai|gsk|csk|nvapi)[-_][A-Za-z0-9_-]{8,}/g, // xAI, Groq, Cerebras, NVIDIA
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b((?:api[_-]?key|key|token|secret|password|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"'&,;]{6,}/gi,
];

export function redact(text: string): string {
  let out = text;
  for (const p of PATTERNS) {
    out = out.replace(p, (m, prefix: unknown) => (typeof prefix === 'string' && prefix && m.startsWith(prefix) ? `${prefix}***` : '***'));
  }
  return out;
}
