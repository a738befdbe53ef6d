/**
 * What `keel ui` shows, as plain functions of the gateway's data (kept apart from ink so they are easy to test).
 */

export interface Status {
  running?: boolean;
  model?: string;
  provider?: string;
  safeMode?: boolean;
  version?: string;
  queue?: { pending?: number; failed?: number };
  memory?: { short?: number; episodic?: number; long?: number };
  autonomy?: { enabled?: boolean; interval?: number };
}

export interface TaskRow {
  id: string;
  task: string;
  priority: number;
  /** `pending` (waiting) or `executing` in the pending list. */
  status?: string;
  error?: string;
}

export interface TaskList {
  pending: TaskRow[];
  completed: TaskRow[];
  failed: TaskRow[];
}

export interface ChatLine {
  who: 'you' | 'agent' | 'thinking' | 'error';
  text: string;
}

/** One line, at most `width` characters, newlines flattened (a cut ends in `…`). */
export function fit(s: string, width: number): string {
  const flat = s.replace(/\s*\n\s*/g, ' ');
  return flat.length <= width ? flat : `${flat.slice(0, Math.max(0, width - 1))}…`;
}

/** Text in lines of at most `width` characters, broken between words (a word longer than a line is cut). */
export function wrap(s: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of s.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = '';
    }
    line = line ? `${line} ${word}` : word;
    while (line.length > width) {
      lines.push(line.slice(0, width));
      line = line.slice(width);
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** A line of the live activity for a gateway event, or undefined for events the screen does not show. */
export function describeEvent(event: string, d: Record<string, unknown>): string | undefined {
  // Relayed from another machine on a shared queue (docs/websocket.md): say which.
  const time = `${new Date().toISOString().slice(11, 19)}${typeof d.host === 'string' && d.host ? ` @${d.host}` : ''}`;
  const id = typeof d.actionId === 'string' ? ` ${d.actionId.slice(-6)}` : '';
  switch (event) {
    case 'thinking':
      return `${time}${id} thinking: ${String(d.thought ?? '')}`;
    case 'action':
      return `${time}${id} > ${String(d.skill ?? '?')} ${JSON.stringify(d.parameters ?? {})}`;
    case 'observation':
      return `${time}${id} < ${String(d.result ?? '')}`;
    case 'action.queued':
      return `${time}${id} queued (P${String(d.priority ?? 5)}, ${String(d.source ?? '?')}): ${String(d.task ?? '')}`;
    case 'action.amended':
      return `${time}${id} edited before it started: ${String(d.task ?? '')}`;
    case 'action.started':
      return `${time}${id} started: ${String(d.task ?? '')}`;
    case 'action.completed':
      return `${time}${id} completed: ${String(d.result ?? '')}`;
    case 'action.failed':
      return `${time}${id} FAILED: ${String(d.error ?? '')}`;
    case 'action.retry':
      return `${time}${id} retry: ${String(d.error ?? d.reason ?? '')}`;
    case 'log':
      return d.level === 'info' ? undefined : `${time} ${String(d.level).toUpperCase()} ${String(d.message ?? '')}`;
    default:
      return undefined;
  }
}
