/**
 * The model router behind the `llm` capability: which provider and model serve a call (`llmProvider`, or
 * inference from the model name), the fallback chain when a call fails, a timeout on every call, and the token
 * usage files. Provider plugins do their own retries (429 and 5xx with Retry-After); the router steps in after.
 *
 * Fallback order when a call fails (after the provider's own retries), each step logged:
 * 1. the same provider with `fallbackModelNames[<provider>]`;
 * 2. the first other provider, in the order providerA ... providerK and then any custom provider named in
 *    `providerModelNames`, that is running, configured, and has a model in `providerModelNames`.
 * A cancelled call (the action was aborted) is never retried elsewhere.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { performance } from 'node:perf_hooks';
import type {
  ChatRequest,
  ChatResponse,
  ConfigApi,
  EmbedRequest,
  LlmCapability,
  Logger,
  ModelCallEvent,
  ModelProbe,
  PluginContext,
  ProviderCapability,
} from '../../../sdk/index.js';
import { inferenceError, inferProvider, PROVIDER_IDS } from './infer.js';
import { redact } from './redact.js';
import { UsageLog } from './usage.js';
import { errorMessage } from '../../../sdk/errors.js';
import { linkSignals } from '../../../sdk/retry.js';
import type manifest from '../manifest.js';

const coded = errorsFor('agent');

export interface RouterDeps {
  config: ConfigApi<typeof manifest>;
  use: PluginContext['use'];
  log: Logger;
  home: string;
  /** Told about every provider call once it answered or failed (the `modelCall` hook; action timelines). */
  onCall?(call: ModelCallEvent): void;
}

export interface Route {
  id: string;
  provider: ProviderCapability;
  model: string;
}

export type LlmChatRequest = Parameters<LlmCapability['chat']>[0];

/** Who a call is for, for the usage log. */
export interface CallMeta {
  actionId?: string;
}

const EMBED_PROVIDERS = ['providerA', 'providerB', 'providerG'];

function errorText(e: unknown): string {
  return redact(errorMessage(e));
}

export class Router {
  readonly usage: UsageLog;
  private lastRemembered = '';

  constructor(private readonly d: RouterDeps) {
    this.usage = new UsageLog(
      () => ({ log: this.path('tokenLogPath'), summary: this.path('tokenUsagePath') }),
      (e) => d.log.warn(`Could not write token usage: ${errorText(e)}`),
      () => Number(d.config.get('logFileMaxMB') ?? 0) * 1048576,
    );
  }

  private cfg<T>(key: string): T | undefined {
    try {
      const v = this.d.config.get<T>(key);
      return v === null || v === '' ? undefined : v;
    } catch {
      return undefined;
    }
  }

  private path(key: 'tokenLogPath' | 'tokenUsagePath'): string {
    const raw = this.d.config.get(key);
    return raw.replace(/^\$KEEL_HOME(?=\/|$)/, this.d.home).replace(/^~(?=\/|$)/, process.env.HOME ?? '~');
  }

  private remembered(): Record<string, string> {
    const m = this.cfg<Record<string, string>>('providerModelNames');
    return m && typeof m === 'object' ? m : {};
  }

  /** Provider id and model for a purpose, from configuration alone (no provider is asked). Throws a clear Error. */
  target(purpose: 'main' | 'fast' = 'main'): { id: string; model: string } {
    if (purpose === 'fast') {
      const fast = this.cfg<string>('fastModelName');
      if (fast) {
        const inf = inferProvider(fast);
        if (inf.kind === 'match') return { id: inf.provider, model: fast };
        return { id: this.target('main').id, model: fast };
      }
    }
    const llmProvider = this.cfg<string>('llmProvider');
    const modelName = this.cfg<string>('modelName');
    const remembered = this.remembered();
    if (llmProvider) {
      let model = modelName;
      if (modelName) {
        // modelName names another provider's model (the provider was switched): restore this provider's last model.
        const inf = inferProvider(modelName);
        if (inf.kind === 'match' && inf.provider !== llmProvider && remembered[llmProvider]) model = remembered[llmProvider];
      } else model = remembered[llmProvider];
      if (!model)
        throw coded(
          'KEEL_E_NOT_CONFIGURED',
          `no model configured for ${llmProvider}: set modelName, e.g. keel config set modelName <model>`,
        );
      return { id: llmProvider, model };
    }
    if (!modelName) {
      // No choice made: the first configured provider whose last model is remembered.
      for (const id of this.alternativeOrder()) {
        const model = remembered[id];
        if (model && this.usable(id)) return { id, model };
      }
      throw coded(
        'KEEL_E_NOT_CONFIGURED',
        'no model configured: set modelName (and llmProvider or a provider key), e.g. keel config set modelName gpt-4o-mini',
      );
    }
    const inf = inferProvider(modelName);
    if (inf.kind !== 'match') throw coded('KEEL_E_NOT_CONFIGURED', inferenceError(modelName, inf));
    return { id: inf.provider, model: modelName };
  }

  /** The running, configured provider for an id, or a clear Error that names what is missing. */
  provider(id: string): ProviderCapability {
    const p = this.d.use(`provider:${id}`);
    if (!p) {
      throw coded(
        'KEEL_E_NOT_CONFIGURED',
        `${id} is not available: no running plugin provides "provider:${id}" (see keel plugins: it may be disabled, denied by pluginAllowList/pluginDenyList, or failed to start)`,
      );
    }
    const c = p.configured();
    if (!c.ok) throw coded('KEEL_E_NOT_CONFIGURED', redact(`${id} is not configured: ${c.missing}`));
    return p;
  }

  private usable(id: string): boolean {
    try {
      this.provider(id);
      return true;
    } catch {
      return false;
    }
  }

  resolve(purpose: 'main' | 'fast' = 'main'): Route {
    const t = this.target(purpose);
    return { ...t, provider: this.provider(t.id) };
  }

  private currentCache: { at: number; value: ReturnType<LlmCapability['current']> } | undefined;

  /** Forget the cached answer of current() (a setting changed). */
  invalidate(): void {
    this.currentCache = undefined;
  }

  /**
   * current() for status readers (the `llm` capability): cached for half a second and dropped on any config or
   * plugin change, because status endpoints poll it and an unconfigured router answers by throwing inside.
   */
  cachedCurrent(): ReturnType<LlmCapability['current']> {
    const now = Date.now();
    if (this.currentCache && now - this.currentCache.at < 500) return this.currentCache.value;
    const value = this.current();
    this.currentCache = { at: now, value };
    return value;
  }

  current(): ReturnType<LlmCapability['current']> {
    let t: { id: string; model: string } | undefined;
    try {
      t = this.target('main');
      this.provider(t.id);
      return { provider: t.id, model: t.model };
    } catch (e) {
      return { ...(t ? { provider: t.id, model: t.model } : {}), missing: errorText(e) };
    }
  }

  private alternativeOrder(): string[] {
    const custom = Object.keys(this.remembered()).filter((k) => !(PROVIDER_IDS as readonly string[]).includes(k));
    return [...PROVIDER_IDS, ...custom];
  }

  private alternative(exclude: string): Route | undefined {
    const remembered = this.remembered();
    for (const id of this.alternativeOrder()) {
      const model = remembered[id];
      if (id === exclude || !model) continue;
      try {
        return { id, model, provider: this.provider(id) };
      } catch {
        // not running or not configured: not an alternative
      }
    }
    return undefined;
  }

  /** One chat through the fallback chain. Errors are plain Errors with a readable, key-free message. */
  async chat(req: LlmChatRequest, meta: CallMeta = {}): Promise<ChatResponse & { provider: string }> {
    const purpose = req.purpose ?? 'main';
    let primary: Route;
    if (req.model) {
      const inf = inferProvider(req.model);
      const id = inf.kind === 'match' ? inf.provider : this.target(purpose).id;
      primary = { id, model: req.model, provider: this.provider(id) };
    } else primary = this.resolve(purpose);

    const failures: string[] = [];
    const attempt = async (route: Route): Promise<(ChatResponse & { provider: string }) | undefined> => {
      try {
        return await this.call(route, req, purpose, meta);
      } catch (e) {
        if (req.signal?.aborted) throw coded('KEEL_E_CANCELLED', `the model call was cancelled: ${errorText(req.signal.reason ?? e)}`);
        const msg = errorText(e);
        failures.push(`${route.id} model ${route.model}: ${msg}`);
        return undefined;
      }
    };

    const first = await attempt(primary);
    if (first) {
      if (purpose === 'main' && !req.model) this.remember(primary);
      return first;
    }
    const fb = this.cfg<Record<string, string>>('fallbackModelNames')?.[primary.id];
    if (fb && fb !== primary.model) {
      this.d.log.warn(`${primary.id} model ${primary.model} failed (${failures.at(-1)}); trying its fallback model ${fb}.`);
      const r = await attempt({ ...primary, model: fb });
      if (r) return r;
    }
    const alt = this.alternative(primary.id);
    if (alt) {
      this.d.log.warn(`${primary.id} failed (${failures.at(-1)}); trying the alternative provider ${alt.id} with model ${alt.model}.`);
      const r = await attempt(alt);
      if (r) return r;
    }
    const hint =
      fb || alt
        ? ''
        : ` (no fallback: set fallbackModelNames.${primary.id}, or configure another provider and its model in providerModelNames)`;
    const message = `the model call failed: ${failures.join('; then ')}${hint}`;
    this.d.log.error(message);
    throw coded('KEEL_E_PROVIDER_FAILED', message);
  }

  /**
   * One short call to the main route, without fallback (a fallback answering would hide a broken primary), and
   * what to change when it fails. See {@link LlmCapability.probe}.
   */
  async probe(opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ModelProbe> {
    let route: Route;
    try {
      route = this.resolve('main');
    } catch (e) {
      const c = this.current();
      return {
        ok: false,
        ...(c.provider ? { provider: c.provider } : {}),
        ...(c.model ? { model: c.model } : {}),
        error: errorText(e),
        fix: 'Set what the error names: keel config set <key> <value>, or the dashboard (Overview: Set up a model).',
      };
    }
    const timeoutMs = opts.timeoutMs ?? Math.min(PROBE_TIMEOUT_MS, this.d.config.get('llmTimeoutMs'));
    const started = performance.now();
    try {
      const res = await this.call(
        route,
        { messages: PROBE_MESSAGES, maxTokens: 16, timeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) },
        'probe',
        {},
      );
      const ms = Math.round(performance.now() - started);
      return { ok: true, provider: route.id, model: route.model, ms, reply: (res.text ?? '').trim().slice(0, 80) };
    } catch (e) {
      const ms = Math.round(performance.now() - started);
      // a ProviderError, or anything shaped like one (a provider plugin built against another copy of the SDK)
      const info = (e as { info?: { status?: unknown } } | undefined)?.info;
      const status = typeof info?.status === 'number' ? info.status : undefined;
      const error = errorText(e);
      return {
        ok: false,
        provider: route.id,
        model: route.model,
        ms,
        ...(status !== undefined ? { status } : {}),
        error,
        fix: probeFix(route, status, error),
      };
    }
  }

  /** One provider call under the timeout and the caller's signal; records token usage either way. */
  private async call(route: Route, req: LlmChatRequest, purpose: string, meta: CallMeta): Promise<ChatResponse & { provider: string }> {
    const timeoutMs = req.timeoutMs ?? this.d.config.get('llmTimeoutMs');
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error(`${route.id} did not answer within ${timeoutMs} ms`)), timeoutMs);
    // req.signal may live long (the agent's own): linked for this call only, unlinked in the finally
    const link = linkSignals([req.signal, timeout.signal]);
    const signal = link.signal;
    const started = performance.now();
    const base = { provider: route.id, model: route.model, purpose, ...(meta.actionId ? { actionId: meta.actionId } : {}) };
    try {
      const chatReq: ChatRequest = {
        model: route.model,
        messages: req.messages,
        ...(req.tools ? { tools: req.tools } : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
        ...(req.maxTokens !== undefined ? { maxTokens: req.maxTokens } : {}),
        signal,
        timeoutMs,
      };
      const res = await untilAborted(route.provider.chat(chatReq), signal);
      const used = {
        ok: true,
        inputTokens: res.usage?.inputTokens ?? 0,
        outputTokens: res.usage?.outputTokens ?? 0,
        durationMs: Math.round(performance.now() - started),
      };
      void this.usage.record({ timestamp: new Date().toISOString(), ...base, ...used });
      this.told({ ...base, ...used });
      return { ...res, text: res.text ?? '', toolCalls: res.toolCalls ?? [], provider: route.id };
    } catch (e) {
      const failed = {
        ok: false,
        inputTokens: 0,
        outputTokens: 0,
        durationMs: Math.round(performance.now() - started),
        error: errorText(e).slice(0, 300),
      };
      void this.usage.record({ timestamp: new Date().toISOString(), ...base, ...failed });
      this.told({ ...base, ...failed });
      throw e;
    } finally {
      clearTimeout(timer);
      link.dispose();
    }
  }

  /** A listener that throws never changes the call's outcome. */
  private told(call: ModelCallEvent): void {
    try {
      this.d.onCall?.(call);
    } catch (e) {
      this.d.log.warn(`A modelCall listener failed: ${errorText(e)}`);
    }
  }

  /** Record the model that worked with a provider, so switching back restores it (providerModelNames). */
  private remember(route: Route): void {
    const key = `${route.id}\u0000${route.model}`;
    if (this.lastRemembered === key) return;
    this.lastRemembered = key;
    const map = this.remembered();
    if (map[route.id] === route.model) return;
    this.d.config
      .set(
        'providerModelNames',
        { ...map, [route.id]: route.model },
        { kind: 'agent', reason: 'remember the last model used with this provider' },
      )
      .catch((e: unknown) => this.d.log.warn(`Could not remember the model of ${route.id}: ${errorText(e)}`));
  }

  async embed(req: EmbedRequest): Promise<{ vectors: number[][]; provider: string; model: string } | undefined> {
    for (const id of EMBED_PROVIDERS) {
      const p = this.d.use(`provider:${id}`);
      if (!p?.embed || !p.configured().ok) continue;
      const r = await p.embed(req);
      return { vectors: r.vectors, provider: id, model: r.model };
    }
    return undefined;
  }

  canEmbed(): boolean {
    return EMBED_PROVIDERS.some((id) => {
      const p = this.d.use(`provider:${id}`);
      return Boolean(p?.embed && p.configured().ok);
    });
  }

  /** The `llm` capability. */
  capability(): LlmCapability {
    return {
      current: () => this.cachedCurrent(),
      chat: (req) => this.chat(req),
      embed: (req) => this.embed(req),
      canEmbed: () => this.canEmbed(),
      probe: (opts) => this.probe(opts),
    };
  }
}

/** A probe waits at most this long (or llmTimeoutMs when shorter). */
const PROBE_TIMEOUT_MS = 30_000;
const PROBE_MESSAGES = [
  { role: 'system' as const, content: 'This is a connection check. Answer with the single word OK.' },
  { role: 'user' as const, content: 'Say OK.' },
];

/** The settings that hold a provider's credentials and address, for a fix that names them. */
function credentialsOf(id: string): { keys: string; url: string } {
  if (!(PROVIDER_IDS as readonly string[]).includes(id)) return { keys: `the credentials of ${id}`, url: `the address of ${id}` };
  const url = id === 'providerG' ? 'providerGApiUrl' : `${id}BaseUrl`;
  if (id === 'providerD') return { keys: 'providerDAccessKeyId and providerDSecretAccessKey (or the AWS environment)', url };
  if (id === 'providerG') return { keys: 'the Ollama server (providerGApiUrl)', url };
  return { keys: `${id}ApiKey (or ${id.toUpperCase()}_API_KEY)`, url };
}

/** What to change after a failed probe, by the provider's answer. */
function probeFix(route: { id: string; model: string }, status: number | undefined, error: string): string {
  const c = credentialsOf(route.id);
  if (status === 401 || status === 403) return `${route.id} refused the credentials: check ${c.keys}.`;
  if (status === 404)
    return `${route.id} does not know the model "${route.model}", or ${c.url} points elsewhere: check modelName (and llmProvider).`;
  if (status === 400 || status === 422)
    return `${route.id} refused the request for "${route.model}": check that modelName names a chat model it serves.`;
  if (status === 429) return `${route.id} is rate limiting this key or the account is out of quota: try again later, or check the account.`;
  if (status !== undefined && status >= 500) return `${route.id} had a problem on its side (HTTP ${status}): try again later.`;
  if (/did not answer within|timed out/i.test(error))
    return `${route.id} did not answer in time: check that this machine reaches it (${c.url}), or try again.`;
  if (/connection failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed/i.test(error))
    return `This machine could not reach ${route.id}: check the network, a proxy, and ${c.url} if you set it.`;
  return `Check the error above; keel doctor lists the model settings.`;
}

/** Rejects as soon as `signal` aborts, even if the provider ignores it. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
