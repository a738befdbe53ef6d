/**
 * Shared test helpers: temporary homes, plugin folders written on the fly, bounded waiting.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The built CLI (dist/cli.js; the global set-up builds it). */
export const KEEL_CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

export interface CliOut {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `keel <args>` (the built CLI) with `KEEL_HOME=home` and `env` on top of this process's environment. */
export function keelCli(home: string, args: string[], env: Record<string, string> = {}): Promise<CliOut> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [KEEL_CLI, ...args],
      { env: { ...process.env, KEEL_HOME: home, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export function tmp(prefix = 'keel-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function rm(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface PluginSpec {
  id: string;
  manifest?: Record<string, unknown>;
  /** Body of `setup(ctx)` (JavaScript). */
  setup?: string;
  /** Extra members of the exported definition, e.g. `health() { ... },` (JavaScript). */
  extra?: string;
}

/** Writes `<base>/<id>/manifest.json` and `index.js` (plain JS, no imports). */
export function writePlugin(base: string, spec: PluginSpec): string {
  const dir = join(base, spec.id);
  mkdirSync(dir, { recursive: true });
  const manifest = { id: spec.id, version: '1.0.0', kind: 'skill', description: `test plugin ${spec.id}`, ...spec.manifest };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(join(dir, 'index.js'), `export default {\n  ${spec.extra ?? ''}\n  async setup(ctx) {\n${spec.setup ?? ''}\n  },\n};\n`);
  return dir;
}

/** A skill manifest entry with a one-string-parameter schema. */
export function skillEntry(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `test skill ${name}`,
    category: 'test',
    parameters: { type: 'object', required: ['text'], properties: { text: { type: 'string' } }, additionalProperties: false },
    ...extra,
  };
}

/** Polls `check` until it returns a truthy value or the bounded wait ends (then throws with `what`). */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A seeded pseudo-random source in [0, 1) (mulberry32): the same numbers on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
