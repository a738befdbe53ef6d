/**
 * Kernel overhead per agent step: everything the agent adds around the model (prompt and tool catalogue,
 * router, timeout, token usage log, dispatch with schema and policy, hooks, observation wrapping), measured
 * with the fake provider answering instantly in-process, against the same provider call alone. A bare HTTP
 * round trip on loopback (node:http server, fetch with the same request body) is reported beside it for scale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import type { AgentCapability, ChatRequest, ProviderCapability } from '../sdk/index.js';
import { installFakeProvider, removeHome, tempHome } from '../testing/index.js';
import type { Action } from '../sdk/types.js';
import { writePlugin } from '../test/helpers.js';
import { median, printRows, type BenchRow } from './lib.js';

/** Per-step overhead budget of this benchmark (not in DESIGN section 7): well under one loopback round trip of a real provider. */
const BUDGET_US = 1000;

export async function benchAgent(actions = 40, stepsPerAction = 20): Promise<BenchRow[]> {
  const home = tempHome('keel-bench-agent-');
  const builtins = tempHome('keel-bench-builtins-');
  const fake = installFakeProvider(home);
  writePlugin(join(home, 'plugins'), {
    id: 'bench-tools',
    manifest: {
      skills: [
        {
          name: 'lookup',
          description: 'Looks a word up',
          category: 'bench',
          parameters: { type: 'object', required: ['text'], properties: { text: { type: 'string' } }, additionalProperties: false },
        },
      ],
    },
    setup: `ctx.skills.register('lookup', ({ text }) => 'value of ' + text);`,
  });
  writeFileSync(
    join(home, 'keel.config.yaml'),
    JSON.stringify({ llmProvider: 'fake', modelName: 'fake-model', maxStepsPerAction: stepsPerAction + 5 }),
  );
  // Tool calls until `stepsPerAction - 1` results are in, then the final answer.
  fake.defaultReply = (req) => {
    const done = req.messages.filter((m) => m.role === 'tool').length;
    return done < stepsPerAction - 1 ? { toolCalls: [{ name: 'lookup', arguments: { text: `w${done}` } }] } : { text: 'final answer' };
  };
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [
      {
        id: 'agent',
        origin: 'builtin',
        dir: join(import.meta.dirname, '..', 'plugins', 'agent'),
        manifest: (await import('../plugins/agent/manifest.js')).default,
        load: async () => (await import('../plugins/agent/index.js')).default,
      },
    ],
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end('{"choices":[{"message":{"role":"assistant","content":"final answer"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  try {
    const agent = kernel.registry.use<AgentCapability>('agent')!;
    const provider = kernel.registry.use<ProviderCapability>('provider:fake')!;
    const signal = new AbortController().signal;
    const action = (i: number): Action => ({
      id: `act_${Date.now()}_${i}`,
      task: 'look up twenty words',
      priority: 5,
      status: 'executing',
      createdAt: new Date().toISOString(),
      source: 'cli',
      metadata: { retries: 0, maxRetries: 0, ttl: 3_600_000, actor: { kind: 'operator', channel: 'cli' } },
    });
    // The peer: the same provider call alone, with the request the agent sent at mid-action.
    let routed = 0;
    const summaryFile = join(home, 'token-usage-summary.json');
    /** Until the token usage summary counts every routed call (its writes are part of the agent's cost). */
    const usageWritten = async () => {
      for (;;) {
        try {
          if ((JSON.parse(readFileSync(summaryFile, 'utf8')) as { total: { calls: number } }).total.calls >= routed) return;
        } catch {
          // not written yet
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const runAgent = async (n: number) => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        fake.calls.length = 0;
        const t = performance.now();
        await agent.execute(action(i), { signal });
        routed += stepsPerAction;
        times.push(((performance.now() - t) * 1000) / stepsPerAction);
      }
      const t = performance.now();
      await usageWritten();
      // Spread the wait for the last usage write over the steps measured.
      const tail = ((performance.now() - t) * 1000) / (n * stepsPerAction);
      return times.map((x) => x + tail);
    };
    await runAgent(5);
    const sample = fake.calls[Math.floor(stepsPerAction / 2)]!;
    const req: ChatRequest = { model: sample.model, messages: sample.messages as ChatRequest['messages'], tools: sample.tools, signal };
    const runProvider = async (n: number) => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        for (let s = 0; s < stepsPerAction; s++) await provider.chat(req);
        times.push(((performance.now() - t) * 1000) / stepsPerAction);
      }
      return times;
    };
    const body = JSON.stringify({ model: req.model, messages: req.messages, tools: req.tools });
    const runLoopback = async (n: number) => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await r.json();
        times.push((performance.now() - t) * 1000);
      }
      return times;
    };
    await runProvider(5);
    await runLoopback(50);
    const stepUs = median(await runAgent(actions));
    const providerUs = median(await runProvider(actions));
    const loopbackUs = median(await runLoopback(actions * 5));
    const overhead = stepUs - providerUs;
    return [
      {
        name: 'agent step overhead (loop + router + dispatch + hooks + usage log)',
        value: overhead,
        unit: 'µs',
        peer: 'provider call alone (in-process fake)',
        peerValue: providerUs,
        budget: `<= ${BUDGET_US} µs`,
        ok: overhead <= BUDGET_US,
      },
      {
        name: 'agent step overhead',
        value: overhead,
        unit: 'µs',
        peer: 'bare HTTP round trip on loopback',
        peerValue: loopbackUs,
        budget: 'report only',
        ok: true,
      },
    ];
  } finally {
    await new Promise((r) => server.close(r));
    await kernel.stop();
    removeHome(home);
    removeHome(builtins);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchAgent());
