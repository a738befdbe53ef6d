/**
 * Dashboard plugin entry: finds the page built at install time (`npm install` runs the build: dist/dashboard) and
 * offers it to the gateway as capability `dashboard`. The page itself is plugins/dashboard/web.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { definePlugin, environmentError } from '../../sdk/index.js';
import manifest from './manifest.js';

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
};

/** dist/dashboard of this installation: up from this file to the package.json named keel. */
export function builtDir(from = import.meta.dirname): string | undefined {
  let d = from;
  for (let i = 0; i < 8; i++) {
    const pkg = join(d, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'keel') return join(d, 'dist', 'dashboard');
      } catch {
        /* not ours */
      }
    }
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  return undefined;
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const dir = builtDir();
    if (!dir || !existsSync(join(dir, 'index.html'))) {
      throw environmentError(
        `The dashboard is not built (no ${dir ?? 'dist/dashboard'}/index.html): run \`npm run build\` (npm install does it).`,
      );
    }
    const files: Record<string, string> = {};
    for (const f of readdirSync(dir)) {
      const ext = f.split('.').pop() ?? '';
      if (TYPES[ext]) files[f] = TYPES[ext]!;
    }
    ctx.provide('dashboard', { dir, files });
    return {};
  },
});
