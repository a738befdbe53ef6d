/** A form generated from a skill's JSON schema: strings, numbers, booleans, choices; anything else as JSON. */
import { html } from '../ui.js';

type Schema = {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  const?: unknown;
  default?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
};

function choices(s: Schema): unknown[] | null {
  if (Array.isArray(s.enum)) return s.enum;
  if (Array.isArray(s.anyOf) && s.anyOf.every((x) => 'const' in x)) return s.anyOf.map((x) => x.const);
  return null;
}

/** Reads the form's fields back into arguments, typed by the schema; throws on bad JSON. */
export function readArgs(form: HTMLFormElement, schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const el = form.elements.namedItem(name) as HTMLInputElement | null;
    if (!el) continue;
    if (el.type === 'checkbox') {
      if (el.checked || (schema.required ?? []).includes(name)) out[name] = el.checked;
      continue;
    }
    const v = el.value;
    if (v === '') continue;
    const t = Array.isArray(s.type) ? s.type[0] : s.type;
    const opts = choices(s);
    if (opts) out[name] = opts.find((o) => String(o) === v) ?? v;
    else if (t === 'integer' || t === 'number') out[name] = Number(v);
    else if (t === 'string' || t === undefined) out[name] = v;
    else {
      try {
        out[name] = JSON.parse(v);
      } catch {
        throw new Error(`${name}: not valid JSON`);
      }
    }
  }
  return out;
}

export function SchemaFields({ schema }: { schema: Schema }) {
  const req = new Set(schema.required ?? []);
  return html`${Object.entries(schema.properties ?? {}).map(([name, s]) => {
    const t = Array.isArray(s.type) ? s.type[0] : s.type;
    const opts = choices(s);
    const label = html`<span>${name}${req.has(name) ? ' *' : ''}</span>`;
    const help = s.description ? html`<small class="muted">${s.description}</small>` : null;
    if (opts)
      return html`<label>${label}<select name=${name}>${req.has(name) ? null : html`<option value="">(default)</option>`}${opts.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}</select>${help}</label>`;
    if (t === 'boolean') return html`<label class="check"><input type="checkbox" name=${name} /> ${label}${help}</label>`;
    if (t === 'integer' || t === 'number')
      return html`<label>${label}<input type="number" name=${name} required=${req.has(name)} />${help}</label>`;
    if (t === 'string' || t === undefined)
      return html`<label>${label}<textarea rows="2" name=${name} required=${req.has(name)}></textarea>${help}</label>`;
    return html`<label>${label} (JSON)<textarea rows="2" name=${name} required=${req.has(name)}></textarea>${help}</label>`;
  })}`;
}
