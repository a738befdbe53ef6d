/**
 * Built-in plugins and the examples use the typed contract (docs/plugins.md "The typed contract"): a manifest the
 * compiler reads as literals, and skill handlers whose argument types come from the schema, not retyped by hand.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const pluginDirs = [
  ...readdirSync(join(root, 'plugins')).map((d) => join(root, 'plugins', d)),
  ...readdirSync(join(root, 'examples', 'plugins')).map((d) => join(root, 'examples', 'plugins', d)),
].filter((d) => statSync(d).isDirectory() && existsSync(join(d, 'manifest.ts')));

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) yield path;
  }
}

/** `ctx.skills.register('name', (args: { ... }` or `({ x }: { ... }`: an argument type written by hand. */
const RETYPED = /skills\.register\(\s*['"][\w-]+['"],\s*(?:async\s*)?\(\s*(?:\w+|\{[^}]*\})\s*:\s*[\w{]/;

describe('typed plugins', () => {
  it('finds the plugins', () => {
    expect(pluginDirs.length).toBeGreaterThan(10);
  });

  it('the hand-typed-handler pattern is recognised', () => {
    expect(RETYPED.test("ctx.skills.register('greet', ({ name }: { name: string }) => name)")).toBe(true);
    expect(RETYPED.test("ctx.skills.register('x', async (args: ScheduleArgs, call) => 1)")).toBe(true);
    expect(RETYPED.test("ctx.skills.register('x', async (args, call) => 1)")).toBe(false);
  });

  it('every manifest is written `as const satisfies PluginManifest`', () => {
    const loose = pluginDirs.filter((d) => !/\}\s*as const satisfies PluginManifest;/.test(readFileSync(join(d, 'manifest.ts'), 'utf8')));
    expect(loose.map((d) => relative(root, d))).toEqual([]);
  });

  it('no skill handler retypes its arguments', () => {
    const offenders: string[] = [];
    for (const d of pluginDirs) for (const f of sources(d)) if (RETYPED.test(readFileSync(f, 'utf8'))) offenders.push(relative(root, f));
    expect(offenders).toEqual([]);
  });
});
