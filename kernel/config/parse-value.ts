/**
 * Turning a string (an environment variable, a `keel config set` argument, a command-line flag)
 * into the typed value a key's schema wants. The result is still validated by the schema afterwards:
 * this only decides how to read the text.
 */
import type { TSchema } from 'typebox';
import { itemsOf, kindOf } from './schema-text.js';

export type ParseResult = { ok: true; value: unknown } | { ok: false; message: string };

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

export function parseStringValue(schema: TSchema, raw: string): ParseResult {
  const text = raw.trim();
  switch (kindOf(schema)) {
    case 'boolean': {
      const word = text.toLowerCase();
      if (TRUE_WORDS.has(word)) return { ok: true, value: true };
      if (FALSE_WORDS.has(word)) return { ok: true, value: false };
      return { ok: false, message: `"${raw}" is not a boolean (use true/false, yes/no or 1/0)` };
    }
    case 'number':
    case 'integer': {
      // Number('') is 0 and Number('0x10') is 16: neither is what a person typing a number means.
      if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return { ok: false, message: `"${raw}" is not a number` };
      return { ok: true, value: Number(text) };
    }
    case 'string':
      // Strings are taken verbatim: trimming could damage a secret or a path with spaces.
      return { ok: true, value: raw };
    case 'array': {
      if (text.startsWith('[')) return parseJson(raw);
      if (kindOf(itemsOf(schema)) === 'string') {
        // `keel config set commandAllowList git,npm` and `PLUGIN_DENY_LIST=a, b` read as lists.
        return {
          ok: true,
          value:
            text === ''
              ? []
              : text
                  .split(',')
                  .map((p) => p.trim())
                  .filter((p) => p !== ''),
        };
      }
      return { ok: false, message: `"${raw}" is not a JSON array` };
    }
    case 'object':
      return parseJson(raw);
    case 'null':
      return text === 'null' ? { ok: true, value: null } : { ok: false, message: `"${raw}" is not null` };
    default: {
      // A union or an open schema: JSON when it parses (so `3` is a number), else the plain string.
      const json = parseJson(raw);
      return json.ok ? json : { ok: true, value: raw };
    }
  }
}

function parseJson(raw: string): ParseResult {
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch (e) {
    return { ok: false, message: `"${raw}" is not valid JSON (${(e as Error).message})` };
  }
}
