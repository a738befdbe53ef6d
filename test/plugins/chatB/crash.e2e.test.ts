/**
 * kill -9 of `keel run` (chatB against the loopback WhatsApp) in the middle of a burst of inbound messages and in the
 * middle of a multi-part reply. WhatsApp redelivers what was not acknowledged; the fake counts: no message lost, no
 * action twice, no part twice.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWhatsAppFake, type WhatsAppFake } from '../../fakes/whatsapp-server.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';
import { BOT } from './harness.js';

const TRUST = join(import.meta.dirname, '..', '..', 'fakes', 'whatsapp-trust.mjs');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(replies: unknown[] = []) {
  const wa = await startWhatsAppFake();
  const session = tmp('keel-chatb-crash-session-');
  await wa.linkDevice(session, BOT);
  const k = crashHome({
    prefix: 'keel-chatb-crash-',
    replies,
    config: { chatBEnabled: true, chatBAutoReplyEnabled: true, chatBSessionPath: session, chatBWebSocketUrl: wa.url },
    // The child trusts the fake's certificate root, as the in-process tests do.
    env: { NODE_OPTIONS: `--import=${TRUST}` },
  });
  cleanups.push(async () => {
    await k.close();
    await wa.close();
    rm(session);
  });
  return { wa, start: k.start };
}

const answersTo = (wa: WhatsAppFake, id: string) => wa.sent().filter((s) => s.quotedId === id);

describe('chatB crash safety (kill -9)', () => {
  it('mid-burst: every message answered exactly once after the restart, also those sent while Keel was down', async () => {
    const { wa, start } = await setup();
    const first = start();
    await waitFor(() => wa.loggedIn() >= 1, 'logged in', 30_000);
    const senders = Array.from({ length: 6 }, (_, i) => `49176100000${10 + i}`);
    const ids: string[] = [];
    for (let round = 0; round < 4; round++) for (const [i, s] of senders.entries()) ids.push(await wa.sendText(s, `message ${round}-${i}`));
    // Killed while the burst is being worked on: some answered, some queued, some only recorded or not yet acked.
    await waitFor(() => wa.sent().length >= 3, 'the first answers', 30_000);
    first.kill('SIGKILL');
    await exited(first);
    expect(ids.filter((id) => answersTo(wa, id).length > 0).length).toBeLessThan(ids.length);
    // More arrive while Keel is down: WhatsApp keeps them for the device.
    for (const [i, s] of senders.slice(0, 3).entries()) ids.push(await wa.sendText(s, `late ${i}`));
    start();
    await waitFor(() => ids.every((id) => answersTo(wa, id).length > 0), 'every message answered', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    for (const id of ids) {
      expect(answersTo(wa, id), id).toHaveLength(1);
      expect(answersTo(wa, id)[0]!.text).toBe('fake answer');
      expect(wa.acked(id), id).toBe(true);
    }
  }, 120_000);

  it('mid-reply: the parts not yet sent go out after the restart, none twice', async () => {
    const long = Array.from({ length: 30 }, (_, i) => `Part ${i}: ${'x'.repeat(1500)}`).join('\n\n');
    const { wa, start } = await setup([{ text: long }]);
    const first = start();
    await waitFor(() => wa.loggedIn() >= 1, 'logged in', 30_000);
    const id = await wa.sendText('4917610000099', 'write a lot');
    await waitFor(() => wa.sent().length >= 2, 'two parts sent', 30_000);
    first.kill('SIGKILL');
    await exited(first);
    const before = wa.sent().length;
    // WhatsApp's send rate (5 at once, then 1 a second) spreads the ~15 parts over seconds: the kill lands among them.
    expect(before).toBeLessThan(10);
    start();
    await waitFor(
      () =>
        wa
          .sent()
          .map((m) => m.text ?? '')
          .join('')
          .includes('Part 29:'),
      'the rest of the reply',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const parts = wa.sent().map((m) => m.text ?? '');
    expect(parts.length).toBeGreaterThan(before);
    // Each part once (WhatsApp keeps one message per id, and Keel resends a part under the id of its first attempt).
    expect(new Set(wa.sent().map((m) => m.id)).size).toBe(parts.length);
    const joined = parts.join('\n\n');
    for (let i = 0; i < 30; i++) expect(joined.split(`Part ${i}:`).length - 1, `Part ${i}`).toBe(1);
    expect(answersTo(wa, id)).toHaveLength(1);
  }, 120_000);
});
