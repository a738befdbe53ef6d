/**
 * Last line of defence for "keys never appear in logs or errors": provider plugins must not put a key in an
 * error, and the router still masks anything shaped like one before it logs or rethrows a message: the SDK's
 * credential shapes (sdk/secret-shapes.ts), and any labelled value (`token: …`, `password=…`).
 */
import { scrubSecretShapes } from '../../../sdk/secret-shapes.js';

const LABELLED = /\b((?:api[_-]?key|key|token|secret|password|x-api-key|x-goog-api-key)["']?\s*[:=]\s*["']?)[^\s"'&,;]{6,}/gi;

export function redact(text: string): string {
  return scrubSecretShapes(text.replace(LABELLED, '$1[redacted]'));
}
