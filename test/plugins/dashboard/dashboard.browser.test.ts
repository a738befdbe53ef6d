/**
 * The dashboard in a real browser (Debian's chromium through playwright-core) against a running gateway, with the
 * built-in agent on the scripted fake model: every page loads at phone width (a screenshot per page is kept under
 * test-artifacts/dashboard/), a task pushed from the tasks page is watched to completion in the live view and its
 * timeline shown on the tasks page, the chat
 * answers, a LOCKED key edit is refused, and the loud warning shows on a gateway open beyond loopback without a key.
 * A second gateway with a key: the page asks for it once, keeps it in session storage and never puts it in a URL.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { chatReply, errorReply, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { rm, tmp } from '../../helpers.js';
import { CHROMIUM, openBrowser } from './browser.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SHOTS = join(ROOT, 'test-artifacts', 'dashboard');
const PAGES = [
  'overview',
  'tasks',
  'live',
  'chat',
  'approvals',
  'skills',
  'memory',
  'knowledge',
  'config',
  'security',
  'connections',
  'logs',
  'plugins',
];
const IP = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

interface Running {
  kernel: Kernel;
  home: string;
  fake: FakeProviderControl;
  base: string;
}

/** A kernel with the agent and the gateway; on the scripted fake model unless `configYaml` says otherwise. */
async function start(host: string, key?: string, configYaml = 'llmProvider: fake\nmodelName: fake-model\n'): Promise<Running> {
  const home = tmp('keel-dash-');
  const fake = installFakeProvider(home);
  writeFileSync(join(home, 'keel.config.yaml'), configYaml, { mode: 0o600 });
  const kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    runAgent: true,
    runner: { maxIdleMs: 100 },
    overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: host, ...(key ? { gatewayApiKey: key } : {}) },
    logs: new LogSink({ quiet: true }),
  });
  const port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
  return { kernel, home, fake, base: `http://${host}:${port}` };
}

async function stop(r: Running | undefined): Promise<void> {
  if (!r) return;
  await r.kernel.stop();
  rm(r.home);
}

/**
 * Waits until `locator` shows text matching `text` (text a page fills in after a fetch or an event is not there
 * the moment the element is), and returns that text.
 */
async function shows(locator: Locator, text: RegExp, timeout = 15_000): Promise<string> {
  const match = locator.filter({ hasText: text }).first();
  await match.waitFor({ timeout });
  return (await match.textContent()) ?? '';
}

/** Opens a page by its hash route and waits for its heading. */
async function show(page: Page, id: string): Promise<void> {
  // String expressions: this file is type-checked without the DOM library.
  await page.evaluate(`location.hash = ${JSON.stringify(`#/${id}`)}`);
  await page.locator(`main[data-page="${id}"] h1`).waitFor({ timeout: 15_000 });
}

describe.skipIf(!existsSync(CHROMIUM) || !IP)('dashboard in chromium', () => {
  let open: Running | undefined;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // Bound to this machine's non-loopback address without a key: the browser is a remote client to it.
    open = await start(IP!);
    browser = await openBrowser();
    page = await browser.context.newPage();
    await page.goto(`${open.base}/`);
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await stop(open);
  });

  it('loads every page at phone width without sideways scrolling, with a screenshot of each', async () => {
    await shows(page.getByTestId('exposed-warning'), /no API key/);
    for (const id of PAGES) {
      await show(page, id);
      // Give the page's first fetch its turn before the picture.
      await page.waitForLoadState('networkidle').catch(() => undefined);
      const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
      expect(overflow, `${id} scrolls sideways at phone width`).toBeLessThanOrEqual(1);
      await page.screenshot({ path: join(SHOTS, `${id}.png`), fullPage: true });
      expect(existsSync(join(SHOTS, `${id}.png`))).toBe(true);
    }
    await show(page, 'overview');
    await shows(page.getByTestId('agent-state'), /^running$/);
  }, 120_000);

  it('pushes a task from the tasks page and watches it to completion in the live view', async () => {
    open!.fake.replies.push(
      { text: 'Let me list the knowledge first.', toolCalls: [{ name: 'rag_list', arguments: {} }] },
      { text: 'Done: the store is empty.' },
    );
    await show(page, 'tasks');
    await page.locator('textarea[name="task"]').fill('List what you know');
    await page.locator('input[name="priority"]').fill('7');
    await page.getByRole('button', { name: 'Push task' }).click();
    // The status line says "Pushing…" first, then the new action's id.
    const status = await shows(page.getByRole('status'), /\(act_[^)]+\)/);
    const id = /\((act_[^)]+)\)/.exec(status)?.[1];
    expect(id, status).toBeDefined();
    expect(status).toMatch(/priority 7/);
    await page.getByRole('link', { name: 'Live' }).click();
    const done = page.locator(`li[data-event="action.completed"][data-action="${id}"]`);
    await done.waitFor({ timeout: 20_000 });
    await expect(done.textContent()).resolves.toContain('Done: the store is empty.');
    // The steps streamed too: the thought, the skill call with its parameters and its observation.
    await expect(page.locator('li[data-event="thinking"]').first().textContent()).resolves.toContain('Let me list the knowledge first.');
    await expect(page.locator('li[data-event="action"]').first().textContent()).resolves.toContain('rag_list');
    expect(await page.locator('li[data-event="observation"]').count()).toBeGreaterThan(0);
    // An event relayed from another machine on a shared queue (docs/websocket.md) says which machine.
    open!.kernel.registry
      .use<{ emit(event: string, data: Record<string, unknown>): unknown }>('gateway:events')!
      .emit('action.started', { actionId: 'act_relayed_1', task: 'on the other machine', priority: 5, host: 'runner-b' });
    const relayed = page.locator('li[data-event="action.started"][data-host="runner-b"]');
    await relayed.waitFor({ timeout: 10_000 });
    await expect(relayed.textContent()).resolves.toMatch(/on runner-b.*act_relayed_1: on the other machine/);
    await page.screenshot({ path: join(SHOTS, 'live-after-task.png'), fullPage: true });
    expect(open!.kernel.queue.get(id!)?.status).toBe('completed');

    // Its timeline (GET /api/tasks/:id of the timeline plugin) on the tasks page.
    await show(page, 'tasks');
    const row = page.locator(`li[data-testid="task"][data-action="${id}"]`);
    await row.getByRole('button', { name: 'Timeline' }).click();
    await row.locator('[data-testid="timeline"] li[data-type="settled"]').waitFor({ timeout: 10_000 });
    const items = row.locator('[data-testid="timeline"] li[data-type]');
    const types: Array<string | null> = [];
    for (let i = 0; i < (await items.count()); i++) types.push(await items.nth(i).getAttribute('data-type'));
    expect(types).toEqual(['queued', 'started', 'model_call', 'skill_call', 'model_call', 'settled']);
    await expect(row.locator('li[data-type="skill_call"]').textContent()).resolves.toContain('rag_list ok');
    await page.screenshot({ path: join(SHOTS, 'task-timeline.png'), fullPage: true });
  }, 60_000);

  it('stops a running task from the tasks page: it ends failed with the reason, not retried', async () => {
    open!.fake.replies.push({ delayMs: 30_000, text: 'never' });
    const a = await open!.kernel.queue.push({ task: 'a long job to stop' });
    await show(page, 'tasks');
    const row = page.locator(`li[data-testid="task"][data-action="${a.id}"]`);
    await page.locator(`li[data-testid="task"][data-action="${a.id}"][data-status="executing"]`).waitFor({ timeout: 15_000 });
    await row.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('status').filter({ hasText: 'Stopping the running action' }).waitFor({ timeout: 10_000 });
    const failed = page.locator(`li[data-testid="task"][data-action="${a.id}"][data-status="failed"]`);
    await failed.waitFor({ timeout: 15_000 });
    await expect(failed.locator('pre.error').textContent()).resolves.toBe('cancelled by the operator (gateway)');
    expect(open!.kernel.queue.get(a.id)).toMatchObject({ status: 'failed', metadata: { retries: 0 } });
    await page.screenshot({ path: join(SHOTS, 'task-stopped.png'), fullPage: true });
  }, 60_000);

  it("shows the message a chat task replies to, and marks the task untrusted when the quote is not an admin's", async () => {
    open!.fake.replies.push({ text: 'It is about arm64.' });
    const admin = { kind: 'user' as const, channel: 'chatC', userId: '420000000000000042' };
    const quoted = {
      userId: '430000000000000043',
      userName: 'bob',
      text: `<b>the deploy</b> fails on arm64 ${'x'.repeat(300)}`,
      trusted: false,
    };
    const a = await open!.kernel.queue.push({
      task: 'what went wrong?',
      source: 'chatC',
      actor: admin,
      metadata: { quoted },
      maxRetries: 0,
    });
    await show(page, 'tasks');
    const row = page.locator(`li[data-testid="task"][data-action="${a.id}"]`);
    const quote = row.getByTestId('quoted');
    await quote.waitFor({ timeout: 10_000 });
    // Shown as text (never markup), cut at 200 characters.
    await expect(quote.textContent()).resolves.toMatch(/replying to bob \(untrusted\):\s+<b>the deploy<\/b> fails on arm64 x+…/);
    await expect(row.locator('b').count()).resolves.toBe(0);
    await expect(row.locator('.badge.danger').textContent()).resolves.toBe('untrusted');
    await expect(row.getByTestId('edited').count()).resolves.toBe(0);
    await page.screenshot({ path: join(SHOTS, 'task-quoted.png'), fullPage: true });

    // An edit of that message, asked again after the answer: marked edited, saying after which action.
    open!.fake.replies.push({ text: 'Still arm64.' });
    const e = await open!.kernel.queue.push({
      task: 'what went wrong on arm64?',
      source: 'chatC',
      actor: admin,
      metadata: { edit: { of: '1300000000000000001', at: '2026-11-26T10:00:00.000Z', after: a.id } },
      maxRetries: 0,
    });
    const edited = page.locator(`li[data-testid="task"][data-action="${e.id}"]`).getByTestId('edited');
    await edited.waitFor({ timeout: 10_000 });
    await expect(edited.getAttribute('title')).resolves.toBe(`the message was edited after ${a.id} took it up`);
  }, 60_000);

  it('chats with the agent through the gateway chat', async () => {
    open!.fake.replies.push({ text: 'Hi from the agent.' });
    await show(page, 'chat');
    await page.locator('input[name="message"]').fill('hello agent');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.msg-agent', { hasText: 'Hi from the agent.' }).waitFor({ timeout: 20_000 });
    await expect(page.locator('.msg-user').last().textContent()).resolves.toContain('hello agent');
    await page.screenshot({ path: join(SHOTS, 'chat-after-reply.png'), fullPage: true });
  }, 60_000);

  it('an answer that arrives before the chat POST itself answers leaves nothing showing "working…"', async () => {
    open!.fake.replies.push({ text: 'Quicker than the POST.' });
    await show(page, 'chat');
    // The POST's answer is held back until the agent's reply is on the page (it came by the event stream).
    await page.route('**/api/chat', async (route) => {
      const response = await route.fetch();
      await page.locator('.msg-agent', { hasText: 'Quicker than the POST.' }).waitFor({ timeout: 20_000 });
      await route.fulfill({ response });
    });
    try {
      await page.locator('input[name="message"]').fill('be quick');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('.msg-agent', { hasText: 'Quicker than the POST.' }).waitFor({ timeout: 20_000 });
      // The POST has answered once the input is cleared.
      await expect.poll(() => page.locator('input[name="message"]').inputValue(), { timeout: 20_000 }).toBe('');
      await expect(page.getByText('working…').count()).resolves.toBe(0);
    } finally {
      await page.unroute('**/api/chat');
    }
  }, 60_000);

  it('shows each connected channel as whom, on Discord in how many servers, and what it read from the history', async () => {
    // The channels' own status objects, as GET /api/connections returns them (chatC and chatD tests check those).
    const status = {
      chatC: { enabled: true, connected: true, state: 'connected', botUsername: 'keel', guilds: 3, reconnects: 1, caughtUp: 4 },
      chatD: { enabled: true, connected: false, state: 'reconnecting', botUsername: '@keel', lastError: 'socket closed' },
    };
    await page.route('**/api/connections', (route) => route.fulfill({ json: status }));
    try {
      await show(page, 'connections');
      const chatC = page.locator('li[data-channel="chatC"]');
      await expect
        .poll(() => chatC.textContent(), { timeout: 10_000 })
        .toContain('as keel · 3 servers · 1 reconnects · 4 read from the history');
      await expect(chatC.locator('.badge').textContent()).resolves.toBe('connected');
      const chatD = page.locator('li[data-channel="chatD"]');
      await expect(chatD.textContent()).resolves.toContain('as @keel · socket closed');
      await expect(chatD.textContent()).resolves.not.toContain('server');
      await expect(chatD.locator('.badge').textContent()).resolves.toBe('reconnecting');
    } finally {
      await page.unroute('**/api/connections');
    }
  }, 60_000);

  it('resumes the live stream after a dropped connection without a reload: what happened meanwhile shows up', async () => {
    const p2 = await browser!.context.newPage();
    const urls: string[] = [];
    let drop: (() => Promise<void>) | undefined;
    // The reconnection reaches the gateway only after the task below has completed: what the page then shows
    // can only come from the replay of ?since=<seq>.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    await p2.routeWebSocket(/\/ws/, async (ws) => {
      urls.push(ws.url());
      if (urls.length > 1) await gate;
      const server = ws.connectToServer();
      drop = async () => {
        await ws.close();
        await server.close();
      };
    });
    await p2.goto(`${open!.base}/#/live`);
    await p2.locator('.dot.open').waitFor({ timeout: 15_000 });
    await drop!();
    await p2
      .locator('.dot.closed')
      .waitFor({ timeout: 10_000 })
      .catch(() => undefined);
    // While the page is cut off, a task runs to completion.
    open!.fake.replies.push({ text: 'done while you were away' });
    const a = await open!.kernel.queue.push({ task: 'work during the drop', source: 'cli' });
    await expect.poll(() => open!.kernel.queue.get(a.id)?.status, { timeout: 20_000 }).toBe('completed');
    release();
    const done = p2.locator(`li[data-event="action.completed"][data-action="${a.id}"]`);
    await done.waitFor({ timeout: 20_000 });
    await expect(done.textContent()).resolves.toContain('done while you were away');
    expect(urls.length).toBeGreaterThanOrEqual(2);
    expect(urls.at(-1)).toMatch(/[?&]since=\d+/);
    await p2.close();
  }, 60_000);

  it('refuses an edit of a LOCKED key from this (remote, keyless) browser and changes nothing', async () => {
    await show(page, 'config');
    await page.locator('input[placeholder="Filter keys"]').fill('safeMode');
    const row = page.locator('tr[data-key="safeMode"]');
    await row.getByRole('button', { name: 'Edit' }).click();
    await row.locator('input[name="value"]').fill('true');
    await row.getByRole('button', { name: 'Save' }).click();
    const alert = row.getByRole('alert');
    await shows(alert, /LOCKED.*loopback/);
    expect(open!.kernel.config.get('safeMode')).toBe(false);
    await page.screenshot({ path: join(SHOTS, 'config-locked-refused.png'), fullPage: true });
  }, 60_000);
});

describe.skipIf(!existsSync(CHROMIUM))('dashboard with an API key', () => {
  const KEY = 'dash-key-0123456789abcdef';
  let g: Running | undefined;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;

  beforeAll(async () => {
    g = await start('127.0.0.1', KEY);
    browser = await openBrowser();
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await stop(g);
  });

  it('asks for the key once, keeps it in session storage, sends it only in headers and the WebSocket subprotocol', async () => {
    const page = await browser!.context.newPage();
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    page.on('websocket', (ws) => urls.push(ws.url()));
    await page.goto(`${g!.base}/`);
    await page.locator('input[name="key"]').fill('wrong-key');
    await page.getByRole('button', { name: 'Open the dashboard' }).click();
    await page.getByRole('alert').waitFor({ timeout: 10_000 });
    await page.locator('input[name="key"]').fill(KEY);
    await page.getByRole('button', { name: 'Open the dashboard' }).click();
    await page.locator('main[data-page="overview"] h1').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('exposed-warning').count()).toBe(0);
    expect(await page.evaluate("sessionStorage.getItem('keel.apiKey')")).toBe(KEY);
    // Another page of the same tab: no prompt again.
    await show(page, 'tasks');
    await page.reload();
    await page.locator('main[data-page="tasks"] h1').waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(SHOTS, 'with-key-tasks.png'), fullPage: true });
    // The live stream is connected (the subprotocol carried the key).
    await page.locator('.dot.open').waitFor({ timeout: 15_000 });
    expect(urls.length).toBeGreaterThan(3);
    for (const u of urls) expect(u).not.toContain(KEY);
    await page.close();
  }, 90_000);
});

describe.skipIf(!existsSync(CHROMIUM))('dashboard model setup', () => {
  let running: Running | undefined;
  let wire: ScriptedServer | undefined;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  afterAll(async () => {
    await browser?.close();
    await stop(running);
    await wire?.close();
  });

  it('a fresh Keel without a model: the Overview asks for one, saves it, checks it with one real call; a refused key shows the fix', async () => {
    // The real agent and providerA's openai client against the OpenAI wire fake; no model configured.
    wire = await startOpenAIFake();
    running = await start('127.0.0.1', undefined, `providerABaseUrl: ${wire.url}\n`);
    const { kernel } = running;
    browser = await openBrowser();
    const page = await browser.context.newPage();
    await page.goto(`${running.base}/`);
    await shows(page.getByTestId('why-waiting'), /modelName/);
    const form = page.getByTestId('model-setup');
    await form.waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(SHOTS, 'model-setup.png'), fullPage: true });
    await form.locator('select[name="provider"]').selectOption('providerA');
    // Without a key it says so and changes nothing.
    await form.getByRole('button', { name: 'Save and check' }).click();
    // (filter + waitFor: the text is waited for, not read once while the page may still show an earlier state)
    await form
      .getByRole('alert')
      .filter({ hasText: /needs an API key \(providerAApiKey\)/ })
      .waitFor({ timeout: 15_000 });
    expect(kernel.config.get('modelName')).toBeUndefined();

    const key = 'sk-dash-setup-0123456789abcdef';
    await form.locator('input[name="providerAApiKey"]').fill(key);
    await form.locator('input[name="model"]').fill('gpt-4o-mini');
    wire.script(chatReply({ text: 'OK' }));
    await form.getByRole('button', { name: 'Save and check' }).click();
    const result = page.getByTestId('probe-result');
    await result.filter({ hasText: /gpt-4o-mini on providerA answered in \d+ ms: “OK”/ }).waitFor({ timeout: 15_000 });
    expect(kernel.config.get('providerAApiKey')).toBe(key);
    expect(kernel.config.get('modelName')).toBe('gpt-4o-mini');
    expect(kernel.config.get('llmProvider')).toBe('providerA');
    const chats = () => wire!.requests.filter((r) => r.url.endsWith('/chat/completions'));
    expect(chats()).toHaveLength(1);
    expect(chats()[0]!.headers.authorization).toBe(`Bearer ${key}`);
    // Ready now: the warning goes and the form closes.
    await page.getByTestId('why-waiting').waitFor({ state: 'detached', timeout: 15_000 });
    await page.getByTestId('model-setup').waitFor({ state: 'detached', timeout: 5000 });
    await page.screenshot({ path: join(SHOTS, 'model-ready.png'), fullPage: true });

    // The key stops working: "Check the model" shows the provider's words and the fix, and no key.
    wire.script(errorReply(401, 'Incorrect API key provided.'));
    await page.getByRole('button', { name: 'Check the model' }).click();
    await page
      .getByTestId('probe-result')
      .filter({ hasText: /HTTP 401.*Incorrect API key provided.*Fix: providerA refused the credentials: check providerAApiKey/ })
      .waitFor({ timeout: 15_000 });
    expect(await page.content()).not.toContain(key);
    await page.screenshot({ path: join(SHOTS, 'model-refused.png'), fullPage: true });
    expect(chats()).toHaveLength(2);
  }, 90_000);
});
