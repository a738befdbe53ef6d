/**
 * The memory service: the `memory` capability (counts, list, record, context, reset) and the hook taps that turn
 * the agent's steps into short memory. Consolidation (consolidation.ts) and recall (recall.ts) live apart.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Action, Actor, LlmCapability, MemoryCapability, MemoryEntry, PluginContext } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/errors.js';
import type manifest from '../manifest.js';
import { AUTONOMY_SOURCE, OPERATOR_SOURCES } from '../../../sdk/actor.js';
import { Consolidator, type SweepResult } from './consolidation.js';
import { describeContact, readContact } from './contacts.js';
import { appendDaily } from './daily.js';
import { extractiveSummary, longEntry, newId, type RecallHit } from './entries.js';
import { KeywordIndex } from './keyword-index.js';
import { longFileWrites, readSections } from './long-files.js';
import { MemoryRecall } from './recall.js';
import { channelOf, isAdmin, principal, sessionKey } from './scope.js';
import { MemoryStore } from './store.js';
import { cap } from './text.js';

const coded = errorsFor('memory');

export { extractiveSummary, longEntry, newId, type RecallHit };

/** How long status counts may lag a change made by another Keel process on the same home. */
const COUNTS_TTL_MS = 250;
/** The idle-session sweep runs this long after the plugin starts (not in the way of the start itself)... */
export const IDLE_SWEEP_DELAY_MS = 60_000;
/** ...and then this often. */
export const IDLE_SWEEP_EVERY_MS = 3_600_000;

/** The actor an action runs for (absent: who pushed it, by its source; unknown chat senders are plain users). */
export function actorOfAction(a: Pick<Action, 'source' | 'metadata'>): Actor {
  const m = a.metadata?.actor as Actor | undefined;
  if (m && typeof m === 'object' && typeof m.kind === 'string') return m;
  if (OPERATOR_SOURCES.has(a.source)) return { kind: 'operator', channel: a.source };
  if (a.source === AUTONOMY_SOURCE) return { kind: 'agent', channel: 'autonomy' };
  return { kind: 'user', channel: a.source };
}

export class MemoryService implements Required<MemoryCapability> {
  readonly store: MemoryStore;
  readonly index = new KeywordIndex();
  private actions = new Map<string, { actor: Actor; step: number }>();
  private pending = new Set<Promise<unknown>>();
  private readonly consolidator: Consolidator;
  /** Recall (public for tests: its long-memory vector cache). */
  readonly recaller: MemoryRecall;
  /** The clock the idle sweep reads (tests move it). */
  now: () => number = () => Date.now();
  private sweepTimer: NodeJS.Timeout | undefined;
  /**
   * Whether the timed idle sweep runs in this process: only where the agent runs, the one process that writes
   * memory (a separate `keel gateway` on the same home reads it, and two writers are not coordinated: store.ts).
   * Tests replace it.
   */
  sweepsHere: () => boolean = () => this.ctx.use('kernel:info')?.runner() !== undefined;

  constructor(readonly ctx: PluginContext<typeof manifest>) {
    this.store = new MemoryStore(ctx.home);
    this.store.onReload = () => this.reindex();
    this.consolidator = new Consolidator({
      ctx,
      store: this.store,
      index: this.index,
      llm: () => this.llm(),
      track: (p) => this.track(p),
    });
    this.recaller = new MemoryRecall({
      ctx,
      store: this.store,
      index: this.index,
      embedder: () => this.embedder(),
      track: (p) => this.track(p),
    });
  }

  open(): void {
    this.store.open();
    for (const p of this.store.problems) this.ctx.log.error(p);
    this.reindex();
  }

  private reindex(): void {
    this.index.clear();
    for (const e of this.store.short) this.index.add(e);
    for (const e of this.store.episodic) this.index.add(e);
  }

  /** The model, when one is configured (the agent plugin provides `llm`; absent or unconfigured: none). */
  llm(): LlmCapability | undefined {
    const l = this.ctx.use('llm');
    if (!l) return undefined;
    try {
      const c = l.current();
      if ('missing' in c && c.missing) return undefined;
    } catch {
      return undefined;
    }
    return l;
  }

  embedder(): LlmCapability | undefined {
    const l = this.ctx.use('llm');
    try {
      return l && typeof l.embed === 'function' && l.canEmbed() ? l : undefined;
    } catch {
      return undefined;
    }
  }

  /** Tracks background work so stop() and tests can wait for it. */
  track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p)).catch(() => undefined);
    return p;
  }

  /** Ends background work that would otherwise go on (embedding older memories, the idle sweep) after its current step. */
  stopBackground(): void {
    this.stopIdleSweep();
    this.consolidator.stop();
    this.recaller.stop();
  }

  /**
   * Runs the idle-session sweep after `delayMs`, then every `everyMs`, when `sweepsHere()` (unref'd timers: they
   * never keep the process alive; the next run is armed when one ends, so two never overlap).
   */
  startIdleSweep(delayMs = IDLE_SWEEP_DELAY_MS, everyMs = IDLE_SWEEP_EVERY_MS): void {
    this.stopIdleSweep();
    const arm = (ms: number): void => {
      const timer = setTimeout(() => {
        void (this.sweepsHere() ? this.sweepIdle() : Promise.resolve())
          .catch((e) => this.ctx.log.warn(`memory: the idle-session sweep failed: ${errorMessage(e)}`))
          .finally(() => {
            if (this.sweepTimer === timer) arm(everyMs);
          });
      }, ms);
      timer.unref();
      this.sweepTimer = timer;
    };
    arm(delayMs);
  }

  stopIdleSweep(): void {
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /**
   * Consolidates the short memories of every session idle for `memorySessionIdleHours` into episodic summaries
   * (consolidation.ts); logs one line when it did anything.
   */
  async sweepIdle(): Promise<SweepResult> {
    const r = await this.track(this.consolidator.sweepIdle(this.now()));
    if (r.sessions)
      this.ctx.log.info(
        `memory: ${r.entries} short memories of ${r.sessions} session(s) idle for ${this.ctx.config.get('memorySessionIdleHours')} h consolidated into episodic summaries.`,
      );
    return r;
  }

  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
    await this.store.flushed();
  }

  // ------------------------------------------------------------------ capability

  /**
   * Polled by every `GET /api/status` and WebSocket status: the answer is kept while nothing changed in this
   * process, and for at most COUNTS_TTL_MS against another process writing the same home (five file stats per
   * request were the largest cost of the status route).
   */
  counts(): { short: number; episodic: number; long: number } {
    const now = performance.now();
    const c = this.countsCache;
    if (c && now - c.at < COUNTS_TTL_MS && c.version === this.store.version && c.longWrites === longFileWrites()) return { ...c.value };
    this.store.refresh();
    const value = { short: this.store.short.length, episodic: this.store.episodic.length, long: readSections(this.ctx.home).length };
    this.countsCache = { at: now, version: this.store.version, longWrites: longFileWrites(), value };
    return { ...value };
  }
  private countsCache:
    | { at: number; version: number; longWrites: number; value: { short: number; episodic: number; long: number } }
    | undefined;

  list(opts: { type?: MemoryEntry['type']; limit: number; search?: string }): { memories: MemoryEntry[]; total: number } {
    this.store.refresh();
    let all: MemoryEntry[] = [];
    if (!opts.type || opts.type === 'short') all.push(...this.store.short);
    if (!opts.type || opts.type === 'episodic') all.push(...this.store.episodic);
    if (!opts.type || opts.type === 'long') all.push(...readSections(this.ctx.home).map(longEntry));
    const needle = opts.search?.trim().toLowerCase();
    if (needle) all = all.filter((e) => e.content.toLowerCase().includes(needle));
    all.sort((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : 0));
    const limit = Number.isInteger(opts.limit) && opts.limit > 0 ? opts.limit : 50;
    return { memories: all.slice(0, limit), total: all.length };
  }

  async record(input: {
    content: string;
    actionId?: string;
    step?: number;
    actor?: Actor;
    channel?: string;
    kind?: string;
  }): Promise<MemoryEntry> {
    if (typeof input?.content !== 'string' || !input.content.trim())
      throw coded('KEEL_E_INVALID_ARGUMENT', 'A memory needs non-empty content.');
    this.store.refresh(); // another Keel process on this home may have written since
    const known = input.actionId ? this.actions.get(input.actionId) : undefined;
    const actor = input.actor ?? known?.actor;
    const who = principal(actor);
    const entry: MemoryEntry = {
      id: newId('short'),
      type: 'short',
      content: cap(input.content.trim()),
      timestamp: new Date().toISOString(),
      metadata: {
        actionId: input.actionId ?? '',
        step: Number.isInteger(input.step) ? (input.step as number) : 0,
        channel: input.channel ?? channelOf(actor),
        session: sessionKey(this.ctx, actor),
        ...(who?.userId ? { userId: who.userId } : {}),
        ...(input.kind ? { kind: input.kind } : {}),
      },
    };
    await this.store.commit({ op: 'add', entry });
    this.index.add(entry);
    void appendDaily(this.ctx.home, 'short', String(entry.metadata.channel), entry.content).catch(() => undefined);
    this.maybeConsolidate(String(entry.metadata.session));
    return entry;
  }

  async context(opts: { actor?: Actor; actionId?: string; task: string }): Promise<string> {
    this.store.refresh();
    const actor = opts.actor ?? (opts.actionId ? this.actions.get(opts.actionId)?.actor : undefined);
    const session = sessionKey(this.ctx, actor);
    const limit = this.ctx.config.get('memoryContextLimit');
    const mine = [...this.store.short, ...this.store.episodic]
      .filter((e) => e.metadata.session === session)
      .sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0))
      .slice(-limit);
    const parts: string[] = [];
    const episodes = mine.filter((e) => e.type === 'episodic');
    const recent = mine.filter((e) => e.type === 'short');
    if (episodes.length) parts.push('Earlier (episodic summaries):', ...episodes.map((e) => `- [${e.timestamp}] ${e.content}`));
    if (recent.length) parts.push('Recent steps (short memory):', ...recent.map((e) => `- [${e.timestamp}] ${e.content}`));
    if (actor === undefined || isAdmin(this.ctx, actor)) {
      const profile = readSections(this.ctx.home, ['USER.md']).filter((s) => s.body);
      if (profile.length) parts.push('User profile (USER.md):', ...profile.map((s) => `${s.heading}:\n${s.body}`));
    }
    const who = principal(actor);
    if (who?.kind === 'user' && who.userId) {
      const c = readContact(this.ctx.home, who.channel, who.userId);
      if (c) parts.push('Contact profile of the sender:', describeContact(c));
    }
    return parts.join('\n');
  }

  async reset(): Promise<void> {
    await this.settle();
    await this.store.clear();
    this.index.clear();
    this.recaller.clear();
    const { removeMemoryFiles } = await import('./reset.js');
    removeMemoryFiles(this.ctx.home, { keepStore: true });
  }

  // ------------------------------------------------------------------ hooks

  tapHooks(): void {
    const h = this.ctx.hooks;
    h.tap('actionStarted', (action: Action) => {
      this.actions.set(action.id, { actor: actorOfAction(action), step: 0 });
      return this.track(
        this.record({ content: `Task: ${action.task}`, actionId: action.id, step: 0, kind: 'task' }).catch((e) => this.warn(e)),
      ).then(() => undefined);
    });
    h.tap('observation', (ev) => {
      if (!ev.actionId) return;
      const a = this.actions.get(ev.actionId) ?? this.fromQueue(ev.actionId);
      if (!a) return;
      a.step++;
      void this.track(
        this.record({
          content: `${ev.skill ?? 'observation'}: ${ev.result}`,
          actionId: ev.actionId,
          step: a.step,
          actor: a.actor,
          kind: 'observation',
        }).catch((e) => this.warn(e)),
      );
    });
    h.tap('actionSettled', async (action, outcome) => {
      if (outcome.status === 'completed' || outcome.status === 'failed') {
        const a = this.actions.get(action.id) ?? { actor: actorOfAction(action), step: 0 };
        await this.record({
          content: `Result (${outcome.status}): ${outcome.detail ?? ''}`,
          actionId: action.id,
          step: a.step + 1,
          actor: a.actor,
          kind: 'result',
        }).catch((e) => this.warn(e));
      }
      if (outcome.status !== 'retry') this.actions.delete(action.id);
    });
  }

  private fromQueue(id: string): { actor: Actor; step: number } | undefined {
    const action = this.ctx.queue.get(id);
    if (!action) return undefined;
    const a = { actor: actorOfAction(action), step: 0 };
    this.actions.set(id, a);
    return a;
  }

  private warn(e: unknown): void {
    this.ctx.log.warn(`Memory not recorded: ${errorMessage(e)}`);
  }

  // ------------------------------------------------------------------ consolidation and recall (own files)

  maybeConsolidate(session: string): void {
    this.consolidator.maybeConsolidate(session);
  }

  visible(actor: Actor | undefined): ReturnType<MemoryRecall['visible']> {
    return this.recaller.visible(actor);
  }

  recall(query: string, limit: number, actor: Actor | undefined, signal?: AbortSignal): ReturnType<MemoryRecall['recall']> {
    return this.recaller.recall(query, limit, actor, signal);
  }
}
