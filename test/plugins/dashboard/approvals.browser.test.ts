/**
 * The dashboard's Approvals page in a real browser (Debian's chromium) against a running gateway on 127.0.0.1 (so
 * the page is the operator), with the built-in agent on the scripted fake model and the system plugin: a command
 * the agent asked for in the gateway chat waits for approval (autoExecuteCommands off), the page lists it with
 * Approve / Refuse, and a click decides it through POST /api/approvals/:id/approve|refuse: approved, it runs once
 * and its output shows; refused, it never runs.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { ApprovalsCapability } from '../../../sdk/approvals.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { CHROMIUM, openBrowser } from './browser.js';

describe.skipIf(!existsSync(CHROMIUM))('dashboard approvals page', () => {
  let kernel: Kernel | undefined;
  let home = '';
  let fake: FakeProviderControl;
  let base = '';
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;

  beforeAll(async () => {
    home = tmp('keel-dash-approvals-');
    fake = installFakeProvider(home);
    writeFileSync(join(home, 'keel.config.yaml'), 'llmProvider: fake\nmodelName: fake-model\ncommandIsolation: "off"\n', { mode: 0o600 });
    kernel = await startKernel({
      home,
      env: {},
      watchSkills: false,
      runAgent: true,
      runner: { maxIdleMs: 100 },
      overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' },
      logs: new LogSink({ quiet: true }),
    });
    base = `http://127.0.0.1:${kernel.registry.use<{ port: number }>('gateway:address')!.port}`;
    browser = await openBrowser();
    page = await browser.context.newPage();
    await page.goto(`${base}/`);
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await kernel?.stop();
    if (home) rm(home);
  });

  const approvals = () => kernel!.registry.use<ApprovalsCapability>('approvals')!;

  /** The agent, asked in the gateway chat, runs `echo <word>`: it waits for approval. Returns the request id. */
  async function commandWaiting(word: string): Promise<string> {
    fake.replies.push({ toolCalls: [{ name: 'run_command', arguments: { command: 'echo', args: [word] } }] }, { text: 'It waits.' });
    const r = await fetch(`${base}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: `run echo ${word}` }),
    });
    expect(r.status).toBe(202);
    const req = await waitFor(
      () =>
        approvals()
          .list()
          .find((x) => x.state === 'pending' && x.ask.includes(`echo ${word}`)),
      'the request',
    );
    expect(req.origin.channel).toBe('gateway-chat');
    return req.id;
  }

  /** The page's answer to the click (what the gateway said), once it shows. */
  const result = (text: RegExp) => page.getByTestId('approval-result').filter({ hasText: text }).waitFor({ timeout: 15_000 });
  const card = (id: string) => page.locator(`[data-testid="approval"][data-id="${id}"]`);

  it('lists a waiting command with Approve / Refuse; Approve runs it once and shows its output', async () => {
    await page.evaluate(`location.hash = '#/approvals'`);
    await page.locator('main[data-page="approvals"] h1').waitFor({ timeout: 15_000 });
    await page.getByTestId('approvals-none').waitFor({ timeout: 15_000 });

    const id = await commandWaiting('clicked');
    // Shown without a reload: the page refreshes on the approval.requested event.
    await card(id).waitFor({ timeout: 15_000 });
    expect(await card(id).getAttribute('data-state')).toBe('pending');
    expect(await card(id).getByTestId('approval-ask').textContent()).toMatch(/^run the command: echo clicked \(in .+\)$/);
    await card(id).getByRole('button', { name: 'Approve' }).click();

    await result(/^Approved by the operator \(gateway\)\.$/);
    await page.locator(`[data-testid="approval"][data-id="${id}"][data-state="approved"]`).waitFor({ timeout: 15_000 });
    const outcome = (await card(id).getByTestId('approval-outcome').textContent()) ?? '';
    expect(outcome).toContain('approved by the operator (gateway)');
    expect(outcome).toMatch(/--- stdout ---\nclicked/);
    expect(await card(id).getByRole('button').count()).toBe(0);
    expect(approvals().get(id)).toMatchObject({ state: 'approved' });
  }, 60_000);

  it('Refuse drops it: it never runs, and the page says who refused', async () => {
    const id = await commandWaiting('refused');
    await card(id).waitFor({ timeout: 15_000 });
    await card(id).getByRole('button', { name: 'Refuse' }).click();
    await result(/^Refused by the operator \(gateway\)\.$/);
    await page.locator(`[data-testid="approval"][data-id="${id}"][data-state="refused"]`).waitFor({ timeout: 15_000 });
    const outcome = (await card(id).getByTestId('approval-outcome').textContent()) ?? '';
    expect(outcome).toContain('refused by the operator (gateway)');
    expect(outcome).not.toContain('--- stdout ---');
    expect(approvals().get(id)?.outcome).toMatch(/It was not done\.$/);
  }, 60_000);
});
