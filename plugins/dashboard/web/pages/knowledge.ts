/** Knowledge: collections and documents, search with scores, ingest text (through the knowledge skills). */
import { useEffect, useState } from 'preact/hooks';
import { runSkill } from '../api.js';
import { html, Err } from '../ui.js';

function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function Knowledge() {
  const [docs, setDocs] = useState<any>(null);
  const [hits, setHits] = useState<any>(null);
  const [err, setErr] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const list = () =>
    runSkill('rag_list', {})
      .then((r) => setDocs(parse(r)))
      .catch((e: Error) => setErr(e.message));
  // biome-ignore lint/correctness/useExhaustiveDependencies: once on mount
  useEffect(() => void list(), []);
  const search = async (e: Event) => {
    e.preventDefault();
    const f = e.currentTarget as HTMLFormElement;
    try {
      setHits(parse(await runSkill('rag_search', { query: (f.elements.namedItem('query') as HTMLInputElement).value })));
    } catch (x) {
      setErr((x as Error).message);
    }
  };
  const ingest = async (e: Event) => {
    e.preventDefault();
    const f = e.currentTarget as HTMLFormElement;
    const val = (n: string) => (f.elements.namedItem(n) as HTMLInputElement).value;
    try {
      setMsg(
        await runSkill('rag_ingest', {
          content: val('content'),
          source: val('source'),
          ...(val('collection') ? { collection: val('collection') } : {}),
        }),
      );
      list();
    } catch (x) {
      setErr((x as Error).message);
    }
  };
  /** A chosen file fills the text and the source name (the knowledge store takes its format from the name). */
  const pick = async (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (!file || !input.form) return;
    if (file.size > 5 * 1024 * 1024) return setErr(`${file.name} is larger than 5 MB; ingest it with \`keel ingest\` or rag_ingest_file.`);
    (input.form.elements.namedItem('content') as HTMLTextAreaElement).value = await file.text();
    (input.form.elements.namedItem('source') as HTMLInputElement).value = file.name;
  };
  return html`<section>
    <h1>Knowledge</h1>
    <${Err} error=${err} />
    <h2>Documents</h2>
    <pre class="result">${docs === null ? '…' : typeof docs === 'string' ? docs : JSON.stringify(docs, null, 2)}</pre>
    <h2>Search</h2>
    <form class="row" onSubmit=${search}><input name="query" placeholder="What to look for" required /><button type="submit">Search</button></form>
    ${hits !== null ? html`<pre class="result" data-testid="hits">${typeof hits === 'string' ? hits : JSON.stringify(hits, null, 2)}</pre>` : null}
    <h2>Ingest text or a file</h2>
    <form class="stack" onSubmit=${ingest}>
      <label>A text file (read here, sent as text) <input type="file" name="file" accept=".txt,.md,.markdown,.csv,.json,.jsonl,.ts,.js,.py,text/*" onChange=${pick} /></label>
      <label>Source (a name) <input name="source" required /></label>
      <label>Collection <input name="collection" /></label>
      <label>Text <textarea name="content" rows="4" required></textarea></label>
      <button type="submit">Ingest</button>
    </form>
    ${msg ? html`<pre class="ok">${msg}</pre>` : null}
  </section>`;
}
