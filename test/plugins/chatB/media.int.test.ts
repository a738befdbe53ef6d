/**
 * chatB media through the real baileys and the loopback WhatsApp's media server (encrypted upload and download, as
 * WhatsApp's media servers do): a file someone sends is saved and handed to the agent; send_file and voice notes
 * go out as WhatsApp media, byte for byte.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_OGG_OPUS, FAKE_TRANSCRIPT, type ScriptedServer, startOpenAIFake } from '../../fakes/openai-server.js';
import { tmp, waitFor } from '../../helpers.js';
import { ADMIN, ADMIN_JID, bootChatB, type ChatBHarness, runSkill, USER, whenConnected } from './harness.js';

let h: ChatBHarness | undefined;
let openai: ScriptedServer | undefined;
afterEach(async () => {
  await h?.close();
  await openai?.close();
  h = undefined;
  openai = undefined;
});

const run = (name: string, args: unknown) => runSkill(h!, name, args);
const connected = () => whenConnected(h!);
// A tiny PNG (1x1, red) and a small PDF-like document.
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae426082',
  'hex',
);

describe('chatB media', () => {
  it('an image someone sends is downloaded, decrypted and saved for the action; chatter’s files are not fetched', async () => {
    h = await bootChatB({ runAgent: false });
    await connected();
    const id = await h.wa.sendMedia(ADMIN, { kind: 'image', data: PNG, mimetype: 'image/png', caption: 'what is this?' });
    const action = await waitFor(() => h!.actions().find((a) => a.metadata.replyTo?.messageId === id), 'queued', 10_000);
    expect(action.task).toContain('what is this?');
    const files = action.metadata.attachments as Array<{ path: string; kind: string; mime?: string }> | undefined;
    expect(files).toHaveLength(1);
    expect(files![0]).toMatchObject({ kind: 'photo', mime: 'image/png' });
    expect(files![0]!.path.startsWith(join(h.home, 'downloads', 'chatB'))).toBe(true);
    expect(readFileSync(files![0]!.path).equals(PNG)).toBe(true);
    // A stranger's file, with auto-reply off, is not fetched at all.
    const other = await h.wa.sendMedia(USER, {
      kind: 'document',
      data: Buffer.from('secret plans'),
      mimetype: 'application/pdf',
      fileName: 'plans.pdf',
    });
    await waitFor(() => h!.outcome(other), 'handled');
    expect(h.outcome(other)).toBe('ignored:auto-reply-off');
    expect(readdirSync(join(h.home, 'downloads', 'chatB')).filter((f) => f.includes('plans'))).toEqual([]);
  });

  it('send_file sends an image, a document and a voice note as WhatsApp media, byte for byte', async () => {
    h = await bootChatB({ runAgent: false, plugins: ['messaging'] });
    await connected();
    const dir = tmp('keel-chatb-files-');
    const png = join(dir, 'chart.png');
    const pdf = join(dir, 'report.pdf');
    const ogg = join(dir, 'hello.ogg');
    writeFileSync(png, PNG);
    writeFileSync(pdf, Buffer.from('%PDF-1.4 tiny'));
    writeFileSync(ogg, Buffer.from('OggS fake opus'));
    for (const [path, caption] of [
      [png, 'the chart'],
      [pdf, 'the report'],
    ] as const) {
      const r = await run('send_file', { jid: ADMIN_JID, path, caption, channel: 'chatB' });
      expect(r.success, r.result).toBe(true);
    }
    const image = await h.wa.waitFor((m) => m.media?.kind === 'image', 10_000);
    expect(image.media).toMatchObject({ mimetype: 'image/png', caption: 'the chart' });
    expect(image.media!.data.equals(PNG)).toBe(true);
    const doc = await h.wa.waitFor((m) => m.media?.kind === 'document', 10_000);
    expect(doc.media).toMatchObject({ fileName: 'report.pdf', mimetype: 'application/pdf', caption: 'the report' });
    expect(doc.media!.data.toString()).toBe('%PDF-1.4 tiny');
    // A voice note (Ogg Opus) through the channel's send, as send_voice_note hands it over.
    await h.channel().send(ADMIN_JID, { files: [{ path: ogg, kind: 'voice' }] });
    const voice = await h.wa.waitFor((m) => m.media?.kind === 'audio', 10_000);
    expect(voice.media).toMatchObject({ ptt: true });
    expect(voice.media!.data.toString()).toBe('OggS fake opus');
    expect(h.wa.sent().every((m) => m.to === ADMIN_JID)).toBe(true);
  });

  it('send_voice_note asks providerA for Ogg Opus and sends a WhatsApp voice note', async () => {
    openai = await startOpenAIFake();
    h = await bootChatB({
      runAgent: false,
      plugins: ['messaging', 'providerA'],
      config: { providerAApiKey: 'sk-test-123', providerABaseUrl: openai.url },
    });
    await connected();
    const r = await run('send_voice_note', { jid: ADMIN_JID, text: 'Hello there', voice: 'nova' });
    expect(r.success, r.result).toBe(true);
    expect(JSON.parse(r.result)).toMatchObject({ channel: 'chatB', kind: 'voice', provider: 'providerA' });
    expect(openai.requests.find((q) => q.url.endsWith('/audio/speech'))!.body).toMatchObject({ response_format: 'opus', voice: 'nova' });
    const note = await h.wa.waitFor((m) => m.media?.kind === 'audio', 10_000);
    expect(note.media).toMatchObject({ ptt: true });
    expect(note.media!.mimetype).toMatch(/^audio\/ogg/);
    expect(note.media!.data.equals(FAKE_OGG_OPUS)).toBe(true);
  });

  it('a voice note is saved and read to the agent as its transcript, marked untrusted', async () => {
    openai = await startOpenAIFake();
    h = await bootChatB({
      runAgent: false,
      plugins: ['providerA'],
      config: { providerAApiKey: 'sk-test-123', providerABaseUrl: openai.url },
    });
    await connected();
    const id = await h.wa.sendMedia(ADMIN, { kind: 'audio', data: FAKE_OGG_OPUS, mimetype: 'audio/ogg; codecs=opus', ptt: true });
    const action = await waitFor(() => h!.actions().find((a) => a.metadata.replyTo?.messageId === id), 'queued', 10_000);
    expect(action.task).toContain('[voice note]');
    expect(action.task).toContain(`<untrusted_transcript kind="voice">\n${FAKE_TRANSCRIPT}\n</untrusted_transcript>`);
    const files = action.metadata.attachments as Array<{ path: string; kind: string }>;
    expect(files[0]).toMatchObject({ kind: 'voice' });
    expect(readFileSync(files[0]!.path).equals(FAKE_OGG_OPUS)).toBe(true);
    expect(openai.requests.some((q) => q.url.endsWith('/audio/transcriptions'))).toBe(true);
  });
});
