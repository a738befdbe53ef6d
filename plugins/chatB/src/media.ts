/**
 * WhatsApp media, both ways. In: what a recorded message needs to fetch its file later (the media key and where it
 * lies; WhatsApp's media servers keep the encrypted file, the key comes with the message), fetched and decrypted by
 * baileys when the message is handled, saved under `$KEEL_HOME/downloads/chatB/`. Out: a file as an image, video,
 * voice note, audio or document message, by its kind and extension.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AnyMessageContent, proto } from '@whiskeysockets/baileys';
import { downloadContentFromMessage, getContentType, normalizeMessageContent } from '@whiskeysockets/baileys';
import { DOWNLOAD_LIMIT_BYTES, safeFileName } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger, type OutboundFile } from '../../../sdk/index.js';

const coded = errorsFor('chatB');

export type MediaKind = 'image' | 'video' | 'audio' | 'document' | 'sticker';

/** A recorded message's file: enough to fetch and decrypt it later (JSON: binary fields in base64). */
export interface WaMedia {
  kind: MediaKind;
  mimetype?: string;
  fileName?: string;
  mediaKey: string;
  directPath?: string;
  url?: string;
  fileLength?: number;
  ptt?: boolean;
}

const KINDS: Record<string, MediaKind> = {
  imageMessage: 'image',
  videoMessage: 'video',
  audioMessage: 'audio',
  documentMessage: 'document',
  documentWithCaptionMessage: 'document',
  stickerMessage: 'sticker',
};

const b64 = (v: Uint8Array | string | null | undefined) =>
  v ? (typeof v === 'string' ? v : Buffer.from(v).toString('base64')) : undefined;
const num = (v: unknown) => (v == null ? undefined : typeof v === 'number' ? v : Number(String(v)));

/** The file a message carries, if any (its key and place, not its bytes). */
export function mediaOf(message: proto.IMessage | null | undefined): WaMedia | undefined {
  const m = normalizeMessageContent(message);
  const type = m ? getContentType(m) : undefined;
  const kind = type ? KINDS[type] : undefined;
  if (!m || !type || !kind) return undefined;
  const part = (m as Record<string, proto.Message.IDocumentMessage & proto.Message.IAudioMessage>)[type];
  const key = b64(part?.mediaKey);
  if (!part || !key || (!part.directPath && !part.url)) return undefined;
  const length = num(part.fileLength);
  return {
    kind,
    mediaKey: key,
    ...(part.mimetype ? { mimetype: part.mimetype } : {}),
    ...(part.fileName ? { fileName: part.fileName } : {}),
    ...(part.directPath ? { directPath: part.directPath } : {}),
    ...(part.url ? { url: part.url } : {}),
    ...(length !== undefined && Number.isFinite(length) ? { fileLength: length } : {}),
    ...(part.ptt ? { ptt: true } : {}),
  };
}

const EXT: Record<string, string> = {
  'image/jpeg': '.jpg',
  'image/png': '.png',
  'image/webp': '.webp',
  'video/mp4': '.mp4',
  'audio/ogg': '.ogg',
  'audio/mpeg': '.mp3',
  'audio/mp4': '.m4a',
  'application/pdf': '.pdf',
};

/**
 * Fetches and decrypts `media` to `downloads/chatB/<prefix>_<name>` (mode 0600, at most `DOWNLOAD_LIMIT_BYTES`).
 * Returns the attachment, or a note for the task when it could not be saved (the message is never lost for it).
 */
export async function saveMedia(
  media: WaMedia,
  o: { home: string; prefix: string; log: Logger },
): Promise<{ attachment?: { path: string; name: string; mime?: string; kind: string }; note?: string }> {
  const mime = media.mimetype?.split(';')[0]?.trim();
  const name = safeFileName(media.fileName ?? `${media.ptt ? 'voice' : media.kind}${(mime && EXT[mime]) || ''}`);
  const dir = join(o.home, 'downloads', 'chatB');
  const path = join(dir, `${safeFileName(o.prefix)}_${name}`);
  try {
    if (media.fileLength !== undefined && media.fileLength > DOWNLOAD_LIMIT_BYTES)
      throw coded('KEEL_E_INVALID_ARGUMENT', `it is over the ${DOWNLOAD_LIMIT_BYTES / 1024 / 1024} MB limit`);
    mkdirSync(dir, { recursive: true });
    const stream = await downloadContentFromMessage(
      {
        mediaKey: Buffer.from(media.mediaKey, 'base64'),
        ...(media.directPath ? { directPath: media.directPath } : {}),
        ...(media.url ? { url: media.url } : {}),
      },
      media.kind,
    );
    let size = 0;
    stream.on('data', (d: Buffer) => {
      size += d.length;
      if (size > DOWNLOAD_LIMIT_BYTES) stream.destroy(new Error(`it is over the ${DOWNLOAD_LIMIT_BYTES / 1024 / 1024} MB limit`));
    });
    await pipeline(stream, createWriteStream(path, { mode: 0o600 }));
    const kind =
      media.kind === 'image' || media.kind === 'sticker' ? 'photo' : media.kind === 'audio' ? (media.ptt ? 'voice' : 'audio') : 'document';
    return { attachment: { path, name, kind, ...(mime ? { mime } : {}) } };
  } catch (e) {
    rmSync(path, { force: true });
    const why = errorMessage(e);
    o.log.warn(`chatB: could not download the file "${name}" of message ${o.prefix}: ${why}`);
    return { note: `[file shared on WhatsApp: ${name}${mime ? ` (${mime})` : ''}; it could not be downloaded: ${why}]` };
  }
}

const MIME: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.mp4': 'video/mp4',
  '.ogg': 'audio/ogg; codecs=opus',
  '.oga': 'audio/ogg; codecs=opus',
  '.opus': 'audio/ogg; codecs=opus',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.wav': 'audio/wav',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.zip': 'application/zip',
};

/** One outbound file as WhatsApp content: photo → image, voice (Ogg Opus only) → voice note, audio, video, else a document. */
export function fileContent(f: { path: string; caption?: string; kind?: OutboundFile['kind'] }): AnyMessageContent {
  const ext = extname(f.path).toLowerCase();
  const mimetype = MIME[ext] ?? 'application/octet-stream';
  const caption = f.caption ? { caption: f.caption } : {};
  const image = f.kind === 'photo' || (!f.kind && /^image\/(jpeg|png|webp)$/.test(mimetype));
  if (image) return { image: { url: f.path }, mimetype, ...caption };
  if (!f.kind && mimetype === 'video/mp4') return { video: { url: f.path }, mimetype, ...caption };
  if (f.kind === 'voice' || f.kind === 'audio' || (!f.kind && mimetype.startsWith('audio/'))) {
    // WhatsApp plays a voice note only in Ogg Opus; anything else goes as an audio file.
    const ptt = f.kind === 'voice' && mimetype.startsWith('audio/ogg');
    return { audio: { url: f.path }, mimetype, ...(ptt ? { ptt: true } : {}) };
  }
  return { document: { url: f.path }, mimetype, fileName: basename(f.path), ...caption };
}
