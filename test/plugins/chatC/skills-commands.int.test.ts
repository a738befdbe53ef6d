/**
 * chatC skills (send_chatC of SPEC, and the shared send_file and react through the messaging plugin), inbound
 * attachments, and the slash commands, against the loopback Discord.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Action, Actor } from '../../../sdk/index.js';
import { startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
let openai: ScriptedServer | undefined;
afterEach(async () => {
  await h?.close();
  await openai?.close();
  h = undefined;
  openai = undefined;
});

const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };
const run = (name: string, args: unknown, action?: Action) => h!.kernel.execute(name, args, OPERATOR, action ? { action } : {});

async function ready(o: { plugins?: string[]; config?: Record<string, unknown> } = {}) {
  h = await bootChatC({ runAgent: false, ...o });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

describe('chatC skills', () => {
  it('send_chatC sends Discord Markdown in parts of at most 2,000, validates channel_id, and sends a repeated call of an action once', async () => {
    await ready();
    const cid = h!.dc.channelId;
    const r = await run('send_chatC', { channel_id: cid, message: '# Title\n\n*hi* ~~old~~' });
    expect(r.success).toBe(true);
    const out = JSON.parse(r.result) as { messageId: string; messageIds: string[] };
    expect(h!.dc.sent.find((m) => m.id === out.messageId)).toMatchObject({
      channel_id: cid,
      content: expect.stringContaining('*hi* ~~old~~'),
    });
    const long = Array.from({ length: 12 }, (_, i) => `Part ${i} ${'word '.repeat(60)}`).join('\n\n');
    const r2 = JSON.parse((await run('send_chatC', { channel_id: cid, message: long })).result) as { messageIds: string[] };
    expect(r2.messageIds.length).toBeGreaterThan(1);
    for (const id of r2.messageIds) expect(h!.dc.sent.find((m) => m.id === id)!.content.length).toBeLessThanOrEqual(2000);
    for (const bad of ['12345', 'general', '1234567890123456789012', '#300000000000000003']) {
      const b = await run('send_chatC', { channel_id: bad, message: 'x' });
      expect(b.success).toBe(false);
      expect(b.result).toMatch(/must be 17 to 20 digits/);
    }
    // A user id is not a channel: the direct-message channel with that user is opened and used.
    const dm = JSON.parse((await run('send_chatC', { channel_id: USER, message: 'psst' })).result) as { messageId: string };
    expect(h!.dc.sent.find((m) => m.id === dm.messageId)).toMatchObject({ channel_id: `5${USER.slice(1)}`, content: 'psst' });
    expect(h!.dc.callsOf('POST /users/@me/channels')).toHaveLength(1);
    const action = await h!.kernel.queue.push({ task: 't', source: 'chatC', metadata: { replyTo: { chatId: cid, messageId: '1' } } });
    const a1 = await run('send_chatC', { channel_id: cid, message: 'once' }, action);
    const before = h!.dc.sent.length;
    const a2 = await run('send_chatC', { channel_id: cid, message: 'once' }, action);
    expect(JSON.parse(a2.result)).toEqual(JSON.parse(a1.result));
    expect(h!.dc.sent.length).toBe(before);
  });

  it('send_file finds chatC by a 17-20 digit id and uploads the file as a multipart attachment', async () => {
    await ready({ plugins: ['messaging'] });
    const file = join(h!.home, 'report.txt');
    writeFileSync(file, 'report');
    const r = await run('send_file', { jid: h!.dc.channelId, path: file, caption: 'the report' });
    expect(r.success).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ channel: 'chatC', to: h!.dc.channelId });
    const post = h!.dc.callsOf('POST /channels/:id/messages').at(-1)!;
    expect(post.files).toEqual([{ name: 'report.txt', size: 6 }]);
    expect(post.body).toMatchObject({ content: 'the report', enforce_nonce: true, attachments: [{ id: 0, filename: 'report.txt' }] });
    expect(h!.dc.sent.at(-1)!.attachments[0]).toMatchObject({ filename: 'report.txt', size: 6 });
  });

  it('send_voice_note goes to Discord as an audio attachment, send_image as an image attachment (real providerA)', async () => {
    openai = await startOpenAIFake();
    await ready({ plugins: ['messaging', 'providerA'], config: { providerAApiKey: 'sk-test-123', providerABaseUrl: openai.url } });
    const cid = h!.dc.channelId;
    const v = await run('send_voice_note', { jid: cid, text: 'Hello there', voice: 'nova' });
    expect(v.success, v.result).toBe(true);
    expect(JSON.parse(v.result)).toMatchObject({ channel: 'chatC', kind: 'audio', provider: 'providerA' });
    const audio = h!.dc.callsOf('POST /channels/:id/messages').at(-1)!;
    expect(audio.files).toHaveLength(1);
    expect(audio.files[0]!.name).toMatch(/^voice-.*\.mp3$/);
    expect(audio.files[0]!.size).toBeGreaterThan(0);
    const i = await run('send_image', { jid: cid, prompt: 'a lighthouse', caption: 'for you' });
    expect(i.success, i.result).toBe(true);
    const image = h!.dc.callsOf('POST /channels/:id/messages').at(-1)!;
    expect(image.body.content).toBe('for you');
    expect(image.files[0]!.name).toMatch(/^image-.*\.png$/);
  });

  it('react puts a native reaction on the message of the action', async () => {
    await ready({ plugins: ['messaging'] });
    const m = h!.dc.pushMessage('nice', { userId: USER });
    const action = await waitFor(() => h!.actions()[0], 'action');
    const r = await run('react', { message_id: m.id, emoji: 'fire' }, action);
    expect(r.success).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ channel: 'chatC', native: true, reacted: '\u{1F525}' });
    const put = h!.dc.callsOf('PUT /channels/:id/messages/:id/reactions/:emoji/@me')[0]!;
    expect(decodeURIComponent(put.path)).toBe(`/channels/${h!.dc.channelId}/messages/${m.id}/reactions/\u{1F525}/@me`);
    expect(h!.dc.sent.filter((x) => x.content === '\u{1F525}')).toHaveLength(0);
  });

  it('an inbound attachment is saved under downloads/chatC and named in the task', async () => {
    await ready();
    h!.dc.pushMessage('look at this', {
      userId: USER,
      attachment: { filename: 'photo.png', data: Buffer.from('PNGDATA'), contentType: 'image/png' },
    });
    const a = await waitFor(() => h!.actions()[0], 'action');
    const path = /\[attachment: photo\.png \(photo\) at (\S+)\]/.exec(a.task)?.[1];
    expect(path).toContain(join(h!.home, 'downloads', 'chatC'));
    expect(readFileSync(path!, 'utf8')).toBe('PNGDATA');
  });

  it('an attachment that cannot be downloaded leaves a note in the task instead of losing the message', async () => {
    await ready();
    h!.dc.pushMessage('see this', {
      userId: USER,
      attachment: { filename: 'gone.pdf', data: Buffer.from('x'), contentType: 'application/pdf', missing: true },
    });
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a.task).toBe('see this\n[file shared on Discord: gone.pdf (application/pdf); it could not be downloaded: HTTP 404]');
    expect(h!.logs.recent({ level: 'warn' }).some((e) => /could not download the file "gone\.pdf"/.test(e.message))).toBe(true);
  });
});

describe('chatC slash commands', () => {
  it('registers status, queue, cancel, reset, models, help; answers them; reset only for admins; cancel own actions', async () => {
    await ready();
    await waitFor(() => h!.dc.callsOf('PUT /applications/:id/commands').length === 1, 'commands registered');
    expect(h!.dc.commands.map((c) => c.name)).toEqual(['status', 'queue', 'cancel', 'reset', 'models', 'help']);
    const answer = async (name: string, userId: string) => {
      const { id } = h!.dc.pushCommand(name, { userId });
      const body = await waitFor(() => h!.dc.interactionEdits.get(id), `answer to /${name}`);
      // Deferred first (type 5), then the original response edited with the answer.
      expect(h!.dc.interactionReplies.get(id)).toEqual({ type: 5 });
      return String(body.content);
    };
    expect(await answer('help', USER)).toMatch(/\/status/);
    expect(await answer('status', USER)).toMatch(/Discord: connected as keel-test, 1 server\(s\)[\s\S]*Queue:/);
    expect(await answer('models', USER)).toMatch(/fake-model/);
    // No agent runs here, so a message stays pending: queue lists it, cancel removes it.
    h!.dc.pushMessage('long job', { userId: USER });
    await waitFor(() => h!.actions().some((a) => a.task === 'long job'), 'queued');
    expect(await answer('queue', USER)).toMatch(/long job/);
    expect(await answer('reset', USER)).toMatch(/Only an admin/);
    expect(await answer('cancel', USER)).toMatch(/Cancelled/);
    expect(h!.actions().some((a) => a.task === 'long job' && a.status === 'pending')).toBe(false);
    h!.dc.pushMessage('another', { userId: ADMIN });
    await waitFor(() => h!.actions().some((a) => a.task === 'another'), 'queued');
    expect(await answer('reset', ADMIN)).toMatch(/Reset: 1 action/);
    // Slash commands never become actions.
    expect(h!.actions().some((a) => a.task.startsWith('/'))).toBe(false);
  });
});
