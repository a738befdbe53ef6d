/**
 * What a credential looks like, for the places that must never show one (logs, errors, telemetry) even when it is
 * not one of Keel's own configured secrets: a token a person pastes into a chat, a key in a URL a library put in
 * its error. Keel's configured secrets are scrubbed by value besides (kernel/log.ts, vendors/common.ts); these
 * shapes catch the rest. Each match becomes `[redacted]`, keeping a label before it (`key=`, `Bearer `).
 *
 * The shapes are the vendors' documented prefixes and forms; a plain word, a number, a platform id (a Discord
 * snowflake, a Slack `C…`/`U…` id or `ts`, a Telegram chat id) does not match (test/sdk/secret-shapes.test.ts).
 */

/** [shape, replacement] pairs, applied in order. */
export const SECRET_SHAPES: ReadonlyArray<readonly [RegExp, string]> = [
  // Labelled values: a key in a query string, a bearer or basic credential, a key header.
  [/([?&](?:key|api_key|apikey|access_token|token)=)[^&\s"']+/gi, '$1[redacted]'],
  [/((?:x-goog-api-key|x-api-key|api-key|authorization)["']?\s*[:=]\s*["']?(?:(?:bearer|basic)\s+)?)[^"'\s,}]+/gi, '$1[redacted]'],
  [/\b(bearer\s+)[A-Za-z0-9._~+/=-]{6,}/gi, '$1[redacted]'],
  // Model providers: OpenAI, Anthropic, OpenRouter (sk-…), Google (AIza…), Groq, xAI, NVIDIA, Cerebras.
  [/\bsk-[A-Za-z0-9_-]{6,}/g, '[redacted]'],
  [/\bAIza[0-9A-Za-z_-]{10,}/g, '[redacted]'],
  [/\b(?:gsk|xai|nvapi|csk)[-_][A-Za-z0-9_-]{6,}/g, '[redacted]'],
  // AWS access key ids.
  [/\b(?:AKIA|ASIA)[0-9A-Z]{12,}\b/g, '[redacted]'],
  // Slack bot, user, app-level and configuration tokens.
  [/\bxox[abposre]-[A-Za-z0-9-]{8,}/g, '[redacted]'],
  [/\bxapp-[A-Za-z0-9-]{8,}/g, '[redacted]'],
  // GitHub tokens.
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, '[redacted]'],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, '[redacted]'],
  // A Telegram bot token: the bot id, a colon, 35 characters.
  [/\b\d{6,12}:[A-Za-z0-9_-]{30,}/g, '[redacted]'],
  // A Discord bot token: three base64url parts (the user id, a timestamp, an HMAC).
  [/\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b/g, '[redacted]'],
  // A JSON Web Token (header.payload.signature, the header starting `{"` in base64url).
  [/\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}/g, '[redacted]'],
  // A private key, whole.
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, '[redacted private key]'],
];

/**
 * `text` with everything shaped like a credential replaced.
 * @example scrubSecretShapes('use xoxb-1234-5678-abcdefgh now') // 'use [redacted] now'
 */
export function scrubSecretShapes(text: string): string {
  let out = text;
  for (const [shape, by] of SECRET_SHAPES) out = out.replace(shape, by);
  return out;
}

/**
 * Whether `text` holds anything shaped like a credential (what `scrubSecretShapes` would replace).
 * @example hasSecretShape('my token is ghp_abcdefghijklmnopqrstuvwxyz0123') // true
 */
export function hasSecretShape(text: string): boolean {
  return SECRET_SHAPES.some(([shape]) => {
    shape.lastIndex = 0;
    return shape.test(text);
  });
}
