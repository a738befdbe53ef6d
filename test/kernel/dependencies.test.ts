import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
/** The kernel's whole third-party surface. A vendor SDK, an HTTP server or a browser here is a design error. */
const KIT_PACKAGES = new Set(['marked']);
// Loaded on first use only (a dynamic import, or types only): the SDK's progress line for long CLI work, and the
// shared queue's engine and its Redis client (kernel/queue/bull-queue.ts, opened only when queueRedisUrl is set).
const LAZY_PACKAGES = new Set(['cli-progress', 'ioredis', 'bullmq']);
const ALLOWED = new Set(['typebox', 'ajv', 'yaml', 'tapable', 'chokidar', 'consola', 'commander', 'esbuild']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('kernel dependencies', () => {
  it('imports only node built-ins, its own modules, the SDK and a short list of packages (vendor SDKs only lazily, in sdk/vendors)', () => {
    const seen = new Map<string, string>();
    for (const f of [...files(join(ROOT, 'kernel')), ...files(join(ROOT, 'sdk'))]) {
      const src = readFileSync(f, 'utf8');
      // sdk/vendors/ adapts vendor SDKs for provider plugins: it may load them, but only lazily (import()).
      const lazyVendorsOk = f.includes(join('sdk', 'vendors'));
      // sdk/channel-kit/ is imported by channel plugins only (never by the kernel or sdk/index.ts): it parses Markdown.
      const kitOk = f.includes(join('sdk', 'channel-kit'));
      for (const m of src.matchAll(/^(?:import|export)[^'"`;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
        if (lazyVendorsOk && (m[2] || /^import\s+type\b/.test(m[0]))) continue;
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (kitOk && KIT_PACKAGES.has(pkg)) continue;
        if ((m[2] || /^import\s+type\b/.test(m[0])) && LAZY_PACKAGES.has(pkg)) continue;
        seen.set(pkg, f);
      }
    }
    const extra = [...seen.keys()].filter((p) => !ALLOWED.has(p));
    expect(extra, `unexpected kernel imports: ${extra.map((p) => `${p} (${seen.get(p)})`).join(', ')}`).toEqual([]);
  });

  it('never loads the channel kit from the kernel or the SDK entry', () => {
    for (const f of [...files(join(ROOT, 'kernel')), join(ROOT, 'sdk', 'index.ts'), join(ROOT, 'sdk', 'channel.ts')]) {
      // An import of it (static or dynamic); the kernel may name the public subpath `keel/sdk/channel-kit` it resolves.
      expect(readFileSync(f, 'utf8'), f).not.toMatch(/(?:\bfrom\s*|\bimport\s*\(\s*)['"][^'"]*channel-kit/);
    }
  });

  it('declares every package the kernel uses as a dependency', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const p of ALLOWED) expect(pkg.dependencies, p).toHaveProperty(p);
  });
});
