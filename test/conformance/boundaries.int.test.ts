/**
 * The plugin boundary, enforced:
 * - no file under plugins/ imports kernel/ or another plugin (every import, export-from, dynamic import and require
 *   of every source file, as esbuild parses them);
 * - a built-in plugin loaded in a real kernel and unloaded leaves nothing behind: no skill, capability, config key,
 *   hook tap, server (the gateway's port is closed) or other handle keeping the process alive. (CLI commands are
 *   manifest data read by the CLI, never registered in a kernel, so there is nothing of them to leave.)
 * - `stop()` called a second time does not throw.
 * - the SDK is layered: the contract (every file under sdk/ outside the kit folders) imports nothing from kernel/,
 *   from the kits or from the testing entry, and has no import cycle, type-only imports included; the kits
 *   (sdk/channel-kit, sdk/vendors, sdk/vectors) build on the contract only; the testing entry (testing/, published
 *   as keel/sdk/testing) is the one SDK layer that may import kernel/, and nothing in the SDK imports it.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from '../../sdk/index.js';
import type { GatewayRoutesCapability } from '../../sdk/gateway.js';
import type { PluginInstance } from '../../sdk/plugin.js';
import { tapOwners } from '../../kernel/hooks/catalogue.js';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { discoverBuiltins, discoverUserPlugins, type PluginCandidate } from '../../kernel/plugins/discover.js';
import { rm, tmp, waitFor } from '../helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PLUGINS = join(ROOT, 'plugins');
const SDK = join(ROOT, 'sdk');
const KERNEL = join(ROOT, 'kernel');
/** The layer above the contract that boots a kernel for plugin tests (keel/sdk/testing). */
const TESTING = join(ROOT, 'testing');
/** The kits: built on the contract, used by plugins, never by the contract. */
const KITS = ['channel-kit', 'vendors', 'vectors'].map((d) => join(SDK, d));
const SOURCE = /\.(?:ts|mts|tsx|js|mjs)$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (n === 'node_modules' || n.startsWith('.')) return [];
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return SOURCE.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

const inside = (file: string, dir: string) => file === dir || file.startsWith(dir + sep);

/** Every import specifier of each file, parsed by esbuild (nothing is followed: each file is read alone). */
async function importsOf(files: string[]): Promise<Array<{ importer: string; spec: string; kind: string }>> {
  const found: Array<{ importer: string; spec: string; kind: string }> = [];
  await build({
    entryPoints: files,
    bundle: true,
    write: false,
    outdir: join(ROOT, '.boundaries-unused'),
    platform: 'node',
    format: 'esm',
    logLevel: 'silent',
    plugins: [
      {
        name: 'record-imports',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => {
            if (args.kind === 'entry-point') return undefined;
            found.push({ importer: args.importer, spec: args.path, kind: args.kind });
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  return found;
}

describe('plugins import only the SDK, their own files and packages', () => {
  it('no file under plugins/ imports kernel/ or another plugin', async () => {
    const files = sourceFiles(PLUGINS);
    expect(files.length).toBeGreaterThan(50);
    const imports = await importsOf(files);
    expect(imports.length).toBeGreaterThan(files.length);
    const offences: string[] = [];
    for (const { importer, spec, kind } of imports) {
      const own = join(PLUGINS, relative(PLUGINS, importer).split(sep)[0]!);
      const where = `${relative(ROOT, importer)} ${kind} "${spec}"`;
      if (spec.startsWith('.') || spec.startsWith('/')) {
        const target = resolve(dirname(importer), spec);
        if (!inside(target, own) && !inside(target, SDK)) offences.push(`${where}: reaches ${relative(ROOT, target)}`);
      } else if (/^(?:@?keel\/)(?!sdk(?:$|\/))/.test(spec) || /(^|\/)kernel\//.test(spec)) {
        offences.push(`${where}: not the SDK`);
      }
    }
    expect(offences, 'plugins must import from sdk/ only (plus their own files and packages)').toEqual([]);
  });

  it('example user plugins import only keel/sdk (and subpaths), their own files and packages', async () => {
    const base = join(ROOT, 'examples', 'plugins');
    const files = sourceFiles(base);
    expect(files.length).toBeGreaterThan(0);
    const offences: string[] = [];
    for (const { importer, spec, kind } of await importsOf(files)) {
      const own = join(base, relative(base, importer).split(sep)[0]!);
      const where = `${relative(ROOT, importer)} ${kind} "${spec}"`;
      if (spec.startsWith('.') || spec.startsWith('/')) {
        if (!inside(resolve(dirname(importer), spec), own))
          offences.push(`${where}: leaves the plugin folder (a user plugin imports keel/sdk)`);
      } else if (/^@?keel\//.test(spec) && !/^@?keel\/sdk(?:$|\/vendors\/[a-z][a-z0-9-]*$|\/channel-kit$|\/testing$)/.test(spec)) {
        offences.push(`${where}: not a public SDK path`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('the check sees a forbidden import when there is one', async () => {
    const home = tmp('keel-bound-');
    try {
      const { writeFileSync } = await import('node:fs');
      const f = join(home, 'x.ts');
      writeFileSync(
        f,
        "import { ErrorCodes } from '../../kernel/errors.js';\nexport const c = await import('../agent/index.js');\nvoid ErrorCodes;\n",
      );
      const specs = (await importsOf([f])).map((i) => i.spec);
      expect(specs).toEqual(expect.arrayContaining(['../../kernel/errors.js', '../agent/index.js']));
    } finally {
      rm(home);
    }
  });
});

/**
 * Every module a source file names, type-only imports included (esbuild drops those before resolving, so they are
 * read from the text): import/export-from statements, bare imports, `import('...')` (also in type positions) and
 * require. Comments are removed first, so an example in a doc comment is not an import.
 */
function specifiersOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g, (m) =>
    m.startsWith('/') ? ' ' : m,
  );
  const specs = new Set<string>();
  const patterns = [
    /(?:^|[;}\s])(?:import|export)\s[^'";]*?\sfrom\s*(['"])([^'"\n]+)\1/g,
    /(?:^|[;}\s])import\s*(['"])([^'"\n]+)\1/g,
    /\b(?:import|require)\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) specs.add(m[2]!);
  return [...specs];
}

/** The file a relative specifier names (`./x.js` is `./x.ts` in the sources); undefined for a package. */
function target(importer: string, spec: string): string | undefined {
  if (!spec.startsWith('.') && !spec.startsWith('/')) return undefined;
  const p = resolve(dirname(importer), spec);
  for (const c of [p, p.replace(/\.js$/, '.ts'), p.replace(/\.mjs$/, '.mts'), `${p}.ts`, join(p, 'index.ts')])
    if (existsSync(c) && statSync(c).isFile()) return c;
  return p;
}

type Graph = Map<string, Array<{ spec: string; to: string | undefined }>>;

function graphOf(files: string[]): Graph {
  return new Map(files.map((f) => [f, specifiersOf(readFileSync(f, 'utf8')).map((spec) => ({ spec, to: target(f, spec) }))]));
}

/** The import cycles among the graph's own files (each strongly connected component of two or more, or a self-import). */
function cyclesOf(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const { to: w } of graph.get(v) ?? []) {
      if (!w || !graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)!.some((e) => e.to === v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const isKit = (f: string) => KITS.some((k) => inside(f, k));
const isContract = (f: string) => inside(f, SDK) && !isKit(f);
const show = (f: string) => relative(ROOT, f);

describe('the SDK is layered: contract, then kits, then testing', () => {
  const sdkFiles = sourceFiles(SDK);
  const testingFiles = existsSync(TESTING) ? sourceFiles(TESTING) : [];
  const graph = graphOf([...sdkFiles, ...testingFiles]);
  const contract = sdkFiles.filter(isContract);

  it('reads every import esbuild sees, and the type-only ones it drops', async () => {
    expect(contract.length).toBeGreaterThan(20);
    const seen = new Map([...graph].map(([f, es]) => [f, new Set(es.map((e) => e.spec))]));
    const missed = (await importsOf([...graph.keys()]))
      .filter((i) => !seen.get(i.importer)?.has(i.spec))
      .map((i) => `${show(i.importer)} ${i.kind} "${i.spec}"`);
    expect(missed, 'imports the scanner did not read').toEqual([]);
    const types = specifiersOf(
      "/** import { x } from './doc.js' */\nimport type { A } from './a.js';\nexport type * from './b.js';\n" +
        "import {\n  type C,\n  type D,\n} from './c.js';\ntype E = import('./e.js').E;\nconst s = 'x // y';\nimport './f.js';\n",
    );
    expect(types.sort()).toEqual(['./a.js', './b.js', './c.js', './e.js', './f.js']);
  });

  it('no contract file imports kernel/, a kit or the testing entry', () => {
    const offences: string[] = [];
    for (const f of contract)
      for (const { spec, to } of graph.get(f)!) {
        const where = `${show(f)} "${spec}"`;
        if (to && inside(to, KERNEL)) offences.push(`${where}: the kernel`);
        else if (to && isKit(to)) offences.push(`${where}: a kit (kits sit above the contract)`);
        else if (to && inside(to, TESTING)) offences.push(`${where}: the testing entry`);
        else if (to && !inside(to, SDK)) offences.push(`${where}: outside sdk/`);
        else if (!to && /^@?keel\//.test(spec)) offences.push(`${where}: the contract imports its own files relatively`);
      }
    expect(offences, 'the contract (sdk/ outside the kits) stands alone').toEqual([]);
  });

  it('no import cycle in the SDK, type-only imports included', () => {
    expect(
      cyclesOf(graph).map((c) => c.map(show).join(' <-> ')),
      'move the shared types to a leaf file (see sdk/types.ts, sdk/channel-types.ts)',
    ).toEqual([]);
  });

  it('the kits import the contract (and each other), never kernel/ or the testing entry', () => {
    const offences: string[] = [];
    for (const f of sdkFiles.filter(isKit))
      for (const { spec, to } of graph.get(f)!) {
        if (to && (inside(to, KERNEL) || inside(to, TESTING) || !inside(to, SDK))) offences.push(`${show(f)} "${spec}"`);
        else if (!to && /^@?keel\//.test(spec)) offences.push(`${show(f)} "${spec}"`);
      }
    expect(offences).toEqual([]);
  });

  it('the testing entry lives outside sdk/, and reaches only the contract, the kits, the kernel and its own files', () => {
    expect(existsSync(join(SDK, 'testing')), 'sdk/testing/ (the testing entry sits above the contract, in testing/)').toBe(false);
    expect(testingFiles.length).toBeGreaterThan(0);
    const offences: string[] = [];
    for (const f of testingFiles)
      for (const { spec, to } of graph.get(f)!)
        if (to && ![SDK, KERNEL, TESTING].some((d) => inside(to, d))) offences.push(`${show(f)} "${spec}"`);
    expect(offences).toEqual([]);
  });

  it('the public entries resolve to their layer', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, { types?: string } | string>;
    };
    const types = (k: string) => {
      const e = pkg.exports[k];
      return typeof e === 'string' ? e : e?.types;
    };
    expect(types('./sdk')).toBe('./sdk/index.ts');
    expect(types('./sdk/testing')).toBe('./testing/index.ts');
    expect(types('./sdk/vendors/*')).toBe('./sdk/vendors/*.ts');
    for (const k of ['./sdk', './sdk/testing']) expect(existsSync(join(ROOT, types(k)!)), k).toBe(true);
  });

  it('the cycle check sees a type-only cycle and the layer check a kernel import', () => {
    const home = tmp('keel-layers-');
    try {
      mkdirSync(join(home, 'sdk'));
      writeFileSync(join(home, 'sdk', 'a.ts'), "import type { B } from './b.js';\nexport type A = { b?: B };\n");
      writeFileSync(join(home, 'sdk', 'b.ts'), "export type B = { a?: import('./a.js').A };\n");
      writeFileSync(join(home, 'sdk', 'c.ts'), "import type { Kernel } from '../../kernel/kernel.js';\nexport type C = Kernel;\n");
      const g = graphOf(['a.ts', 'b.ts', 'c.ts'].map((n) => join(home, 'sdk', n)));
      expect(cyclesOf(g).map((c) => c.map((f) => relative(home, f)))).toEqual([[join('sdk', 'a.ts'), join('sdk', 'b.ts')]]);
      expect(g.get(join(home, 'sdk', 'c.ts'))!.map((e) => e.spec)).toEqual(['../../kernel/kernel.js']);
    } finally {
      rm(home);
    }
  });
});

/** Active handles of the process by type (timers that are unref'd do not count: they keep nothing alive). */
function handles(): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

function grown(before: Map<string, number>, after: Map<string, number>): string[] {
  return [...after].filter(([k, n]) => n > (before.get(k) ?? 0)).map(([k, n]) => `${k}: ${before.get(k) ?? 0} -> ${n}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      res(true);
    });
    s.once('error', () => res(false));
  });
}

describe('built-in plugins leave nothing behind after unload, and stop twice without throwing', async () => {
  const builtins = await discoverBuiltins(PLUGINS);
  let kernel: Kernel;
  let home: string;
  let empty: string;

  beforeAll(async () => {
    home = tmp('keel-unload-');
    empty = tmp('keel-builtins-');
    kernel = await startKernel({
      home,
      builtinDir: empty,
      builtinOnly: true,
      env: {},
      watchSkills: false,
      overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' },
      logs: new LogSink({ quiet: true }),
    });
  });
  afterAll(async () => {
    await kernel?.stop();
    rm(home);
    rm(empty);
    rm(examplesHome);
  });

  it('finds the built-in plugins', () => {
    expect(builtins.length).toBeGreaterThan(10);
  });

  // The examples, installed as a user installs them, are held to the same rules.
  const examplesHome = tmp('keel-examples-');
  for (const d of readdirSync(join(ROOT, 'examples', 'plugins')))
    cpSync(join(ROOT, 'examples', 'plugins', d), join(examplesHome, 'plugins', d), { recursive: true });
  const examples = await discoverUserPlugins(examplesHome);

  it('a route another plugin adds to the gateway is gone once that plugin unloads', async () => {
    const gw = builtins.find((b) => b.id === 'gateway')!;
    expect((await kernel.host.load(gw)).state).toBe('loaded');
    try {
      const port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
      const manifest = {
        id: 'routey',
        version: '1.0.0',
        kind: 'service' as const,
        description: 'adds a gateway route',
        provides: ['gateway:routes:routey'],
      };
      const routes: GatewayRoutesCapability = {
        routes: [
          {
            method: 'GET',
            url: '/api/routey',
            summary: 'test route',
            schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } },
            handler: () => ({ body: { ok: true } }),
          },
        ],
      };
      const routey: PluginCandidate = {
        id: 'routey',
        origin: 'user',
        dir: '/test/routey',
        manifest,
        load: async () => ({ manifest, setup: (ctx) => ctx.provide('gateway:routes:routey', routes) }),
      };
      expect((await kernel.host.load(routey)).state).toBe('loaded');
      const on = await fetch(`http://127.0.0.1:${port}/api/routey`);
      expect(on.status).toBe(200);
      expect(await on.json()).toEqual({ ok: true });
      await kernel.host.unload('routey');
      expect((await fetch(`http://127.0.0.1:${port}/api/routey`)).status).toBe(404);
    } finally {
      await kernel.host.unload('gateway');
    }
  });

  for (const c of [...builtins, ...examples]) {
    it(`${c.origin} ${c.id}`, async () => {
      let instance: PluginInstance | undefined;
      let stops = 0;
      const wrapped: PluginCandidate = {
        ...c,
        load: async () => {
          const def = await c.load();
          return {
            ...def,
            async setup(ctx) {
              const made = (await def.setup(ctx)) ?? {};
              instance = made;
              const stop = made.stop?.bind(made);
              if (stop)
                made.stop = async () => {
                  stops++;
                  await stop();
                };
              return made;
            },
          };
        },
      };
      const keysBefore = new Set(kernel.keys.keys());
      await new Promise((r) => setTimeout(r, 200));
      const before = handles();
      const status = await kernel.host.load(wrapped);
      expect(status.state, status.reason).toBe('loaded');
      const manifest = c.manifest as { provides?: string[]; skills?: Array<{ name: string }> };
      const gateway = c.id === 'gateway' ? kernel.registry.use<{ port: number }>('gateway:address') : undefined;
      if (c.id === 'gateway') {
        expect(gateway?.port).toBeGreaterThan(0);
        expect(await portOpen(gateway!.port)).toBe(true);
      }

      await kernel.host.unload(c.id);
      expect(kernel.host.status(c.id)).toBeUndefined();
      expect(
        [...kernel.registry.skills.values()].filter((e) => e.plugin === c.id).map((e) => e.manifest.name),
        'skills',
      ).toEqual([]);
      for (const s of manifest.skills ?? []) expect(kernel.registry.skills.has(s.name), `skill ${s.name}`).toBe(false);
      expect(
        kernel.registry
          .withPrefix('')
          .filter((e) => e.plugin === c.id)
          .map((e) => e.name),
        'capabilities',
      ).toEqual([]);
      for (const cap of manifest.provides ?? []) expect(kernel.registry.providerOf(cap), `capability ${cap}`).toBeUndefined();
      expect(tapOwners(kernel.hooks).get(c.id), 'hook taps').toBeUndefined();
      expect(
        kernel.keys.keys().filter((k) => !keysBefore.has(k)),
        'config keys',
      ).toEqual([]);
      if (gateway) expect(await portOpen(gateway.port), 'the gateway port is closed').toBe(false);
      // Servers, sockets, watchers and ref'd timers a plugin started must be gone with it.
      await waitFor(
        () => grown(before, handles()).length === 0 || undefined,
        `${c.id} to release its handles: ${grown(before, handles()).join(', ')}`,
        3000,
      ).catch(() => undefined);
      expect(grown(before, handles()), 'handles still open after unload').toEqual([]);

      if (instance?.stop) {
        expect(stops).toBe(1);
        await expect(Promise.resolve(instance.stop()), 'stop() a second time').resolves.toBeUndefined();
      }
    });
  }
});
