/**
 * `keel ui` as a person uses it: the compiled `keel` in a real terminal (tmux, 80x24), connected to a running
 * gateway whose agent talks to providerA over the OpenAI wire, and to a loopback local model runner speaking
 * Ollama's REST API. Keys are typed with send-keys; the screen is read with capture-pane.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { chatReply, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { rm, tmp, waitFor } from '../../helpers.js';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const socket = `keel-ui-test-${process.pid}`;
const cli = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');
const KEY = 'gw-key-ui-test-123456';

let kernel: Kernel | undefined;
let fake: ScriptedServer | undefined;
let runner: Server | undefined;
let home = '';
let runnerUrl = '';
let base = '';
const pulled: string[] = [];

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
}
const screen = () => tmux('capture-pane', '-p', '-t', 'ui');
const keys = (...k: string[]) => tmux('send-keys', '-t', 'ui', ...k);
const type = (text: string) => tmux('send-keys', '-t', 'ui', '-l', text);
/** Types a line and waits until the screen shows it, so Enter arrives as its own key. */
async function typeLine(text: string): Promise<void> {
  type(text);
  await see(new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}_`), `"${text}" on the input line`);
}
async function see(re: RegExp, what: string): Promise<string> {
  let last = '';
  try {
    return await waitFor(
      () => {
        last = screen();
        return re.test(last) ? last : undefined;
      },
      what,
      15_000,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; the screen was:\n${last}`);
  }
}

/** A local model runner speaking the parts of Ollama's REST API `keel ui` uses. */
function startRunner(): Promise<string> {
  const models = [
    { name: 'llama3:8b', model: 'llama3:8b', size: 4_700_000_000, digest: 'a', modified_at: new Date(0).toISOString(), details: {} },
  ];
  runner = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/api/version') return void res.end(JSON.stringify({ version: '0.9.0' }));
      if (req.url === '/api/tags') return void res.end(JSON.stringify({ models }));
      if (req.url === '/api/pull') {
        const req = JSON.parse(body) as { model?: string; name?: string };
        const model = String(req.model ?? req.name);
        pulled.push(model);
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        const steps = [
          { status: 'pulling manifest' },
          { status: 'pulling abc', total: 1000, completed: 400 },
          { status: 'pulling abc', total: 1000, completed: 1000 },
          { status: 'success' },
        ];
        let i = 0;
        const next = () => {
          if (i === steps.length) return void res.end();
          // Like Ollama, the model is listed by the time the runner says success.
          if (steps[i]!.status === 'success') models.push({ ...models[0]!, name: model, model, size: 1_300_000_000 });
          res.write(`${JSON.stringify(steps[i++])}\n`);
          setTimeout(next, 150);
        };
        return next();
      }
      res.writeHead(404).end(JSON.stringify({ error: 'not found' }));
    });
  });
  return new Promise((r) => runner!.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(runner!.address() as { port: number }).port}`)));
}

describe.skipIf(!hasTmux)('keel ui in a terminal (tmux, 80x24)', () => {
  beforeAll(async () => {
    fake = await startOpenAIFake();
    runnerUrl = await startRunner();
    home = tmp('keel-ui-');
    // In the config file (not a flag), so the UI's change of model is not shadowed by a higher layer.
    writeFileSync(join(home, 'keel.config.yaml'), 'modelName: gpt-4o-mini\n');
    kernel = await startKernel({
      home,
      env: {},
      watchSkills: false,
      runAgent: true,
      runner: { maxIdleMs: 100 },
      logs: new LogSink({ quiet: true }),
      overrides: {
        gatewayAutoStart: true,
        gatewayPort: 0,
        gatewayHost: '127.0.0.1',
        gatewayApiKey: KEY,
        providerAApiKey: 'sk-test-ui-0123456789abcdef',
        providerABaseUrl: fake.url,
      },
    });
    const address = kernel.registry.use<{ port: number }>('gateway:address');
    const port = (typeof address === 'function' ? (address as () => { port: number })() : address)!.port;
    base = `http://127.0.0.1:${port}`;
    const cmd = `KEEL_HOME=${home} ${process.execPath} ${cli} ui --url ${base} --api-key ${KEY} --runner-url ${runnerUrl}; echo "UI EXIT=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', 'ui', '-x', '80', '-y', '24', cmd);
  });

  afterAll(async () => {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    await kernel?.stop();
    await fake?.close();
    await new Promise((r) => (runner ? runner.close(r) : r(undefined)));
    if (home) rm(home);
  });

  it('shows the overview, queues a task and watches it complete, chats, manages local models, and quits cleanly', async () => {
    const overview = await see(/Model\s+gpt-4o-mini/, 'the overview with the model');
    expect(overview).toMatch(/connected/);
    for (const line of overview.split('\n')) expect(line.length).toBeLessThanOrEqual(80);

    // c: one real call to the model (POST /api/agent/probe); then a refused key shows the fix, wrapped to the screen.
    fake!.script(chatReply({ text: 'OK' }));
    keys('c');
    await see(/Check\s+gpt-4o-mini on providerA answered in \d+ ms\./, 'the model check');
    fake!.script({ status: 401, json: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error' } } });
    keys('c');
    const refused = await see(/Fix: providerA refused the credentials: check\s+providerAApiKey/, 'the failed check with its fix');
    expect(refused).toMatch(/Check\s+Failed: providerA: HTTP 401/);
    for (const line of refused.split('\n')) expect(line.length).toBeLessThanOrEqual(80);

    // Queue: push a task with priority 8 and see it complete in the queue and the live activity.
    fake!.script(chatReply({ text: 'Paris is the capital of France.' }));
    keys('2');
    await see(/\[2 Queue\]/, 'the queue screen');
    keys('n');
    await see(/New task:/, 'the task prompt');
    await typeLine('What is the capital of France?');
    keys('Enter');
    await see(/Priority 1-10/, 'the priority prompt');
    await typeLine('8');
    keys('Enter');
    await see(/Completed \(1\)\s*\n\s+act_\S+\s+What is the capital of France\?/, 'the task in the completed list');
    expect(kernel!.queue.list().completed[0]).toMatchObject({ priority: 8, result: 'Paris is the capital of France.' });
    keys('3');
    await see(/completed: Paris is the capital of France\./, 'the live activity');

    // Chat: a message becomes a task; the answer comes back on the chat screen.
    fake!.script(chatReply({ text: 'Hello from Keel.' }));
    keys('4');
    await see(/\[4 Chat\]/, 'the chat screen');
    await typeLine('hello there');
    keys('Enter');
    await see(/keel: Hello from Keel\./, 'the agent reply in the chat');
    // Esc on an empty chat line leaves the chat (typed keys belong to the message while it is open).
    keys('Escape');
    await see(/\[1 Overview\]/, 'the overview after Esc');

    // Models: the runner's models, a pull with progress, then choose one as modelName.
    keys('5');
    await see(/llama3:8b\s+4\.7 GB/, 'the installed models');
    keys('p');
    await see(/Model to pull/, 'the pull prompt');
    await typeLine('llama3.2:1b');
    keys('Enter');
    await see(/Pulled llama3\.2:1b\.|llama3\.2:1b\s+1\.3 GB/, 'the pull to finish');
    expect(pulled).toEqual(['llama3.2:1b']);
    await see(/llama3\.2:1b\s+1\.3 GB/, 'the new model in the list');
    keys('Down');
    await see(/> llama3\.2:1b/, 'the cursor on the new model');
    keys('Enter');
    await see(/modelName is now llama3\.2:1b/, 'the model switch');
    expect(kernel!.config.get('modelName')).toBe('llama3.2:1b');
    expect(kernel!.config.get('llmProvider')).toBe('providerG');

    // Queue: choose a task with the arrows and cancel it; the running one is stopped, never retried.
    fake!.script({ hang: true });
    const long = await kernel!.queue.push({ task: 'A long job', priority: 9, source: 'cli' });
    await waitFor(() => kernel!.queue.get(long.id)?.status === 'executing', 'the long job to run');
    const second = await kernel!.queue.push({ task: 'Second task', priority: 5, source: 'cli' });
    const third = await kernel!.queue.push({ task: 'Third task', priority: 5, source: 'cli' });
    keys('2');
    keys('r');
    await see(
      /> P9 act_\S+\s+\[running\] A long job\s*\n\s+P5 act_\S+\s+Second task\s*\n\s+P5 act_\S+\s+Third task/,
      'the queue, the running job chosen',
    );
    keys('Down');
    await see(/> P5 act_\S+\s+Second task/, 'the second task chosen');
    keys('x');
    await see(new RegExp(`Cancelled ${second.id}\\.`), 'the cancel notice');
    expect(kernel!.queue.get(second.id)).toBeUndefined();
    expect(kernel!.queue.get(third.id)?.status).toBe('pending');
    // The list closed up: the arrow stays within it, on the running job above.
    keys('Up');
    await see(/> P9 act_\S+\s+\[running\] A long job/, 'the running job chosen again');
    keys('x');
    await see(new RegExp(`Stopping ${long.id}: it ends failed, not retried\\.`), 'the stop notice');
    const stopped = await waitFor(() => kernel!.queue.list().failed.find((a) => a.id === long.id), 'the long job to fail');
    expect(stopped.error).toMatch(/cancelled by the operator/);
    expect(stopped.metadata.retries).toBe(0);

    keys('q');
    await see(/UI EXIT=0/, 'a clean exit');
  });
});
