/** Chat with the agent through the gateway chat (POST /api/chat; replies arrive as chat.* events). */
import { useEffect, useState } from 'preact/hooks';
import { api, stream } from '../api.js';
import { html, Err } from '../ui.js';

const CONV_STORAGE = 'keel.conversation';

function conversation(): string {
  let id = sessionStorage.getItem(CONV_STORAGE);
  if (!id) {
    id = `dash-${Math.random().toString(36).slice(2, 10)}`;
    sessionStorage.setItem(CONV_STORAGE, id);
  }
  return id;
}

export function Chat() {
  const id = conversation();
  const [messages, setMessages] = useState<any[]>([]);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const load = () =>
    api(`/api/chat/${id}`)
      .then((r) => setMessages(r.messages))
      .catch((e: Error) => setErr(e.message));
  // biome-ignore lint/correctness/useExhaustiveDependencies: once on mount: one subscription for the conversation of this tab
  useEffect(() => {
    load();
    return stream.subscribe((m) => {
      if (m.type === 'gap') return load();
      if (m.type !== 'event' || m.data?.conversationId !== id) return;
      if (m.event === 'chat.progress') setBusy(m.data.thought ?? 'working…');
      if (m.event === 'chat.reply' || m.event === 'chat.error' || m.event === 'chat.message') {
        if (m.event !== 'chat.message') setBusy(null);
        load();
      }
    });
  }, []);
  const send = async (e: Event) => {
    e.preventDefault();
    if (!text.trim()) return;
    // Busy before the request: a quick answer can arrive (and clear it) before the POST itself answers.
    setBusy('working…');
    try {
      await api('/api/chat', { method: 'POST', body: { text, conversationId: id } });
      setText('');
      setErr(null);
    } catch (x) {
      setBusy(null);
      setErr((x as Error).message);
    }
  };
  return html`<section>
    <h1>Chat</h1>
    <ul class="list chat" data-testid="chat">
      ${messages.map((m) => html`<li class=${`msg msg-${m.role}`}><span class="who">${m.role === 'user' ? 'You' : m.role === 'agent' ? 'Keel' : 'Error'}</span> <span class="text">${m.text}</span></li>`)}
    </ul>
    ${busy ? html`<p class="muted">${busy}</p>` : null}
    <${Err} error=${err} />
    <form class="row" onSubmit=${send}>
      <input name="message" placeholder="Message" value=${text} onInput=${(e: any) => setText(e.currentTarget.value)} />
      <button type="submit">Send</button>
    </form>
  </section>`;
}
