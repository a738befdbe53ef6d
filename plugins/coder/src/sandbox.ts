/**
 * The sandbox agent-written code runs in: a fresh Node process under the permission model, with a fresh temp
 * folder as the only place it may read or write, no child processes, no workers, no addons, an environment of
 * PATH, HOME (the temp folder) and LANG only, stdin closed, output capped, and SIGKILL at the timeout. It always
 * runs in its own pid namespace and session (it cannot see, signal or inspect any process outside; refused where
 * that cannot be made), and unless the network is granted also in its own empty network namespace, with the
 * network modules taken away in any case. What it does not stop: docs/sandbox.md.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { environmentError, type NamespaceKind, type NamespaceSupport, namespaceSupport } from '../../../sdk/index.js';

export interface SandboxRequest {
  /** TypeScript (or JavaScript): the body of `async function run(args)`; what it returns is the result. */
  body: string;
  args?: unknown;
  timeoutMs: number;
  /** Largest part of stdout and of stderr kept. */
  maxOutputBytes: number;
  /** Leave the network reachable (see docs/sandbox.md for how it is blocked otherwise). */
  network?: boolean;
  signal?: AbortSignal;
  /**
   * Layers of the network block (tests switch one off to show the other holds alone): `namespace` (default true)
   * an empty network namespace where available, `modules` (default true) the preloaded module block.
   */
  networkLayers?: { namespace?: boolean; modules?: boolean };
  /**
   * How the isolation is looked up (tests force "not available" with it): the SDK's `namespaceSupport` by default.
   * Without a pid namespace nothing runs.
   */
  isolation?: (kinds: readonly NamespaceKind[]) => Promise<NamespaceSupport>;
}

export interface SandboxResult {
  ok: boolean;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  truncated: boolean;
  /** What run() returned (JSON), when it returned. */
  result?: unknown;
  /** What run() threw, or why the snippet did not run. */
  error?: string;
  durationMs: number;
  /** How the network was kept away: `namespace` (an empty network namespace, plus the module block), `modules` (the module block only), `none` (granted). */
  networkBlock: 'namespace' | 'modules' | 'none';
}

/** Heap limit of the sandboxed process, so a runaway snippet fails instead of eating the machine's memory. */
export const HEAP_MB = 256;

export class CompileError extends Error {}

/** Compiles a run() body to an ES module whose default export is the function. Throws CompileError. */
export async function compileBody(body: string): Promise<string> {
  const { transform } = await import('esbuild');
  // The body is wrapped before compiling, so `return`, `await` and type annotations all work in it.
  const source = `export default async function run(args: any): Promise<unknown> {\n${body}\n}\n`;
  try {
    const out = await transform(source, { loader: 'ts', format: 'esm', target: 'node22', sourcefile: 'snippet.ts', logLevel: 'silent' });
    return out.code;
  } catch (e) {
    const first = (e as { errors?: Array<{ text: string; location?: { line: number; column: number } }> }).errors?.[0];
    // Line 1 of the body is line 2 of the wrapped source.
    const where = first?.location ? `line ${first.location.line - 1}, column ${first.location.column}: ` : '';
    throw new CompileError(`The code does not compile: ${where}${first?.text ?? String(e)}`);
  }
}

/** The permission flag of this Node: `--permission` (22.13+, 23.5+), `--experimental-permission` before. */
export function permissionFlag(): string {
  return process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';
}

/**
 * Why agent-written code may not run here: it runs only in a pid namespace of its own (plus, without the network, an
 * empty network namespace), so that it can neither see, signal nor inspect a process outside its sandbox. The
 * permission model does not cover `process.kill` or `process._debugProcess`: without the namespace a snippet could
 * kill any process of Keel's user, or send Keel SIGUSR1. Where the namespace cannot be made, the snippet is refused
 * (KEEL_E_PLUGIN_ENVIRONMENT) with the reason, never run weaker.
 */
export function isolationRefusal(reason: string): Error {
  return environmentError(
    `Agent-written code runs only in a process namespace of its own (so that it cannot signal or inspect Keel or any other process), and none can be made here: ${reason}. ` +
      'On Linux, Keel needs util-linux `unshare` and either root or user namespaces (sysctl kernel.unprivileged_userns_clone=1); in a container, allow unshare (e.g. --cap-add SYS_ADMIN or a seccomp profile that permits it).',
  );
}

/**
 * The command prefix that starts a program in its own, empty network namespace (only a loopback interface that
 * is down: no address, local or remote, can be reached), or undefined where the system does not allow it
 * (`namespaceSupport` of the SDK: `unshare --net`, else the same in a user namespace; Linux only).
 */
export async function networkNamespacePrefix(): Promise<string[] | undefined> {
  const ns = await namespaceSupport(['net']);
  return ns.available ? ns.prefix : undefined;
}

/** Whether this Node's permission model can restrict the network (`--allow-net`; Node 25+). */
export function nodeRestrictsNetwork(): boolean {
  return process.allowedNodeEnvironmentFlags.has('--allow-net');
}

const RUNNER = `import { writeFileSync } from 'node:fs';
import run from './snippet.mjs';
const args = JSON.parse(process.argv[2] ?? 'null');
let out;
try {
  const value = await run(args);
  out = { ok: true, result: value === undefined ? null : value };
} catch (e) {
  out = { ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
}
let json;
try { json = JSON.stringify(out); } catch (e) { json = JSON.stringify({ ok: false, error: 'run() returned a value that is not JSON: ' + e.message }); }
writeFileSync(new URL('./result.json', import.meta.url), json);
process.exitCode = out.ok ? 0 : 1;
`;

/**
 * Best effort only (see docs/sandbox.md): without --allow-net in this Node, the permission model does not
 * restrict the network, so the network modules and globals are taken away before the snippet loads.
 */
const NO_NET = `import * as mod from 'node:module';
const blocked = new Set(['net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns', 'dns/promises', 'undici', 'inspector', 'inspector/promises']);
const bare = (s) => s.replace(/^node:/, '');
const refuse = (s) => { const e = new Error('Network access is not permitted in the Keel sandbox (' + s + ')'); e.code = 'ERR_ACCESS_DENIED'; throw e; };
mod.registerHooks?.({ resolve(specifier, context, next) { if (blocked.has(bare(specifier))) refuse(specifier); return next(specifier, context); } });
const getBuiltin = process.getBuiltinModule?.bind(process);
if (getBuiltin) process.getBuiltinModule = (id) => (blocked.has(bare(String(id))) ? refuse(id) : getBuiltin(id));
for (const name of ['fetch', 'WebSocket', 'EventSource', 'Request', 'Response', 'Headers']) {
  try { Object.defineProperty(globalThis, name, { value: undefined, configurable: false, writable: false }); } catch {}
}
`;

function capped(max: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  return {
    push(b: Buffer) {
      if (size >= max) {
        truncated = true;
        return;
      }
      const take = b.subarray(0, max - size);
      if (take.length < b.length) truncated = true;
      chunks.push(take);
      size += take.length;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
    get truncated() {
      return truncated;
    },
  };
}

/** Runs a body in the sandbox. Never throws for what the snippet does; throws CompileError when it does not compile. */
export async function runSandboxed(req: SandboxRequest): Promise<SandboxResult> {
  const compiled = await compileBody(req.body);
  // The real path: the permission model compares resolved paths (macOS's /var is a symlink).
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'keel-sandbox-')));
  const started = Date.now();
  try {
    await writeFile(join(dir, 'snippet.mjs'), compiled);
    await writeFile(join(dir, 'main.mjs'), RUNNER);
    const argv = [permissionFlag(), `--allow-fs-read=${dir}`, `--allow-fs-write=${dir}`, `--max-old-space-size=${HEAP_MB}`];
    if (process.allowedNodeEnvironmentFlags.has('--disable-warning')) argv.push('--disable-warning=ExperimentalWarning');
    const layers = { namespace: req.networkLayers?.namespace ?? true, modules: req.networkLayers?.modules ?? true };
    if (!req.network && layers.modules) {
      await writeFile(join(dir, 'no-net.mjs'), NO_NET);
      argv.push('--import', pathToFileURL(join(dir, 'no-net.mjs')).href);
    }
    argv.push(join(dir, 'main.mjs'), JSON.stringify(req.args ?? {}));
    const env: Record<string, string> = { HOME: dir };
    if (process.env.PATH) env.PATH = process.env.PATH;
    env.LANG = process.env.LANG ?? 'C.UTF-8';
    // Its own pid namespace always (and a fresh /proc): no process outside is visible, so none can be signalled or
    // inspected; an empty network namespace too unless the network is granted. `unshare --fork --kill-child` is the
    // parent of the sandboxed Node, and the Node dies with it.
    const withNet = !req.network && layers.namespace;
    const kinds: NamespaceKind[] = withNet ? ['net', 'pid'] : ['pid'];
    const ns = await (req.isolation ?? namespaceSupport)(kinds);
    if (!ns.available) throw isolationRefusal(ns.reason);
    const networkBlock: SandboxResult['networkBlock'] = req.network ? 'none' : withNet ? 'namespace' : 'modules';
    const [cmd, ...cmdArgs] = [...ns.prefix, process.execPath, ...argv];
    // A session and process group of its own: `process.kill(0, ...)` (the caller's group) must not reach Keel.
    const child = spawn(cmd!, cmdArgs, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true, detached: true });
    const out = capped(req.maxOutputBytes);
    const err = capped(req.maxOutputBytes);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let timedOut = false;
    const kill = () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        // The whole group: unshare, and with --kill-child the namespace's init and everything in it.
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, req.timeoutMs);
    req.signal?.addEventListener('abort', kill, { once: true });
    const [exitCode, signal] = await new Promise<[number | null, string | null]>((resolve) => {
      child.once('error', (e) => {
        err.push(Buffer.from(String(e)));
        resolve([null, null]);
      });
      child.once('close', (code, sig) => resolve([code, sig]));
    });
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', kill);
    const base = {
      exitCode,
      signal,
      timedOut,
      stdout: out.text(),
      stderr: err.text(),
      truncated: out.truncated || err.truncated,
      durationMs: Date.now() - started,
      networkBlock,
    };
    if (timedOut) return { ...base, ok: false, error: `Killed after ${req.timeoutMs} ms (timeout).` };
    if (req.signal?.aborted) return { ...base, ok: false, error: 'Cancelled.' };
    let parsed: { ok: boolean; result?: unknown; error?: string } | undefined;
    try {
      const raw = await readFile(join(dir, 'result.json'), 'utf8');
      parsed =
        raw.length > req.maxOutputBytes
          ? { ok: false, error: `The result is larger than ${req.maxOutputBytes} bytes.` }
          : (JSON.parse(raw) as typeof parsed);
    } catch {
      parsed = undefined;
    }
    if (!parsed) return { ...base, ok: false, error: `The snippet exited (code ${exitCode ?? signal}) without returning a result.` };
    return parsed.ok
      ? { ...base, ok: exitCode === 0, result: parsed.result }
      : { ...base, ok: false, error: parsed.error ?? 'run() failed' };
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
