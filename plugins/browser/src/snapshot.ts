/**
 * The semantic snapshot of SPEC: the page's interactive elements numbered `[n] <kind>: <label> (<attribute>=<value>)`,
 * then its visible text. The numbering is written into the page as `data-keel-ref` attributes, so `browser_click 3`
 * finds element 3 of the last snapshot with the selector `[data-keel-ref="3"]`.
 */

export interface SnapshotElement {
  ref: number;
  kind: string;
  label: string;
  attr?: string;
}

export interface PageSnapshot {
  title: string;
  url: string;
  elements: SnapshotElement[];
  /** More interactive elements than listed. */
  more: number;
  text: string;
  /** True when the page shows nothing: no text, no images, no frames, no form fields. */
  blank: boolean;
}

/** Most elements listed and characters of text kept. */
export const MAX_ELEMENTS = 200;
export const MAX_TEXT = 4000;

/** Source of the in-page function `({maxElements, maxText}) => PageSnapshot` (see driver.evaluate). */
export const SNAPSHOT_SCRIPT = String.raw`({ maxElements, maxText }) => {
  const clean = (s, n = 80) => String(s ?? '').replace(/\s+/g, ' ').trim().slice(0, n);
  for (const e of document.querySelectorAll('[data-keel-ref]')) e.removeAttribute('data-keel-ref');
  const SEL = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [contenteditable=""], [contenteditable="true"], ' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option], [role=switch], [role=textbox], [role=combobox], [role=searchbox], [onclick]';
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.display !== 'none' && Number(st.opacity) > 0;
  };
  const labelOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria) return clean(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => document.getElementById(id)?.innerText ?? '').join(' ');
      if (clean(t)) return clean(t);
    }
    if (el.id) {
      const l = document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
      if (l && clean(l.innerText)) return clean(l.innerText);
    }
    const wrap = el.closest('label');
    if (wrap && clean(wrap.innerText)) return clean(wrap.innerText);
    const tag = el.tagName.toLowerCase();
    if (tag === 'input' || tag === 'textarea') {
      if (el.placeholder) return clean(el.placeholder);
      if (['submit', 'button', 'reset'].includes(el.type) && el.value) return clean(el.value);
    }
    const text = clean(el.innerText || el.textContent);
    if (text) return text;
    const img = el.querySelector('img[alt]');
    if (img) return clean(img.alt);
    return clean(el.title || el.getAttribute('name') || el.id || '');
  };
  const kindOf = (el) => {
    const tag = el.tagName.toLowerCase();
    const role = el.getAttribute('role');
    if (tag === 'a') return 'link';
    if (tag === 'button') return 'button';
    if (tag === 'select') return 'select';
    if (tag === 'textarea') return 'textarea';
    if (tag === 'summary') return 'summary';
    if (tag === 'input') {
      const t = (el.type || 'text').toLowerCase();
      if (['submit', 'button', 'reset', 'image'].includes(t)) return 'button';
      if (t === 'checkbox' || t === 'radio') return t;
      return t === 'text' ? 'textbox' : 'input ' + t;
    }
    if (role) return role;
    if (el.isContentEditable) return 'editable';
    return 'clickable ' + tag;
  };
  const attrOf = (el) => {
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'href=' + clean(el.getAttribute('href'), 120);
    if (tag === 'select') return 'selected=' + clean(el.selectedOptions?.[0]?.label ?? '', 60);
    if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) return 'checked=' + el.checked;
    if ((tag === 'input' || tag === 'textarea') && el.value) return el.type === 'password' ? 'value=***' : 'value=' + clean(el.value, 60);
    if (tag === 'input' && el.name) return 'name=' + clean(el.name, 60);
    if (el.disabled) return 'disabled=true';
    return undefined;
  };
  const elements = [];
  let more = 0;
  let n = 0;
  for (const el of document.querySelectorAll(SEL)) {
    if (!visible(el)) continue;
    if (elements.length >= maxElements) { more++; continue; }
    n++;
    el.setAttribute('data-keel-ref', String(n));
    const attr = attrOf(el);
    elements.push({ ref: n, kind: kindOf(el), label: labelOf(el), ...(attr ? { attr } : {}) });
  }
  const body = document.body;
  const text = body ? String(body.innerText || '').replace(/\n{3,}/g, '\n\n').trim() : '';
  const media = document.querySelectorAll('img, video, canvas, svg, iframe, embed, object').length;
  return {
    title: document.title,
    url: location.href,
    elements,
    more,
    text: text.slice(0, maxText),
    blank: !text && media === 0 && elements.length === 0,
  };
}`;

/** Selector of a `[n]` reference, or the CSS selector given. */
export function selectorOf(selectorOrRef: string | number): string {
  if (typeof selectorOrRef === 'number') return `[data-keel-ref="${selectorOrRef}"]`;
  const t = selectorOrRef.trim();
  const m = /^\[?(\d+)\]?$/.exec(t);
  return m ? `[data-keel-ref="${m[1]}"]` : t;
}

/** The snapshot as the text the model reads. */
export function renderSnapshot(s: PageSnapshot): string {
  const lines = [`Page: ${s.title || '(no title)'}`, `URL: ${s.url}`, ''];
  if (s.elements.length === 0) lines.push('No interactive elements.');
  else {
    lines.push('Interactive elements:');
    for (const e of s.elements) lines.push(`[${e.ref}] ${e.kind}: ${e.label || '(no label)'}${e.attr ? ` (${e.attr})` : ''}`);
    if (s.more > 0) lines.push(`... and ${s.more} more (scroll or use a CSS selector)`);
  }
  lines.push('', 'Text:', s.text || '(none)');
  return lines.join('\n');
}
