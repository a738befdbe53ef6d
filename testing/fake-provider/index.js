// A plain-JS user plugin (no imports) that provides a scripted model provider for tests and benchmarks.
// Capability: provider:<id>, where <id> is "fake" for the plugin id "fake-provider" and "<x>" for "fake-provider-<x>".
//
// The script is looked up per call:
// 1. in-process: globalThis[Symbol.for('keel.fakeProvider')].get(`${home}|${id}`), a control object
//    { replies: Reply[], calls: ChatRequest[], defaultReply?: Reply, configured?: {ok,missing} } that
//    installFakeProvider() in keel/sdk/testing (testing/) creates;
// 2. otherwise the file $KEEL_HOME/fake-provider-<id>.json: { "replies": Reply[] } consumed in order.
// A Reply is { text?, toolCalls?: [{ name, arguments?, raw?, id? }], usage?, error?: { message, status?, retryable? },
// delayMs? } or (in-process) a function (request) => Reply. With no reply left it answers "fake answer".
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const REGISTRY = Symbol.for('keel.fakeProvider');

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason ?? new Error('aborted'));
      },
      { once: true },
    );
  });
}

export default {
  setup(ctx) {
    const id = ctx.id === 'fake-provider' ? 'fake' : ctx.id.replace(/^fake-provider-/, '');
    const key = `${ctx.home}|${id}`;
    let fileIndex = 0;
    const control = () => globalThis[REGISTRY]?.get(key);

    function nextFromFile() {
      try {
        const script = JSON.parse(readFileSync(join(ctx.home, `fake-provider-${id}.json`), 'utf8'));
        return script.replies?.[fileIndex++];
      } catch {
        return undefined;
      }
    }

    ctx.provide(`provider:${id}`, {
      id,
      get vision() {
        return control()?.vision ?? false;
      },
      configured() {
        return control()?.configured ?? { ok: true };
      },
      async chat(req) {
        const c = control();
        const record = {
          model: req.model,
          messages: req.messages.map((m) => ({ ...m })),
          tools: req.tools ?? [],
          timeoutMs: req.timeoutMs,
        };
        c?.calls.push(record);
        let reply = c ? (c.replies.length ? c.replies.shift() : c.defaultReply) : nextFromFile();
        if (typeof reply === 'function') reply = await reply(req);
        reply ??= { text: 'fake answer' };
        if (reply.delayMs) await sleep(reply.delayMs, req.signal);
        if (reply.error) {
          const e = new Error(reply.error.message ?? 'fake provider failure');
          e.name = 'ProviderError';
          e.info = { provider: id, status: reply.error.status, retryable: reply.error.retryable ?? false };
          throw e;
        }
        const toolCalls = (reply.toolCalls ?? []).map((t, i) => ({
          id: t.id ?? `fake_${Date.now().toString(36)}_${i}`,
          name: t.name,
          arguments: t.arguments ?? {},
          ...(t.raw !== undefined ? { raw: t.raw } : {}),
        }));
        return {
          text: reply.text ?? '',
          toolCalls,
          usage: reply.usage ?? { inputTokens: 10, outputTokens: 5 },
          model: req.model,
          finishReason: toolCalls.length ? 'tool_calls' : 'stop',
        };
      },
    });
  },
};
