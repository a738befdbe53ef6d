/**
 * Compiles user TypeScript or JavaScript (plugins, custom skills) with esbuild into one ESM file in the cache.
 * `keel/sdk` (and its public subpaths `keel/sdk/vendors/<name>`, `keel/sdk/channel-kit` and `keel/sdk/testing`) stays an import of this
 * installation's SDK, so user code shares the kernel's SDK: the same modules built-in plugins use.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCodes, KeelError } from '../errors.js';
import { installRoot, sdkEntry, sdkSubpathEntry } from '../paths.js';

export interface CompiledModule {
  /** Absolute path of the compiled file (unique per content, so a fresh import is never cached). */
  file: string;
  url: string;
}

export async function compileModule(source: string, cacheDir: string): Promise<CompiledModule> {
  const { build } = await import('esbuild');
  const sdk = sdkEntry();
  let result;
  try {
    result = await build({
      entryPoints: [source],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      logLevel: 'silent',
      // Stacks from user code point at the user's own file:line (with source maps enabled in the process).
      sourcemap: 'inline',
      // Packages installed beside Keel resolve for user code too (user folders rarely have node_modules).
      nodePaths: [join(installRoot(), 'node_modules')],
      plugins: [
        {
          name: 'keel-sdk',
          setup(b) {
            b.onResolve({ filter: /^keel\/sdk$|^@keel\/sdk$/ }, () => ({ path: pathToFileURL(sdk).href, external: true }));
            b.onResolve({ filter: /^@?keel\/sdk\// }, (args) => {
              const sub = args.path.replace(/^@?keel\/sdk\//, '');
              const file = sdkSubpathEntry(sub);
              if (file) return { path: pathToFileURL(file).href, external: true };
              return {
                errors: [
                  {
                    text: `"${args.path}" is not part of the Keel SDK; user code may import keel/sdk, keel/sdk/vendors/<name>, keel/sdk/channel-kit and keel/sdk/testing.`,
                  },
                ],
              };
            });
          },
        },
      ],
    });
  } catch (e) {
    const errors = (e as { errors?: Array<{ text: string; location?: { file: string; line: number; column: number } }> }).errors ?? [];
    const first = errors[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : '';
    throw new KeelError(ErrorCodes.COMPILE_FAILED, `Cannot compile ${source}: ${where}${first?.text ?? String(e)}`, { source });
  }
  const out = result.outputFiles[0]!;
  const hash = createHash('sha256').update(out.contents).digest('hex').slice(0, 16);
  await mkdir(cacheDir, { recursive: true });
  const file = join(cacheDir, `${basename(source).replace(/\.[^.]+$/, '')}-${hash}.mjs`);
  const { writeFile } = await import('node:fs/promises');
  await writeFile(file, out.contents);
  return { file, url: pathToFileURL(file).href };
}

/** A compiled file's name: `<source stem>-<16 hex digits of its content's hash>.mjs`. */
const COMPILED_NAME = /^(.+)-[0-9a-f]{16}\.mjs$/;

/**
 * Removes the other compiled versions of `keep`'s source from its folder (each edit of a user plugin compiles to a
 * new name, so the folder would otherwise keep every version ever loaded). Versions written in the last `minAgeMs`
 * stay: another Keel process may have just compiled one and not imported it yet.
 * @example const m = await compileModule(entry, dir); await pruneCompiled(m.file);
 */
export async function pruneCompiled(keep: string, minAgeMs = 60_000, now = Date.now()): Promise<number> {
  const dir = dirname(keep);
  const stem = COMPILED_NAME.exec(basename(keep))?.[1];
  if (stem === undefined) return 0;
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const file = join(dir, name);
    if (file === keep || COMPILED_NAME.exec(name)?.[1] !== stem) continue;
    const age = await stat(file).then(
      (s) => now - s.mtimeMs,
      () => -1,
    );
    if (age < minAgeMs) continue;
    if (
      await unlink(file).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}
