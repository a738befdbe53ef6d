/**
 * The semantic snapshot of SPEC: the page's interactive elements numbered `[n] <kind>: <label> (<attribute>=<value>)`,
 * with the title, the URL and a short outline of the readable text. Open shadow roots and same-origin iframes are
 * walked (their elements are numbered like the others); a cross-origin frame is named in the outline.
 *
 * Each number is written into the page as a `data-keel-ref` attribute and kept by the service with the element's
 * fingerprint (kind, label, frame, position in the tree): see refs.ts for how a number is found again after a
 * re-render. Rendering (render.ts) fits the snapshot into a token budget.
 */

export interface SnapshotElement {
  ref: number;
  kind: string;
  label: string;
  attr?: string;
  /** Path of `data-keel-frame` numbers from the top document to the element's document. */
  frames: number[];
  /** Frame path of the document the snapshot script ran in (a cross-origin frame's; [] for the page). */
  root?: number[];
  /** Position in the tree (`body>div:2>form>input:1`, `#shadow` and `|frame k|` marking the crossings). */
  path: string;
  /** Inside the viewport now. */
  inView: boolean;
  /** Vertical distance from the viewport in pixels (0 inside it). */
  distance: number;
  /** Document order among outline lines and elements. */
  order: number;
}

export interface OutlineLine {
  text: string;
  /** 1-6 for headings, 0 for text. */
  level: number;
  inView: boolean;
  distance: number;
  /** Document order among outline lines and elements. */
  order: number;
}

export interface PageSnapshot {
  title: string;
  url: string;
  elements: SnapshotElement[];
  outline: OutlineLine[];
  /** True when the page shows nothing: no text, no images, no frames, no form fields. */
  blank: boolean;
  /** Interactive elements were numbered up to this cap; `more` were left out. */
  more: number;
  /** A visible password field (login walls). */
  hasPassword: boolean;
  scroll: { y: number; max: number };
  /** Cross-origin frames the page script could not enter (the service snapshots them in their own documents). */
  remote?: Array<{ frames: number[]; offY: number; order: number; url: string; inView: boolean }>;
  /** Height of the top viewport. */
  viewH?: number;
}

/** Most interactive elements numbered in one snapshot (the rest are counted in `more`). */
export const MAX_ELEMENTS = 2000;
/** Most outline lines collected (each at most 64 characters). */
export const MAX_OUTLINE = 4000;

/**
 * Functions shared by the snapshot and the ref resolver, as page-side source. `walk(doc, visit)` visits every
 * element of a document, its open shadow roots and its same-origin frames, with the frame path and tree path.
 */
export const PAGE_HELPERS = String.raw`
  const clean = (s, n = 80) => String(s ?? '').replace(/\s+/g, ' ').trim().slice(0, n);
  const INTERACTIVE = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [contenteditable=""], [contenteditable="true"], ' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option], [role=switch], [role=textbox], [role=combobox], [role=searchbox], [role=slider], [onclick]';
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'SVG', 'svg']);
  const visible = (el) => {
    if (typeof el.checkVisibility === 'function' && !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const byId = (el, id) => { const root = el.getRootNode(); return (root.getElementById ? root.getElementById(id) : null) || el.ownerDocument.getElementById(id); };
  const labelOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria && clean(aria)) return clean(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => byId(el, id)?.textContent ?? '').join(' ');
      if (clean(t)) return clean(t);
    }
    if (el.labels && el.labels.length && clean(el.labels[0].innerText)) return clean(el.labels[0].innerText);
    const tag = el.tagName.toLowerCase();
    if (tag === 'input' || tag === 'textarea') {
      if (['submit', 'button', 'reset'].includes(el.type) && el.value) return clean(el.value);
      if (el.placeholder) return clean(el.placeholder);
    }
    if (tag === 'select') return clean(el.getAttribute('name') || el.id || el.title || '');
    const text = clean(el.innerText || el.textContent);
    if (text) return text;
    const img = el.querySelector && el.querySelector('img[alt]');
    if (img) return clean(img.alt);
    return clean(el.title || el.getAttribute('name') || el.id || '');
  };
  const kindOf = (el) => {
    const tag = el.tagName.toLowerCase();
    const role = el.getAttribute('role');
    if (role) return role;
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
    if (el.isContentEditable) return 'editable';
    return 'clickable ' + tag;
  };
  const attrOf = (el) => {
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'href=' + clean(el.getAttribute('href'), 100);
    if (tag === 'select') return 'selected=' + clean(el.selectedOptions?.[0]?.label ?? '', 60);
    if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) return el.checked ? 'checked=true' : undefined;
    if ((tag === 'input' || tag === 'textarea') && el.value) return el.type === 'password' ? 'value=***' : 'value=' + clean(el.value, 60);
    if (el.disabled) return 'disabled=true';
    if (tag === 'input' && el.type === 'file') return 'accept=' + clean(el.accept || '*', 40);
    return undefined;
  };
  /** Visits every element: visit(el, frames, path, offsetY) returns false to skip the subtree. */
  const walk = (doc, visit, onFrame) => {
    let frameNo = 0;
    const go = (node, frames, path, offY) => {
      const kids = node.children || [];
      const counts = {};
      for (const el of kids) {
        if (SKIP.has(el.tagName)) continue;
        const t = el.tagName.toLowerCase();
        counts[t] = (counts[t] || 0) + 1;
        const p = path + '>' + t + (counts[t] > 1 ? ':' + counts[t] : '');
        if (visit(el, frames, p, offY) === false) continue;
        if (el.shadowRoot) go(el.shadowRoot, frames, p + '#shadow', offY);
        if (t === 'iframe' || t === 'frame') {
          const k = ++frameNo;
          el.setAttribute('data-keel-frame', String(k));
          let inner = null;
          try { inner = el.contentDocument; } catch {}
          const r = el.getBoundingClientRect();
          if (inner && inner.documentElement) go(inner.documentElement, frames.concat([k]), p + '|frame ' + k + '|', offY + r.top);
          else if (onFrame) onFrame(el, k, frames, offY + r.top);
          continue;
        }
        go(el, frames, p, offY);
      }
    };
    go(doc.documentElement ? { children: [doc.documentElement] } : doc, [], '', 0);
  };
`;

/**
 * Source of the in-page function `({ maxElements, maxOutline, startRef, offY, viewH }) => PageSnapshot` (see
 * driver.evaluate). In a cross-origin frame it runs in that frame's document: numbering goes on from `startRef`,
 * positions are shifted by the frame's offset `offY` in a viewport of height `viewH`.
 */
export const SNAPSHOT_SCRIPT = String.raw`({ maxElements, maxOutline, startRef = 0, offY: baseY = 0, viewH }) => {
  ${PAGE_HELPERS}
  const H = viewH || innerHeight;
  const elements = [];
  const outline = [];
  const remote = [];
  let more = 0, n = startRef, order = 0, media = 0, hasPassword = false;
  const place = (r, offY) => {
    const top = r.top + offY, bottom = r.bottom + offY;
    const inView = bottom > 0 && top < H;
    return { inView, distance: inView ? 0 : Math.round(top >= H ? top - H : -bottom) };
  };
  const OUTLINE_CHARS = 64;
  /** Text that is already an element's label: a <label> of a control, or words inside a small widget row. */
  const repeatsLabel = (el, text) => {
    if (el.tagName === 'LABEL' && el.control) return true;
    const n = el.childElementCount;
    if (n === 0 || n > 20) return false;
    for (const c of el.querySelectorAll(INTERACTIVE)) if (labelOf(c).includes(text)) return true;
    return false;
  };
  const ownText = (el) => {
    let s = '';
    for (const c of el.childNodes) if (c.nodeType === 3) s += c.nodeValue;
    return s.replace(/\s+/g, ' ').trim();
  };
  walk(document, (el, frames, path, offY) => {
    if (el.hasAttribute('data-keel-ref')) el.removeAttribute('data-keel-ref');
    const tag = el.tagName;
    if (/^(IMG|VIDEO|CANVAS|svg|EMBED|OBJECT|IFRAME|PICTURE)$/.test(tag)) media++;
    if (el.matches(INTERACTIVE)) {
      if (!visible(el)) return;
      if (tag === 'INPUT' && el.type === 'password') hasPassword = true;
      if (elements.length >= maxElements) { more++; return; }
      n++;
      el.setAttribute('data-keel-ref', String(n));
      const attr = attrOf(el);
      elements.push({ ref: n, kind: kindOf(el), label: labelOf(el), ...(attr ? { attr } : {}), frames, path, ...place(el.getBoundingClientRect(), baseY + offY), order: order++ });
      // the text of a link or button is its label: not repeated in the outline (a contenteditable's is content)
      return el.isContentEditable ? undefined : false;
    }
    const text = ownText(el);
    if (text && outline.length < maxOutline && !repeatsLabel(el, text) && visible(el)) {
      const h = /^H([1-6])$/.exec(tag);
      const line = h ? clean(el.innerText, 200) : text;
      // a short outline: the start of each block (the full text is for extract_article or browser_run_js)
      outline.push({ text: line.length > OUTLINE_CHARS ? line.slice(0, OUTLINE_CHARS - 1).trimEnd() + '…' : line, level: h ? Number(h[1]) : 0, ...place(el.getBoundingClientRect(), baseY + offY), order: order++ });
      if (h) return false;
    }
  }, (el, k, frames, offY) => {
    // another origin: the service snapshots that frame in its own document (driver.evaluateIn)
    remote.push({ frames: frames.concat([k]), offY: baseY + offY, order: order++, url: clean(el.src || el.getAttribute('src') || 'about:blank', 120), inView: place(el.getBoundingClientRect(), baseY + offY).inView });
  });
  const max = Math.max(0, document.documentElement.scrollHeight - H);
  return {
    title: document.title,
    url: location.href,
    elements,
    outline,
    more,
    hasPassword,
    blank: outline.length === 0 && elements.length === 0 && media === 0,
    scroll: { y: Math.round(scrollY), max },
    remote,
    viewH: H,
  };
}`;
