/**
 * messaging plugin: send_file, send_voice_note, send_image and react for every channel, through `channel:<name>`.
 * Speech and images come from providerA or providerB (the first configured one that offers it).
 */
import { errorCodeOf, errorsFor, pluginError } from '../../sdk/errors.js';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import {
  definePlugin,
  type OutboundFile,
  type PluginContext,
  type ProviderCapability,
  type SendOptions,
  type SentMessage,
  type SkillCallContext,
} from '../../sdk/index.js';
import manifest from './manifest.js';
import { channelFor, detectChannel } from './src/detect.js';
import { sendableFile } from './src/sendable.js';

const coded = errorsFor('messaging');

const EMOJI: Record<string, string> = {
  thumbs_up: '\u{1F44D}',
  love: '\u2764\uFE0F',
  fire: '\u{1F525}',
  laugh: '\u{1F602}',
  check: '\u2705',
  eyes: '\u{1F440}',
  thinking: '\u{1F914}',
};
const VOICE_NOTE_CHANNELS = new Set(['chatA', 'chatB']);
const IMAGE_EXT = new Set(['.jpg', '.jpeg', '.png', '.gif', '.webp']);
const AUDIO_EXT = new Set(['.mp3', '.m4a', '.ogg', '.oga', '.wav', '.opus']);
const EXT: Record<string, string> = {
  'audio/mpeg': '.mp3',
  'audio/ogg': '.ogg',
  'audio/wav': '.wav',
  'audio/opus': '.opus',
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/webp': '.webp',
};

/** The same call within one action is delivered once, even when the action runs again after a crash. */
function keyOf(call: SkillCallContext, skill: string, args: unknown): SendOptions {
  if (!call.action) return {};
  return { idempotencyKey: `${call.action.id}:${skill}:${createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 16)}` };
}

/** Tells the `messageDelivered` hook (the action's timeline) what reached the platform. */
function delivered(ctx: PluginContext, call: SkillCallContext, channel: string, to: string, sent: SentMessage): SentMessage {
  try {
    ctx.emit('messageDelivered', {
      channel,
      to,
      messageId: sent.messageId,
      messageIds: sent.messageIds ?? [sent.messageId],
      ...(call.action ? { actionId: call.action.id } : {}),
    });
  } catch {
    // A record of what happened never changes it.
  }
  return sent;
}

function provider(ctx: PluginContext, want: 'speak' | 'generateImage'): ProviderCapability {
  const tried: string[] = [];
  for (const id of ['providerA', 'providerB']) {
    const p = ctx.use(`provider:${id}`);
    if (!p || typeof p[want] !== 'function') continue;
    const c = p.configured();
    if (c.ok) return p;
    tried.push(`${id}: set ${c.missing}`);
  }
  const what = want === 'speak' ? 'Speech' : 'Image generation';
  throw coded(
    'KEEL_E_NOT_CONFIGURED',
    `${what} needs providerA or providerB configured${tried.length ? ` (${tried.join('; ')})` : ' (set providerAApiKey or providerBApiKey)'}.`,
  );
}

function saveMedia(ctx: PluginContext, kind: string, mimeType: string, base64: string): string {
  const dir = join(ctx.home, 'downloads', 'outbound');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${kind}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}${EXT[mimeType] ?? '.bin'}`);
  writeFileSync(path, Buffer.from(base64, 'base64'), { mode: 0o600 });
  return path;
}

export default definePlugin({
  manifest,
  setup(ctx) {
    ctx.skills.register('send_file', async (args, call) => {
      // Outside downloads only for an admin (src/sendable.ts); the resolved path is what goes out.
      const path = await sendableFile(ctx, call, args.path);
      const name = detectChannel(args.channel, call.action, args.jid);
      const ext = extname(path).toLowerCase();
      const file: OutboundFile = {
        path,
        kind: IMAGE_EXT.has(ext) ? 'photo' : AUDIO_EXT.has(ext) ? 'audio' : 'document',
        ...(args.caption ? { caption: args.caption } : {}),
      };
      const sent = delivered(
        ctx,
        call,
        name,
        args.jid,
        await channelFor(ctx, name).send(args.jid, { files: [file] }, keyOf(call, 'send_file', args)),
      );
      return { channel: name, to: args.jid, messageId: sent.messageId };
    });

    ctx.skills.register('send_voice_note', async (args, call) => {
      if (args.text.length > 4096) throw coded('KEEL_E_INVALID_ARGUMENT', 'text is limited to 4096 characters.');
      const name = detectChannel(args.channel, call.action, args.jid);
      const channel = channelFor(ctx, name);
      const p = provider(ctx, 'speak');
      if (args.voice && p.voices?.length && !p.voices.includes(args.voice))
        throw coded('KEEL_E_INVALID_ARGUMENT', `Voice "${args.voice}" is not one of ${p.id}'s: ${p.voices.join(', ')}.`);
      const kind = VOICE_NOTE_CHANNELS.has(name) ? 'voice' : 'audio';
      // A voice note wants Ogg Opus (WhatsApp plays nothing else as one); elsewhere MP3 plays everywhere.
      const audio = await p.speak!({
        text: args.text,
        ...(args.voice ? { voice: args.voice } : {}),
        ...(kind === 'voice' ? { format: 'opus' as const } : {}),
        signal: call.signal,
      });
      const path = saveMedia(ctx, 'voice', audio.mimeType, audio.base64);
      const sent = delivered(
        ctx,
        call,
        name,
        args.jid,
        await channel.send(args.jid, { files: [{ path, kind }] }, keyOf(call, 'send_voice_note', args)),
      );
      return { channel: name, to: args.jid, messageId: sent.messageId, provider: p.id, kind };
    });

    ctx.skills.register('send_image', async (args, call) => {
      const name = detectChannel(args.channel, call.action, args.jid);
      const channel = channelFor(ctx, name);
      const p = provider(ctx, 'generateImage');
      const image = await p.generateImage!({
        prompt: args.prompt,
        size: args.size ?? '1024x1024',
        quality: args.quality ?? 'medium',
        signal: call.signal,
      });
      const path = saveMedia(ctx, 'image', image.mimeType, image.base64);
      const sent = delivered(
        ctx,
        call,
        name,
        args.jid,
        await channel.send(
          args.jid,
          { files: [{ path, kind: 'photo', ...(args.caption ? { caption: args.caption } : {}) }] },
          keyOf(call, 'send_image', args),
        ),
      );
      return { channel: name, to: args.jid, messageId: sent.messageId, provider: p.id, path };
    });

    ctx.skills.register('react', async (args, call) => {
      const emoji = EMOJI[args.emoji.toLowerCase()] ?? args.emoji;
      const replyTo = call.action?.metadata.replyTo;
      const name = args.channel ?? (call.action ? detectChannel(undefined, call.action, '') : undefined);
      const chat = args.chat_id ?? (replyTo?.chatId != null ? String(replyTo.chatId) : undefined);
      if (!name || !chat)
        throw coded('KEEL_E_INVALID_ARGUMENT', 'react needs channel and chat_id when the current action did not come from a chat.');
      const channel = channelFor(ctx, name);
      // A channel that reacts natively through its capability (chatD) keeps the platform's message id as a string.
      if (channel.react) {
        const r = await channel.react(chat, args.message_id, emoji);
        if (r.native)
          return {
            channel: name,
            chatId: chat,
            messageId: args.message_id,
            reacted: emoji,
            native: true,
            ...(r.reaction ? { reaction: r.reaction } : {}),
          };
      }
      // A channel with its own react skill (chatA_react: native reaction, else the emoji as a reply) does it best.
      if (ctx.skills.list().some((s) => s.name === `${name}_react`)) {
        const r = await ctx.skills.execute(`${name}_react`, { chatId: chat, messageId: Number(args.message_id), emoji }, call.actor, {
          ...(call.action ? { action: call.action } : {}),
          signal: call.signal,
        });
        if (!r.success) throw pluginError(errorCodeOf(r) ?? 'KEEL_E_SKILL_FAILED', r.result, { plugin: r.plugin ?? 'messaging' });
        return JSON.parse(r.result) as unknown;
      }
      const sent = delivered(
        ctx,
        call,
        name,
        chat,
        await channel.send(chat, emoji, { replyToMessageId: args.message_id, format: 'plain', ...keyOf(call, 'react', args) }),
      );
      return {
        channel: name,
        chatId: chat,
        messageId: sent.messageId,
        reacted: emoji,
        native: false,
        note: 'Native reactions are unavailable on this channel; the emoji was sent as a reply instead.',
      };
    });
  },
});
