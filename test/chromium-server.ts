/**
 * Debian's Chromium with its CDP server (`--remote-debugging-port=0`, the DevTools endpoint read from its stderr):
 * the one the whole run shares (started by test/global-setup.ts, its endpoint provided as `keelChromiumCdp`; the
 * dashboard's `openBrowser()` and the CAPTCHA page tests open a fresh BrowserContext in it per file), and the
 * private ones of the browser plugin's engineC tests (test/plugins/browser/harness.ts). Keel never downloads a
 * browser: this is /usr/bin/chromium or nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The CDP endpoint (ws://…) of the run's shared Chromium (test/global-setup.ts); unset when it did not start. */
    keelChromiumCdp: string | undefined;
  }
}

export const CHROMIUM = '/usr/bin/chromium';

/** The flags of DESIGN.md section 9 the test Chromiums run with (headless, no sandbox, nothing phoning home). */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface CdpChromium {
  /** The DevTools WebSocket endpoint, ws://127.0.0.1:port/devtools/browser/… */
  endpoint: string;
  proc: ChildProcess;
  /** Kills it (SIGKILL) and removes its profile. */
  close(): void;
}

/** Starts a Chromium with its CDP server on a free port; `extraArgs` go after CHROMIUM_FLAGS. */
export async function startCdpChromium(extraArgs: readonly string[] = []): Promise<CdpChromium> {
  // Chromium's SingletonSocket lives in TMPDIR, and a Unix socket path may not exceed 107 bytes: under a nested test
  // TMPDIR (CI's own, then the harness's) it did. A short folder of its own under /tmp keeps it short.
  const profile = mkdtempSync('/tmp/kc-');
  const proc = spawn(
    CHROMIUM,
    [...CHROMIUM_FLAGS, ...extraArgs, '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TMPDIR: profile } },
  );
  const removeProfile = () => {
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // a helper process still writing there: /tmp is cleaned anyway
    }
  };
  // A file's worker may end before the 200 ms removal below runs: the profile goes with the process then.
  process.once('exit', removeProfile);
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;
  // stderr stays read for the browser's whole life (a full pipe would stall it).
  const endpoint = await new Promise<string>((resolve, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(`no DevTools line from chromium: ${err}`)), 20_000);
    proc.stderr!.on('data', (d: Buffer) => {
      if (err.length < 65_536) err += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    proc.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    proc.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`chromium exited (${code}): ${err}`));
    });
  }).catch((e: unknown) => {
    close();
    throw e;
  });
  function close(): void {
    if (gone()) return removeProfile();
    proc.once('exit', () => setTimeout(removeProfile, 200).unref());
    proc.kill('SIGKILL');
  }
  return { endpoint, proc, close };
}

/**
 * test/global-setup.ts: starts the run's shared Chromium; its endpoint and how to stop it (undefined: no Chromium
 * here, or it did not start, said on the console; each file then launches its own as before).
 */
export async function startSharedChromium(): Promise<{ endpoint: string; stop(): Promise<void> } | undefined> {
  if (!existsSync(CHROMIUM)) return undefined;
  const c = await startCdpChromium().catch((e: unknown) => {
    console.log(`test set-up: the shared Chromium did not start (${String(e).split('\n')[0]}); each browser file launches its own.`);
    return undefined;
  });
  if (!c) return undefined;
  return {
    endpoint: c.endpoint,
    stop: async () => {
      const exited = new Promise<void>((r) =>
        c.proc.exitCode !== null || c.proc.signalCode !== null ? r() : c.proc.once('exit', () => r()),
      );
      c.close();
      await exited;
      await new Promise((r) => setTimeout(r, 250)); // the profile is removed 200 ms after the exit
    },
  };
}

/**
 * In a test file: a connection to the run's shared Chromium (disconnect with its close(), which leaves the browser
 * up), for the file to open its own BrowserContext in: contexts share no cookies, storage or cache. Undefined
 * when the run has none (the unit tier, or the set-up could not start it) or it cannot be reached: the file then
 * launches a Chromium of its own.
 */
export async function connectSharedChromium(): Promise<Browser | undefined> {
  const endpoint = inject('keelChromiumCdp');
  if (!endpoint) return undefined;
  return chromium.connectOverCDP(endpoint, { timeout: 30_000 }).catch((e: unknown) => {
    console.log(`the run's shared Chromium at ${endpoint} is unreachable (${String(e).split('\n')[0]}); launching one for this file.`);
    return undefined;
  });
}
