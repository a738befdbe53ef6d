/** Memory tests: a real kernel with the memory plugin alone (plus an optional scripted `llm` plugin). */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Actor, MemoryCapability } from '../../../sdk/index.js';
import type { MemoryService } from '../../../plugins/memory/src/service.js';
import { rm, tmp } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const REGISTRY = Symbol.for('keel.memoryTestLlm');

export interface LlmScript {
  chat?: (req: { messages: Array<{ role: string; content: string }>; purpose?: string }) => string | Promise<string>;
  embed?: (text: string) => number[];
  /** Milliseconds each embedding call of more than one text takes (a slow local model). */
  embedDelayMs?: number;
  /** The embedding model's name (default fake-embed). */
  embedModel?: string;
  /** Every embedding call of more than one text (a batch of memories, not a query) fails with this message while set. */
  embedFails?: string;
  chats?: Array<{ messages: Array<{ role: string; content: string }>; purpose?: string }>;
  embeds?: number[];
}

export interface MemoryHarness {
  home: string;
  kernel: Kernel;
  memory: MemoryCapability & MemoryService;
  run(skill: string, args: Record<string, unknown>, actor?: Actor): Promise<{ success: boolean; result: string; code?: string }>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startMemory(
  opts: { config?: string; llm?: LlmScript; home?: string; withAgent?: boolean } = {},
): Promise<MemoryHarness> {
  const home = opts.home ?? tmp('keel-memory-');
  const empty = tmp('keel-memory-builtins-');
  if (opts.config !== undefined) writeFileSync(join(home, 'keel.config.yaml'), opts.config, { mode: 0o600 });
  if (opts.llm) {
    mkdirSync(join(home, 'plugins'), { recursive: true });
    cpSync(join(import.meta.dirname, 'fake-llm'), join(home, 'plugins', 'fake-llm'), { recursive: true });
    const g = globalThis as unknown as Record<symbol, Map<string, LlmScript> | undefined>;
    (g[REGISTRY] ??= new Map()).set(home, opts.llm);
  }
  const builtins = await discoverBuiltins(join(ROOT, 'plugins'));
  const extra = builtins.filter((c) => c.id === 'memory' || (opts.withAgent && c.id === 'agent'));
  const start = () =>
    startKernel({ home, builtinDir: empty, extraPlugins: extra, env: {}, watchSkills: false, logs: new LogSink({ quiet: true }) });
  const h: MemoryHarness = {
    home,
    kernel: await start(),
    get memory() {
      return h.kernel.registry.use<MemoryCapability & MemoryService>('memory')!;
    },
    async run(skill, args, actor) {
      return h.kernel.execute(skill, args, actor ?? h.kernel.operator);
    },
    async restart() {
      await h.kernel.stop();
      h.kernel = await start();
    },
    async close() {
      await h.kernel.stop();
      rm(empty);
      if (!opts.home) rm(home);
    },
  };
  return h;
}

export const user = (channel: string, userId: string): Actor => ({ kind: 'user', channel, userId });

/** Words the concept embedding maps to one concept each: "car" and "automobile" are close with no word shared. */
const CONCEPTS: Record<string, number> = {
  car: 0,
  automobile: 0,
  vehicle: 0,
  drive: 0,
  pasta: 1,
  cooking: 1,
  spaghetti: 1,
  rain: 2,
  weather: 2,
};

/** A tiny "semantic" embedding for tests: one dimension per concept, other words add a little noise. */
export function conceptEmbed(text: string): number[] {
  const v = [0.01, 0.01, 0.01, 0.01];
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const c = CONCEPTS[w];
    if (c !== undefined) v[c]! += 1;
    else v[3]! += 0.05;
  }
  return v;
}
