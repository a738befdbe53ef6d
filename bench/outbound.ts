/**
 * The outbound-overhead method every channel bench shares (chatA, chatC, chatD): the kit's send (render, ledger,
 * limiter, per-chat order) against the bare library call to the same fake, one message each in turn, which goes
 * first alternating, median of each. Run twice:
 *
 * - `process`: the fake in a process of its own, as the real platform is: Keel's process runs only Keel's and the
 *   client library's code. This is the figure the 1.5x budget applies to.
 * - `inline`: the fake in Keel's own process (the tests' arrangement), reported beside it. Its server work shares
 *   the thread and the CPU caches with the code measured, which adds to whichever side runs code the other does
 *   not (the Markdown parse above all), so it overstates the kit's share.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { median } from './lib.js';

export interface OutboundPair {
  bare(i: number): Promise<unknown>;
  kit(i: number): Promise<unknown>;
}

/** Medians (ms) of `n` interleaved sends each, after `warm` unmeasured ones. */
export async function interleaved(p: OutboundPair, n: number, warm = 100): Promise<{ kit: number; bare: number }> {
  for (let i = 0; i < warm; i++) {
    await p.kit(-1 - i);
    await p.bare(-1 - i);
  }
  const kit: number[] = [];
  const bare: number[] = [];
  const one = async (f: (i: number) => Promise<unknown>, i: number, into: number[]) => {
    const t = performance.now();
    await f(i);
    into.push(performance.now() - t);
  };
  for (let i = 0; i < n; i++) {
    if (i % 2) {
      await one(p.kit, i, kit);
      await one(p.bare, i, bare);
    } else {
      await one(p.bare, i, bare);
      await one(p.kit, i, kit);
    }
  }
  return { kit: median(kit), bare: median(bare) };
}

export type FakeKind = 'telegram' | 'slack' | 'discord';

/** A fake running in a child process; `info` is what it printed (URLs, tokens). */
export interface HostedFake<I> {
  info: I;
  close(): Promise<void>;
}

/** Starts `bench/fake-host.ts <kind> ...args` (same runtime and loader as this process) and reads its info line. */
export async function hostFake<I>(kind: FakeKind, args: string[] = []): Promise<HostedFake<I>> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...process.execArgv, new URL('./fake-host.ts', import.meta.url).pathname, kind, ...args],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let buf = '';
  const info = await new Promise<I>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`fake-host ${kind} exited (${code}) before it was ready`)));
    child.stdout!.on('data', (d: Buffer) => {
      buf += String(d);
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)) as I);
    });
  });
  return {
    info,
    async close() {
      if (child.exitCode !== null) return;
      child.stdin!.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await once(child, 'exit');
      clearTimeout(t);
    },
  };
}
