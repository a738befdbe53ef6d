#!/usr/bin/env node
// Builds dist/: the `keel` CLI (code-split so each command loads only what it needs), the SDK for user code,
// every built-in plugin, and dist/plugins/manifests.json so listing plugins never imports their code.
import { build } from 'esbuild';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  chmodSync,
  statSync,
} from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, 'plugins'), { recursive: true });

const pluginsDir = join(root, 'plugins');
const pluginDirs = existsSync(pluginsDir)
  ? readdirSync(pluginsDir)
      .filter((d) => statSync(join(pluginsDir, d)).isDirectory() && existsSync(join(pluginsDir, d, 'index.ts')))
      .sort()
  : [];

const entryPoints = {
  cli: join(root, 'kernel', 'cli', 'main.ts'),
  sdk: join(root, 'sdk', 'index.ts'),
};
for (const d of pluginDirs) entryPoints[`plugins/${d}/index`] = join(pluginsDir, d, 'index.ts');
// The SDK subpaths user plugins may import (keel/sdk/vendors/<name>, keel/sdk/testing): the same modules the
// built-ins use, so they share one copy (splitting puts the shared code in chunks).
const vendorsDir = join(root, 'sdk', 'vendors');
for (const f of existsSync(vendorsDir) ? readdirSync(vendorsDir).filter((n) => n.endsWith('.ts')) : []) {
  entryPoints[`sdk/vendors/${f.replace(/\.ts$/, '')}`] = join(vendorsDir, f);
}
// The channel kit (defineChannel and its parts), for users' own channel plugins: keel/sdk/channel-kit.
entryPoints['sdk/channel-kit/index'] = join(root, 'sdk', 'channel-kit', 'index.ts');
// The testing entry sits above the contract (it boots a kernel), in testing/; it is published as keel/sdk/testing.
entryPoints['sdk/testing/index'] = join(root, 'testing', 'index.ts');

// Dependencies stay in node_modules, except TypeBox: as hundreds of small ES modules it costs ~100 ms and ~25 MB
// to import at run time, bundled and tree-shaken it costs a few ms (see the daemon and gateway benchmarks).
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const BUNDLED = new Set(['typebox']);
const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })
  .filter((d) => !BUNDLED.has(d))
  .flatMap((d) => [d, `${d}/*`]);

await build({
  entryPoints,
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  logLevel: 'warning',
  banner: { js: '' },
});
// keel/sdk/testing finds its fake plugins (plain JS folders) next to itself.
for (const d of readdirSync(join(root, 'testing'))) {
  const src = join(root, 'testing', d);
  if (statSync(src).isDirectory()) cpSync(src, join(dist, 'sdk', 'testing', d), { recursive: true });
}
const cli = join(dist, 'cli.js');
writeFileSync(cli, `#!/usr/bin/env node\n${readFileSync(cli, 'utf8')}`);
chmodSync(cli, 0o755);

// Manifests: bundle each manifest alone, import it, and keep the data.
const manifests = [];
const tmp = join(dist, '.manifests');
for (const d of pluginDirs) {
  const src = ['manifest.ts', 'manifest.js'].map((f) => join(pluginsDir, d, f)).find((p) => existsSync(p));
  if (!src) continue;
  const out = join(tmp, `${d}.mjs`);
  await build({ entryPoints: [src], outfile: out, bundle: true, format: 'esm', platform: 'node', target: 'node22', logLevel: 'warning' });
  const mod = await import(pathToFileURL(out).href);
  manifests.push({ dir: d, manifest: JSON.parse(JSON.stringify(mod.default ?? mod.manifest)) });
}
rmSync(tmp, { recursive: true, force: true });
writeFileSync(join(dist, 'plugins', 'manifests.json'), JSON.stringify(manifests, null, 2));
// The dashboard (plugins/dashboard/web): a browser bundle with preact and htm inside (no CDN, nothing fetched at
// run time), and a gzip copy of each file that the gateway sends to browsers that accept it.
const web = join(pluginsDir, 'dashboard', 'web');
if (existsSync(join(web, 'main.ts'))) {
  const out = join(dist, 'dashboard');
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(web, 'main.ts')],
    outfile: join(out, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    legalComments: 'none',
    logLevel: 'warning',
  });
  copyFileSync(join(web, 'index.html'), join(out, 'index.html'));
  copyFileSync(join(web, 'app.css'), join(out, 'app.css'));
  for (const f of ['index.html', 'app.js', 'app.css'])
    writeFileSync(join(out, `${f}.gz`), gzipSync(readFileSync(join(out, f)), { level: 9 }));
}
console.log(`keel: built dist/ (${pluginDirs.length} built-in plugins)`);
