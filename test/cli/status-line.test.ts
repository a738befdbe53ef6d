/**
 * `keel status`'s line per channel: the state (`off` when not enabled), as whom and in how many servers when connected;
 * the last error when a configured channel is not connected (what to
 * fix); how many messages its catch-up read from the history.
 */
import { describe, expect, it } from 'vitest';
import { channelLine } from '../../kernel/cli/cmd-status.js';

describe('keel status channel line', () => {
  it('names the state, and nothing more when all is well', () => {
    expect(channelLine({ name: 'chatA', plugin: 'chatA', status: { enabled: true, connected: true, state: 'connected' } })).toBe(
      'chatA connected',
    );
    expect(channelLine({ name: 'email', plugin: 'email', status: { enabled: false, connected: false } })).toBe('email off');
    expect(channelLine({ name: 'chatA', plugin: 'chatA', status: { enabled: false, connected: false, state: 'stopped' } })).toBe(
      'chatA off',
    );
    expect(
      channelLine({
        name: 'chatC',
        plugin: 'chatC',
        status: { enabled: true, connected: true, state: 'connected', botUsername: 'keel', guilds: 3 },
      }),
    ).toBe('chatC connected as keel (3 servers)');
  });

  it('says when a linked-device channel waits for its QR code to be scanned', () => {
    expect(
      channelLine({
        name: 'chatB',
        plugin: 'chatB',
        status: { enabled: true, connected: false, state: 'connecting', linked: false, waitingForScan: true },
      }),
    ).toBe('chatB connecting (not linked: scan the QR code in the terminal Keel runs in)');
    expect(
      channelLine({
        name: 'chatB',
        plugin: 'chatB',
        status: { enabled: true, connected: false, state: 'connecting', linked: false, waitingForScan: true, pairingCode: 'ABCD-EFGH' },
      }),
    ).toBe('chatB connecting (not linked: enter ABCD-EFGH on the phone (Link with phone number))');
  });

  it('says why a configured channel is not connected, and what its catch-up read', () => {
    expect(
      channelLine({
        name: 'chatD',
        plugin: 'chatD',
        status: { enabled: true, connected: false, state: 'reconnecting', lastError: 'Slack stopped delivering events', caughtUp: 2 },
      }),
    ).toBe('chatD reconnecting (last error: Slack stopped delivering events; 2 read from the history)');
    // A connected channel's old error is history, not news.
    expect(
      channelLine({
        name: 'chatC',
        plugin: 'chatC',
        status: { enabled: true, connected: true, state: 'connected', lastError: 'x', caughtUp: 5 },
      }),
    ).toBe('chatC connected (5 read from the history)');
  });

  it('a channel whose status failed says so', () => {
    expect(channelLine({ name: 'echo', plugin: 'echo-channel', error: 'boom' })).toBe('echo (status unavailable: boom)');
  });
});
