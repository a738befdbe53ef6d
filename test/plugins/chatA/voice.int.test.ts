/**
 * chatA voice notes: downloaded through getFile from the loopback Bot API, transcribed by the real providerA
 * (the `openai` client against the loopback OpenAI fake), the transcript in the task inside the untrusted marker.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errorReply, FAKE_TRANSCRIPT, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
let openai: ScriptedServer | undefined;
afterEach(async () => {
  await h?.close();
  await openai?.close();
  h = undefined;
  openai = undefined;
});

const KEY = 'sk-test-voice-0123456789';

async function ready(withProvider: boolean) {
  openai = await startOpenAIFake();
  h = await bootChatA({
    runAgent: false,
    plugins: ['providerA'],
    config: withProvider ? { providerAApiKey: KEY, providerABaseUrl: openai.url } : {},
  });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

function pushVoice(messageId: number, fileId: string, audio?: true) {
  const f = { file_id: fileId, duration: 2, mime_type: 'audio/ogg' };
  h!.tg.push({
    message: {
      message_id: messageId,
      date: 0,
      chat: { id: 9, type: 'private' },
      from: { id: 9, is_bot: false, first_name: 'A' },
      ...(audio ? { audio: f } : { voice: f }),
    },
  });
}

describe('chatA voice notes', () => {
  it('with providerA configured: the transcript reaches the task inside the untrusted marker; the audio is saved', async () => {
    await ready(true);
    h!.tg.files.set('vo1', Buffer.from('OggS-voice-bytes'));
    pushVoice(51, 'vo1');
    const a = await waitFor(() => h!.actions()[0], 'action');
    const saved = join(h!.home, 'downloads', 'chatA', '9_51_voice.ogg');
    expect(existsSync(saved)).toBe(true);
    expect(readFileSync(saved, 'utf8')).toBe('OggS-voice-bytes');
    expect(a.task).toContain(`<untrusted_transcript kind="voice">\n${FAKE_TRANSCRIPT}\n</untrusted_transcript>`);
    expect(a.task).toContain(`[attachment: ${saved} (voice)`);
    expect(a.task).not.toMatch(/not transcribed/);
    // The voice note went up to the provider as the user recorded it.
    const up = openai!.requests.find((r) => r.url === '/v1/audio/transcriptions')!;
    expect(up.body.fields.model).toBe('whisper-1');
    expect(up.body.files.file.data.toString()).toBe('OggS-voice-bytes');
    // A non-admin's note stays untrusted as any of their messages.
    expect(a.metadata.untrusted).toBe(true);
  });

  it('a transcription that fails keeps the message: a note with the saved path, a warning without the key', async () => {
    await ready(true);
    openai!.script({ ...errorReply(400, 'Invalid file format.'), match: '/audio/transcriptions' });
    h!.tg.files.set('au1', Buffer.from('ID3-audio'));
    pushVoice(52, 'au1', true);
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a.task).toMatch(
      /\[audio note received; transcription failed, so it was not transcribed\. The audio is saved at .*9_52_audio\.ogg\]/,
    );
    const warned = h!.logs.recent({ limit: 500 }).filter((l) => /Transcription of a audio note failed/.test(l.message));
    expect(warned).toHaveLength(1);
    expect(JSON.stringify(h!.logs.recent({ limit: 500 }))).not.toContain(KEY);
  });

  it('without a provider: the note says it was not transcribed, and nothing is uploaded', async () => {
    await ready(false);
    h!.tg.files.set('vo2', Buffer.from('OggS'));
    pushVoice(53, 'vo2');
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a.task).toMatch(/\[voice note received; it was not transcribed because no speech-to-text provider is configured\]/);
    expect(openai!.requests).toHaveLength(0);
  });

  it('a file that cannot be downloaded keeps the message: a note instead of the file, a warning without the token', async () => {
    await ready(false);
    // The fake knows no file "gone": getFile fails as Telegram's does for an expired file id.
    h!.tg.push({
      message: {
        message_id: 53,
        date: 0,
        chat: { id: 9, type: 'private' },
        from: { id: 9, is_bot: false, first_name: 'A' },
        caption: 'see the report',
        document: { file_id: 'gone', file_name: 'report.pdf', mime_type: 'application/pdf' },
      },
    });
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a.task).toContain('see the report');
    expect(a.task).toMatch(/\[document sent on Telegram: report\.pdf; it could not be downloaded: .+\]/);
    expect(existsSync(join(h!.home, 'downloads', 'chatA', '9_53_report.pdf'))).toBe(false);
    const logs = JSON.stringify(h!.logs.recent({ limit: 500 }));
    expect(logs).toContain('could not download the document');
    expect(logs).not.toContain(h!.tg.token);
  });
});
