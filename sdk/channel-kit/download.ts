/**
 * Saving a file someone sent to a chat: under `$KEEL_HOME/downloads/<channel>/`, named `<prefix>_<safe name>`
 * (the prefix is the chat and message, so a redelivery or a re-run after a crash overwrites the same file), at most
 * `DOWNLOAD_LIMIT_BYTES` (Telegram's Bot API serves chatA nothing bigger, so every channel has the same cap), and
 * never failing the message: a download that fails becomes a note in the task instead of a lost message.
 */
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { errorMessage } from '../errors.js';
import { withLinkedSignal } from '../retry.js';
import type { Logger } from '../types.js';

/**
 * The largest inbound file any channel saves: 20 MB, what Telegram's Bot API hands chatA.
 * @example if (size > DOWNLOAD_LIMIT_BYTES) note('too big');
 */
export const DOWNLOAD_LIMIT_BYTES = 20 * 1024 * 1024;

/**
 * A platform file name reduced to letters, digits, `_`, `.` and `-` (no separators, nothing hidden), at most 100
 * characters, never empty.
 * @example safeFileName('../../etc/passwd') // '_.._etc_passwd': no separator left, so it stays in the download folder
 */
export function safeFileName(name: string | undefined, fallback = 'file'): string {
  const s = (name ?? '')
    .replace(/[^\w.-]+/g, '_')
    .replace(/^[.-]+/, '')
    .slice(-100);
  return s || fallback;
}

/**
 * What to fetch and where to put it.
 * @example const r: DownloadRequest = { url, home: ctx.home, channel: 'chatC', prefix: `${channelId}_${messageId}`, name: 'photo.png' };
 */
export interface DownloadRequest {
  url: string;
  /** `downloads/<channel>` under the Keel home. */
  home: string;
  channel: string;
  /** Makes the name unique per message (chat and message id), so a re-run overwrites instead of adding. */
  prefix: string;
  name: string | undefined;
  /** Sent with the request (e.g. Slack's `Authorization: Bearer`); never logged. */
  headers?: Record<string, string>;
  /** The size the platform announced, checked before anything is fetched. */
  size?: number;
  signal?: AbortSignal;
  /** Whole download time limit (default 60 s). */
  timeoutMs?: number;
}

/**
 * Fetches one file to `downloads/<channel>/<prefix>_<safe name>` (mode 0600). Throws an Error with a short reason
 * (HTTP status, "is over the 20 MB limit") that never contains the request headers; nothing is left behind.
 * @example const path = await downloadTo({ url, home: ctx.home, channel: 'chatD', prefix: `${channel}_${ts}`, name: f.name });
 */
export async function downloadTo(r: DownloadRequest): Promise<string> {
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
  const limit = DOWNLOAD_LIMIT_BYTES;
  if (!/^https?:\/\//i.test(r.url)) throw new Error('the download address is not http(s)');
  if (r.size !== undefined && r.size > limit) throw new Error(`${mb(r.size)} is over the ${mb(limit)} limit`);
  const timeout = AbortSignal.timeout(r.timeoutMs ?? 60_000);
  // r.signal is often a plugin's own (long-lived): linked for this download only
  return withLinkedSignal([r.signal, timeout], async (signal) => {
    const res = await fetch(r.url, { headers: r.headers ?? {}, signal });
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`HTTP ${res.status}`);
    }
    const announced = Number(res.headers.get('content-length') ?? NaN);
    if (announced > limit) {
      await res.body.cancel().catch(() => undefined);
      throw new Error(`${mb(announced)} is over the ${mb(limit)} limit`);
    }
    const dir = join(r.home, 'downloads', r.channel);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${r.prefix}_${safeFileName(r.name)}`);
    let seen = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        seen += chunk.length;
        done(seen > limit ? new Error(`the file is over the ${mb(limit)} limit`) : null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(res.body as never), cap, createWriteStream(path, { mode: 0o600 }), { signal });
    } catch (e) {
      rmSync(path, { force: true });
      throw new Error(errorMessage(e));
    }
    return path;
  });
}

/**
 * One file of a message, as the platform describes it.
 * @example const f: InboundFile = { url: a.url, name: a.filename, mime: a.content_type, size: a.size };
 */
export interface InboundFile {
  url: string | undefined;
  name: string | undefined;
  mime?: string | undefined;
  size?: number | undefined;
}

/**
 * Downloads every file of a message: the saved ones as attachments (`receive` names each in the task), the ones
 * that could not be saved as notes to add to the text (the message itself is never dropped for a file), with one
 * warning each in the log (reason only: no URL query, no header).
 * @example const { attachments, notes } = await saveInboundFiles(files, { home, channel: 'chatD', prefix, log, headers });
 */
export async function saveInboundFiles(
  files: InboundFile[],
  o: {
    home: string;
    channel: string;
    prefix: string;
    log: Logger;
    platform: string;
    headers?: (url: string) => Record<string, string> | undefined;
    signal?: AbortSignal;
  },
): Promise<{ attachments: Array<{ path: string; name: string; mime?: string; kind: string }>; notes: string[] }> {
  const attachments: Array<{ path: string; name: string; mime?: string; kind: string }> = [];
  const notes: string[] = [];
  for (const [i, f] of files.entries()) {
    const name = f.name ?? `file${i + 1}`;
    try {
      if (!f.url) throw new Error('the platform gave no download address');
      const headers = o.headers?.(f.url);
      const path = await downloadTo({
        url: f.url,
        home: o.home,
        channel: o.channel,
        // Two files of one message may share a name.
        prefix: files.length > 1 ? `${o.prefix}_${i + 1}` : o.prefix,
        name,
        ...(headers ? { headers } : {}),
        ...(f.size !== undefined ? { size: f.size } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
      });
      attachments.push({ path, name, kind: f.mime?.startsWith('image/') ? 'photo' : 'document', ...(f.mime ? { mime: f.mime } : {}) });
    } catch (e) {
      if (o.signal?.aborted) throw e;
      const why = errorMessage(e);
      o.log.warn(`${o.channel}: could not download the file "${name}" of message ${o.prefix}: ${why}`);
      notes.push(`[file shared on ${o.platform}: ${name}${f.mime ? ` (${f.mime})` : ''}; it could not be downloaded: ${why}]`);
    }
  }
  return { attachments, notes };
}
