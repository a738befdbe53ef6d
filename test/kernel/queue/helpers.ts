/**
 * Shared test helpers: a temporary KEEL_HOME per test, a fake clock and a logger that remembers what it was told.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../../sdk/types.js';

export function tempHome(): { home: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), 'keel-queue-'));
  return { home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

export class FakeClock {
  constructor(public t = Date.UTC(2025, 0, 1, 12, 0, 0)) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface CapturedLog extends Logger {
  lines: Array<{ level: string; message: string }>;
  text(level?: string): string;
}

export function captureLog(): CapturedLog {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (message: string) => {
    lines.push({ level, message });
  };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    text: (level) =>
      lines
        .filter((l) => !level || l.level === level)
        .map((l) => l.message)
        .join('\n'),
  };
}

export const ROOT = join(import.meta.dirname, '..', '..', '..');
export const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
export const FIXTURES = join(import.meta.dirname, 'fixtures');
