/**
 * Shared test helpers: temporary homes, plugin folders written on the fly, bounded waiting.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
