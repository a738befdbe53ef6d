/**
 * Files shared in Slack messages: downloaded with the bot token from the private URL of the loopback Slack into
 * downloads/chatD and named in the action's task; a download that fails leaves a note, not a lost message.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function ready(config: Record<string, unknown> = {}) {
  h = await bootChatD({ runAgent: false, config });
  await waitFor(() => h!.channel().status().connected, 'connected');
  return h;
}

describe('chatD inbound files', () => {
  it('a shared file is downloaded with the bot token under downloads/chatD, byte for byte, and named in the untrusted task', async () => {
    await ready();
    const data = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10, ...Buffer.from(' quarterly figures')]);
    const { envelopeId, ts } = h!.slack.pushMessage('please summarise', {
      user: 'U0BOB0001',
      files: [{ name: 'Q3 report/../x.pdf', data, mimetype: 'application/pdf' }],
    });
    const action = await waitFor(() => h!.actions()[0], 'the action');
    const path = /\[attachment: Q3 report\/\.\.\/x\.pdf \(document\) at (\S+)\]/.exec(action.task)?.[1];
    expect(action.task.startsWith('please summarise\n')).toBe(true);
    expect(path).toBe(join(h!.home, 'downloads', 'chatD', `C0GENERAL1_${ts}_Q3_report_.._x.pdf`));
    expect(readFileSync(path!)).toEqual(data);
    expect(action.metadata.actor).toMatchObject({ kind: 'user', channel: 'chatD', userId: 'U0BOB0001', untrusted: true });
    expect(h!.slack.fileDownloads).toEqual([
      { path: expect.stringContaining('/download/'), authorization: `Bearer ${h!.slack.botToken}`, status: 200 },
    ]);
    expect(h!.slack.acked).toContain(envelopeId);
  });

  it('the private URL refuses a request without the token (so the download above proves it was sent)', async () => {
    await ready();
    h!.slack.pushMessage('file', { files: [{ name: 'a.txt', data: Buffer.from('A') }] });
    await waitFor(() => h!.actions()[0], 'the action');
    const url = `http://127.0.0.1:${new URL(h!.slack.apiUrl).port}${h!.slack.fileDownloads[0]!.path}`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer xoxb-wrong' } })).status).toBe(401);
  });

  it('a download that fails still becomes an action, with a note naming the file; the warning carries no token', async () => {
    await ready();
    h!.slack.pushMessage('see attached', {
      user: 'U0BOB0001',
      files: [
        { name: 'gone.png', data: Buffer.from('x'), mimetype: 'image/png', status: 404 },
        { name: 'ok.txt', data: Buffer.from('fine'), mimetype: 'text/plain' },
        { name: 'huge.mov', data: Buffer.from('y'), mimetype: 'video/quicktime', size: 300 * 1024 * 1024 },
      ],
    });
    const action = await waitFor(() => h!.actions()[0], 'the action');
    expect(action.task).toMatch(/^see attached\n\[file shared on Slack: gone\.png \(image\/png\); it could not be downloaded: HTTP 404\]/);
    const ok = /\[attachment: ok\.txt \(document\) at (\S+)\]/.exec(action.task)?.[1];
    expect(readFileSync(ok!, 'utf8')).toBe('fine');
    // Over the 20 MB cap (Telegram's, for chatA): not even requested.
    expect(action.task).toContain(
      '[file shared on Slack: huge.mov (video/quicktime); it could not be downloaded: 300.0 MB is over the 20.0 MB limit]',
    );
    expect(h!.slack.fileDownloads.map((d) => d.status)).toEqual([404, 200]);
    expect(readdirSync(join(h!.home, 'downloads', 'chatD'))).toHaveLength(1);
    const warnings = h!.logs.recent({ limit: 1000 }).filter((e) => e.level === 'warn' && /gone\.png/.test(e.message));
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(h!.logs.recent({ limit: 1000 }))).not.toContain(h!.slack.botToken);
    expect(h!.actions()).toHaveLength(1);
  });

  it('with auto-reply off, files of a message the bot will ignore are not fetched; a mention fetches them', async () => {
    await ready({ chatDAutoReplyEnabled: false });
    const ignored = h!.slack.pushMessage('chatter', { files: [{ name: 'noise.bin', data: Buffer.from('n') }] });
    h!.slack.pushMessage(`<@${h!.slack.botUserId}> read this`, { files: [{ name: 'doc.txt', data: Buffer.from('d') }] });
    const action = await waitFor(() => h!.actions()[0], 'the action');
    expect(action.task).toMatch(/^read this\n\[attachment: doc\.txt \(document\) at /);
    expect(h!.slack.acked).toContain(ignored.envelopeId);
    expect(h!.slack.fileDownloads.map((d) => d.path)).toEqual([expect.stringMatching(/\/doc\.txt$/)]);
    expect(h!.actions()).toHaveLength(1);
  });
});
