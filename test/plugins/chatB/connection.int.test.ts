/**
 * chatB's connection: linking by QR code, drops, a connection that stops hearing, and the closes no retry fixes
 * (unlinked, replaced by another client).
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '../../helpers.js';
import { BOT, bootChatB, type ChatBHarness, OWNER } from './harness.js';
import { readTerminalQr } from './qr.js';

let h: ChatBHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const state = () => h!.channel().status().state;

describe('chatB connection', () => {
  it('an empty session shows a QR code; scanning it links the device, which reconnects as WhatsApp asks and answers', async () => {
    // The code is written to the terminal (stderr), never into the log the gateway serves.
    let terminal = '';
    const write = process.stderr.write.bind(process.stderr);
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
      terminal += String(chunk);
      return String(chunk).includes('chatB: link Keel') ? true : write(chunk, ...rest);
    }) as typeof process.stderr.write);
    h = await bootChatB({ link: false });
    const shown = await waitFor(
      () => (terminal.includes('Linked devices → Link a device') && /[▀▄█]/.test(terminal) ? terminal : undefined),
      'the QR code on the terminal',
      10_000,
    );
    spy.mockRestore();
    const told = h.logs.recent({ level: 'info' }).filter((e) => e.message.startsWith('chatB: not linked yet'));
    expect(told).toHaveLength(1);
    expect(h.logs.recent({}).some((e) => /[▀▄█]/.test(e.message))).toBe(false);
    expect(h.channel().status()).toMatchObject({ connected: false, linked: false, waitingForScan: true });
    // The phone scans what the terminal shows.
    const qr = readTerminalQr(shown.slice(shown.lastIndexOf('chatB: link Keel')));
    // WhatsApp's form: a link to the Linked devices screen, with the ref and the device's public keys after '#'.
    expect(qr).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#2@/);
    await h.wa.scanQr(qr!, BOT);
    await waitFor(() => h!.channel().status().connected, 'connected after linking', 15_000);
    expect(h.channel().status()).toMatchObject({ linked: true, account: `${BOT}@s.whatsapp.net` });
    expect(h.channel().status().waitingForScan).toBeUndefined();
    // The session is kept, private.
    expect(existsSync(join(h.session, 'creds.json'))).toBe(true);
    expect(statSync(h.session).mode & 0o077).toBe(0);
    h.model.replies.push({ text: 'linked and listening' });
    await h.wa.sendText(OWNER, 'hello');
    await h.wa.waitFor((m) => m.text === 'linked and listening', 10_000);
  });

  it('linking by phone number: the code is in the log and the status; entered on that phone, the device links', async () => {
    h = await bootChatB({ link: false, config: { chatBPairingPhone: `+${BOT}` } });
    const code = await waitFor(() => h!.channel().status().pairingCode, 'a pairing code', 10_000);
    expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    expect(h.channel().status()).toMatchObject({ connected: false, linked: false, waitingForScan: true });
    expect(h.logs.recent({ level: 'info' }).some((e) => e.message.includes(`Link with phone number instead, and enter ${code}`))).toBe(
      true,
    );
    // A wrong code is refused by the phone; the right one links.
    await expect(h.wa.enterPairingCode('AAAABBBB', BOT)).rejects.toThrow();
    expect(h.channel().status().linked).toBe(false);
    await h.wa.enterPairingCode(code.replace('-', ''), BOT);
    await waitFor(() => h!.channel().status().connected, 'connected after linking', 15_000);
    expect(h.channel().status()).toMatchObject({ linked: true, account: `${BOT}@s.whatsapp.net` });
    expect(h.channel().status().pairingCode).toBeUndefined();
    h.model.replies.push({ text: 'linked by number' });
    await h.wa.sendText(OWNER, 'hello');
    await h.wa.waitFor((m) => m.text === 'linked by number', 10_000);
  });

  it('a dropped connection comes back, and a connection that stops hearing is rebuilt', async () => {
    h = await bootChatB({ config: { chatBKeepAliveInterval: 1 } });
    await waitFor(() => state() === 'connected', 'connected', 10_000);
    const before = h.wa.connections();
    h.wa.drop();
    await waitFor(() => h!.wa.connections() > before && state() === 'connected', 'reconnected', 15_000);
    const reconnects = h.channel().status().reconnects!;
    expect(reconnects).toBeGreaterThanOrEqual(1);
    h.wa.silent(true);
    const deaf = h.wa.connections();
    await waitFor(() => h!.wa.connections() > deaf, 'a new connection after the silent one', 20_000);
    h.wa.silent(false);
    await waitFor(() => state() === 'connected', 'connected again', 15_000);
    expect(h.channel().status().reconnects).toBeGreaterThan(reconnects);
    h.model.replies.push({ text: 'still here' });
    await h.wa.sendText(OWNER, 'ping');
    await h.wa.waitFor((m) => m.text === 'still here', 10_000);
  });

  it('unlinked from the phone (401): stops once with a message naming the session to delete, no reconnect loop', async () => {
    h = await bootChatB();
    await waitFor(() => state() === 'connected', 'connected', 10_000);
    const opened = h.wa.connections();
    h.wa.logout();
    await waitFor(() => state() === 'failed', 'failed', 10_000);
    expect(h.channel().status().lastError).toMatch(/unlinked this device.*delete that directory/);
    expect(h.channel().status().lastError).toContain(h.session);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.wa.connections()).toBe(opened);
  });

  it('replaced by another client (440): stops with the cause instead of taking turns with it', async () => {
    h = await bootChatB();
    await waitFor(() => state() === 'connected', 'connected', 10_000);
    const opened = h.wa.connections();
    h.wa.conflict();
    await waitFor(() => state() === 'failed', 'failed', 10_000);
    expect(h.channel().status().lastError).toMatch(/Another client took over this WhatsApp session/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.wa.connections()).toBe(opened);
  });
});
