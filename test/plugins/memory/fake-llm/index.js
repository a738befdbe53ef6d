// Plain-JS test plugin: the `llm` capability, scripted by the test through a registry on globalThis keyed by
// KEEL_HOME. Without a script: chat answers "fake summary", embeddings are off.
const REGISTRY = Symbol.for('keel.memoryTestLlm');

export default {
  setup(ctx) {
    const control = () => globalThis[REGISTRY]?.get(ctx.home) ?? {};
    ctx.provide('llm', {
      current() {
        return { provider: 'fake', model: 'fake-model' };
      },
      async chat(req) {
        const c = control();
        (c.chats ??= []).push(req);
        const text = c.chat ? await c.chat(req) : 'fake summary';
        return { text, toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, model: 'fake-fast', provider: 'fake' };
      },
      async embed(req) {
        const c = control();
        if (!c.embed) return undefined;
        (c.embeds ??= []).push(req.texts.length);
        // A slow embedding service (a local model on a CPU): each call of more than one text takes this long.
        if (c.embedDelayMs && req.texts.length > 1) await new Promise((r) => setTimeout(r, c.embedDelayMs));
        if (c.embedFails && req.texts.length > 1) throw new Error(c.embedFails);
        return { vectors: req.texts.map((t) => c.embed(t)), provider: 'fake', model: c.embedModel ?? 'fake-embed' };
      },
      canEmbed() {
        return Boolean(control().embed);
      },
    });
  },
};
