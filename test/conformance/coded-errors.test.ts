/**
 * Issue 39.3: errors thrown by plugins carry a KEEL_E_* code and the plugin's id. In plugins/ (outside tests and
 * the dashboard's browser code) no plain `throw new Error(...)` is left: a plugin throws through its
 * `errorsFor('<id>')` builder (or another coded error). A line that cannot (code serialised into a browser page,
 * text of a generated file) is marked on the line above with `// keel-plain-error: <why>`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../kernel/errors.js';
import { PluginErrorCodes } from '../../sdk/index.js';

const ROOT = join(import.meta.dirname, '..', '..');
const PLUGINS = join(ROOT, 'plugins');
const PLAIN = /\bthrow\s+new\s+Error\s*\(/;
const MARK = /\/\/ keel-plain-error: \S/;

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    const rel = relative(ROOT, path).split('\\').join('/');
    if (rel === 'plugins/dashboard/web' || name === 'test' || name === '__tests__') continue;
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !/\.(test|spec)\.[mc]?[jt]s$/.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** `file:line` of every plain `throw new Error(` not marked on the line above. */
function plainThrows(file: string, text: string): string[] {
  const lines = text.split('\n');
  const out: string[] = [];
  lines.forEach((line, i) => {
    if (PLAIN.test(line) && !MARK.test(lines[i - 1] ?? '')) out.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
  });
  return out;
}

const files = [...sources(PLUGINS)].map((path) => ({ rel: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

describe('coded plugin errors', () => {
  it('the check finds a plain throw and accepts a marked one', () => {
    expect(plainThrows('x.ts', "if (!ok) throw new Error('broken');")).toHaveLength(1);
    expect(plainThrows('x.ts', 'throw   new Error(`a ${b}`)')).toHaveLength(1);
    expect(plainThrows('x.ts', "// keel-plain-error: runs in the page\nthrow new Error('x');")).toEqual([]);
    expect(plainThrows('x.ts', "throw coded('KEEL_E_INVALID_ARGUMENT', 'x');")).toEqual([]);
  });

  it('no plain throw new Error in plugins/ outside tests and browser code', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((f) => plainThrows(f.rel, f.text))).toEqual([]);
  });

  it('each marked exception says why', () => {
    const marked = files.flatMap((f) => f.text.split('\n').filter((l) => l.includes('keel-plain-error')));
    for (const l of marked) expect(l).toMatch(MARK);
  });

  it('errorsFor names the plugin whose folder it is in (so the client sees the right plugin)', () => {
    const wrong: string[] = [];
    for (const f of files) {
      const folder = f.rel.split(/[\\/]/)[1];
      for (const m of f.text.matchAll(/errorsFor\('([^']+)'\)/g)) if (m[1] !== folder) wrong.push(`${f.rel}: errorsFor('${m[1]}')`);
    }
    expect(wrong).toEqual([]);
  });

  it('every code a plugin throws through errorsFor is a family, a kernel code, or documented in docs/', () => {
    const docs = readFileSync(join(ROOT, 'docs', 'plugins.md'), 'utf8');
    const allDocs = readdirSync(join(ROOT, 'docs'))
      .filter((n) => n.endsWith('.md'))
      .map((n) => readFileSync(join(ROOT, 'docs', n), 'utf8'))
      .join('\n');
    const known = new Set<string>([...Object.values(PluginErrorCodes), ...Object.values(ErrorCodes)]);
    const unknown = new Set<string>();
    for (const f of files)
      for (const m of f.text.matchAll(/\bcoded\(\s*'(KEEL_E_[A-Z0-9_]+)'/g))
        if (!known.has(m[1]!) && !allDocs.includes(m[1]!)) unknown.add(m[1]!);
    expect([...unknown]).toEqual([]);
    for (const code of Object.values(PluginErrorCodes)) expect(docs).toContain(code);
  });
});
