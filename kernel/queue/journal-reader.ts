/**
 * Splits journal bytes into ops. Only newline-terminated lines count: a line without its newline is a write
 * still in progress (when tailing) or one cut short by a crash (at open), and neither was acknowledged.
 */
import { decodeHeader, decodeOp, type JournalHeader, type QueueOp } from './ops.js';

export interface BadLine {
  /** 1-based line number in the file. */
  line: number;
  reason: string;
}

export interface ParsedLines {
  ops: QueueOp[];
  bad: BadLine[];
  /** Offset just past the last complete line (where reading resumes). */
  end: number;
  /** Bytes after `end` that do not end with a newline yet. */
  partial: number;
}

/** Parses complete lines of `buf` (which starts at file offset `base`, on line `firstLine`). */
export function parseLines(buf: Buffer, base: number, firstLine: number): ParsedLines {
  const out: ParsedLines = { ops: [], bad: [], end: base, partial: 0 };
  let start = 0;
  let line = firstLine;
  for (let nl = buf.indexOf(0x0a, start); nl >= 0; nl = buf.indexOf(0x0a, start)) {
    if (nl > start) {
      const text = buf.toString('utf8', start, nl);
      try {
        out.ops.push(decodeOp(text));
      } catch (e) {
        out.bad.push({ line, reason: (e as Error).message.slice(0, 200) });
      }
    }
    start = nl + 1;
    line++;
  }
  out.end = base + start;
  out.partial = buf.length - start;
  return out;
}

export interface ParsedJournal extends ParsedLines {
  header: JournalHeader | undefined;
  /** Offset just past the header line (0 when there is none). */
  headerEnd: number;
}

/**
 * Parses a whole journal file. When `resumeAt` is given (a snapshot absorbed this journal up to there), only ops
 * after that offset are returned.
 */
export function parseJournal(buf: Buffer, resumeAt?: number): ParsedJournal {
  const nl = buf.indexOf(0x0a);
  const header = nl >= 0 ? decodeHeader(buf.toString('utf8', 0, nl)) : undefined;
  const headerEnd = header ? nl + 1 : 0;
  let from = headerEnd;
  if (resumeAt !== undefined && resumeAt >= headerEnd && resumeAt <= buf.length) from = resumeAt;
  const firstLine = countLines(buf, from) + 1;
  return { header, headerEnd, ...parseLines(buf.subarray(from), from, firstLine) };
}

function countLines(buf: Buffer, upTo: number): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i >= 0 && i < upTo; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}
