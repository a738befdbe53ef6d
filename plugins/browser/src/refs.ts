/**
 * Refs that do not lie. A snapshot number is bound to its element by a fingerprint: kind (role), accessible
 * label, frame, and position in the tree. Before acting on `[n]` the page is asked for the element tagged n; when
 * it is still there with the same kind and label, that is the element. When a re-render replaced or changed it, the
 * element with the same kind, label and frame is looked for: exactly one (or exactly one at the same tree position)
 * is re-tagged as n and used; none or several make the action fail with what changed, never acting on another
 * element.
 */
import { PAGE_HELPERS, type SnapshotElement } from './snapshot.js';

export type Fingerprint = Pick<SnapshotElement, 'ref' | 'kind' | 'label' | 'frames' | 'path' | 'root'>;

export type Resolution =
  | { ok: true; moved: boolean }
  | { ok: false; why: 'gone' | 'ambiguous' | 'changed'; now?: { kind: string; label: string }; count?: number };

/** Source of the in-page function `(fp: Fingerprint) => Resolution`. */
export const RESOLVE_SCRIPT = String.raw`(fp) => {
  ${PAGE_HELPERS}
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const wanted = [];
  let tagged = null;
  walk(document, (el, frames, path) => {
    if (!same(frames, fp.frames)) {
      // still descend: the frame we want may be further down
      return;
    }
    if (el.getAttribute('data-keel-ref') === String(fp.ref)) tagged = { el, path };
    if (el.matches(INTERACTIVE) && visible(el) && kindOf(el) === fp.kind && labelOf(el) === fp.label) wanted.push({ el, path });
  });
  if (tagged && kindOf(tagged.el) === fp.kind && labelOf(tagged.el) === fp.label) return { ok: true, moved: false };
  const retag = (el) => {
    if (tagged) tagged.el.removeAttribute('data-keel-ref');
    el.setAttribute('data-keel-ref', String(fp.ref));
    return { ok: true, moved: true };
  };
  if (wanted.length === 1) return retag(wanted[0].el);
  if (wanted.length > 1) {
    const here = wanted.filter((w) => w.path === fp.path);
    if (here.length === 1) return retag(here[0].el);
    return { ok: false, why: 'ambiguous', count: wanted.length };
  }
  if (tagged) return { ok: false, why: 'changed', now: { kind: kindOf(tagged.el), label: labelOf(tagged.el) } };
  return { ok: false, why: 'gone' };
}`;

/** The sentence that says what changed, for the error. */
export function describeMismatch(fp: Fingerprint, r: Exclude<Resolution, { ok: true }>): string {
  const was = `[${fp.ref}] ${fp.kind}: ${fp.label || '(no label)'}`;
  if (r.why === 'ambiguous')
    return `${was} is no longer one element: the page now has ${r.count} ${fp.kind} elements labelled "${fp.label}" and none of them is where [${fp.ref}] was, so Keel will not guess.`;
  if (r.why === 'changed')
    return `${was} changed: that element is now ${r.now!.kind} "${r.now!.label}", and no ${fp.kind} labelled "${fp.label}" is on the page.`;
  return `${was} is gone: the page changed since the snapshot and no ${fp.kind} labelled "${fp.label}" is on it now.`;
}

/** The selector that finds a resolved ref inside its frame (engines pierce open shadow roots with it). */
export function refSelector(ref: number): string {
  return `[data-keel-ref="${ref}"]`;
}
