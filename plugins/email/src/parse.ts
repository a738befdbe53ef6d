/**
 * One mail from its raw source (mailparser): addresses, threading ids, the text the model reads (HTML reduced
 * to text, quoted history trimmed) and the attachments, saved under `$KEEL_HOME/downloads/email/`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressObject, ParsedMail } from 'mailparser';
import type { HeaderLookup } from './loop-guard.js';

export interface SavedAttachment {
  path: string;
  name: string;
  mime: string;
  size: number;
}

export interface Mail {
  uid: number;
  messageId: string | undefined;
  from: string | undefined;
  fromName: string | undefined;
  /** Number of addresses in From (a mail with several proves no single sender). */
  fromCount: number;
  to: string[];
  subject: string;
  date: Date | undefined;
  inReplyTo: string | undefined;
  references: string[];
  /** Full text (HTML reduced to text when the mail has no text part). */
  text: string;
  header: HeaderLookup;
  attachments: Array<{ name: string; mime: string; size: number; content: Buffer }>;
}

const addresses = (a: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((o) => o.value).filter((v) => v.address);

const ids = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : v ? v.split(/\s+/) : []).map((s) => s.trim()).filter(Boolean);

function headerLookup(p: ParsedMail): HeaderLookup {
  const byName = new Map<string, string[]>();
  for (const { key, line } of p.headerLines) {
    const i = line.indexOf(':');
    const value = (i >= 0 ? line.slice(i + 1) : '').replace(/\r?\n[ \t]+/g, ' ').trim();
    const list = byName.get(key.toLowerCase()) ?? [];
    list.push(value);
    byName.set(key.toLowerCase(), list);
  }
  return (name) => byName.get(name.toLowerCase()) ?? [];
}

export async function parseMail(uid: number, source: Buffer | string): Promise<Mail> {
  // Loaded on first use (mailparser and its HTML converter weigh tens of MB).
  const { simpleParser } = await import('mailparser');
  const p = await simpleParser(source, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  const from = addresses(p.from);
  return {
    uid,
    messageId: p.messageId?.trim() || undefined,
    from: from[0]?.address?.toLowerCase(),
    fromName: from[0]?.name || undefined,
    fromCount: from.length,
    to: addresses(p.to).map((v) => v.address!.toLowerCase()),
    subject: p.subject?.trim() ?? '',
    date: p.date,
    inReplyTo: ids(p.inReplyTo)[0],
    references: ids(p.references),
    text: (p.text ?? '').replace(/\r\n/g, '\n').trim(),
    header: headerLookup(p),
    attachments: p.attachments
      .filter((a) => a.contentDisposition === 'attachment' || a.filename)
      .map((a) => ({ name: a.filename ?? 'attachment', mime: a.contentType, size: a.size, content: a.content })),
  };
}

/** Lines that open the quoted earlier message in common clients (Gmail, Apple Mail, Outlook, Thunderbird). */
const QUOTE_HEAD = [
  /^On .{1,200}wrote:\s*$/,
  /^Le .{1,200}a écrit\s?:\s*$/,
  /^Am .{1,200}schrieb .{0,200}:\s*$/,
  /^-{2,}\s*Original Message\s*-{2,}$/i,
  /^-{2,}\s*Forwarded message\s*-{2,}$/i,
  /^_{20,}$/,
];

/**
 * The new part of a reply: stops at the first quote header or at the start of a `>` quote block that runs to
 * the end (interleaved answers keep their quotes), and drops trailing blank lines. Empty input stays empty.
 * @example trimQuoted('Yes.\n\nOn Mon, Ada wrote:\n> Lunch?') // 'Yes.'
 */
export function trimQuoted(text: string): string {
  const lines = text.split('\n');
  let end = lines.length;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!.trim();
    const two = i + 1 < lines.length ? `${l} ${lines[i + 1]!.trim()}` : l;
    if (QUOTE_HEAD.some((r) => r.test(l)) || (i > 0 && /^On /.test(l) && /wrote:\s*$/.test(two) && !/wrote:\s*$/.test(l))) {
      end = i;
      break;
    }
    if (/^From: .+/.test(l) && /^(Sent|Date): /.test(lines[i + 1]?.trim() ?? '')) {
      end = i;
      break;
    }
  }
  let kept = lines.slice(0, end);
  // A trailing block of quoted lines (bottom-posting leftovers) goes too.
  let j = kept.length;
  while (j > 0 && (kept[j - 1]!.trim() === '' || kept[j - 1]!.trimStart().startsWith('>'))) j--;
  kept = kept.slice(0, j);
  const out = kept.join('\n').trim();
  return out || text.trim();
}

/** A file name that cannot leave its folder or hide its type. */
export function safeName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base
    .replace(/[^\w.@+-]+/g, '_')
    .replace(/^\.+/, '')
    .slice(-120);
  return clean || 'attachment';
}

/** Saves the attachments as `<uidvalidity>-<uid>-<n>-<name>` (the same mail always gets the same paths). */
export async function saveAttachments(home: string, prefix: string, mail: Mail): Promise<SavedAttachment[]> {
  if (!mail.attachments.length) return [];
  const dir = join(home, 'downloads', 'email');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const out: SavedAttachment[] = [];
  for (const [i, a] of mail.attachments.entries()) {
    const path = join(dir, `${prefix}-${i + 1}-${safeName(a.name)}`);
    await writeFile(path, a.content, { mode: 0o600 });
    out.push({ path, name: a.name, mime: a.mime, size: a.size });
  }
  return out;
}
