/**
 * Where the doctor's facts come from: the running kernel (system_check), or the configuration alone
 * (`keel doctor`, which must not start the kernel: that would connect channels and open ports).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_COMMAND_ALLOW_LIST, listChannels, type CommandContext, type PluginContext } from '../../../sdk/index.js';
import type { DoctorSources } from './report.js';

/** From inside a running kernel. */
export function kernelSources(ctx: PluginContext): DoctorSources {
  const info = ctx.use('kernel:info');
  const declared = new Set(info?.configKeys().map((k) => k.key) ?? []);
  const logs = info?.logs() ?? [];
  return {
    source: 'kernel',
    home: ctx.home,
    version: info?.version ?? ctx.version,
    ...(info ? { startedAt: info.startedAt, agentRunning: info.agentRunning() } : {}),
    processes: liveProcesses(ctx.home),
    ...(info ? { plugins: info.plugins() } : {}),
    get: (k) => (declared.size === 0 || declared.has(k) ? ctx.config.get(k) : undefined),
    declared: (k) => declared.has(k),
    configProblems: logs
      .filter((e) => e.tag === 'config' && (e.level === 'warn' || e.level === 'error'))
      .slice(-10)
      .map((e) => e.message),
    recentErrors:
      info
        ?.logs({ level: 'error', limit: 10 })
        .filter((e) => e.level === 'error')
        .slice(-10) ?? [],
    channels: listChannels(ctx).map((c) => ({ name: c.name, status: c.status, ...(c.error !== undefined ? { error: c.error } : {}) })),
    gatewayServing: ctx.use('gateway:address') !== undefined,
    ...mcpOf(ctx),
  };
}

function mcpOf(ctx: PluginContext): Pick<DoctorSources, 'mcpServers'> {
  try {
    const list = ctx.use('mcp:servers')?.list();
    return list ? { mcpServers: list } : {};
  } catch {
    return {};
  }
}

/** The MCP servers of the running agent, as it last published them ($KEEL_HOME/run/state.json). */
function publishedMcp(home: string, agentRunning: boolean): Pick<DoctorSources, 'mcpServers'> {
  if (!agentRunning) return {};
  try {
    const state = JSON.parse(readFileSync(join(home, 'run', 'state.json'), 'utf8')) as { mcpServers?: DoctorSources['mcpServers'] };
    return Array.isArray(state.mcpServers) ? { mcpServers: state.mcpServers } : {};
  } catch {
    return {};
  }
}

/**
 * What a kernel could offer a CLI command without starting plugins (see the report: the kernel's offline view,
 * kernel/cli/offline.ts). Used when present; otherwise the doctor reads the configuration itself.
 */
export interface InspectView {
  version: string;
  config: { get(key: string): unknown };
  keys: Array<{ key: string }>;
  plugins: Array<{ id: string; state: string; reason?: string }>;
  configProblems: string[];
}
type Inspectable = CommandContext & { inspect?: () => Promise<InspectView> };

/** Keys the doctor reads, with their defaults and environment variables (as the owners declare them). */
const KNOWN: Record<string, { default?: unknown; env?: string; type: 'boolean' | 'string' | 'list' | 'number' }> = {
  downloadsKeepDays: { default: 30, env: 'KEEL_DOWNLOADS_KEEP_DAYS', type: 'number' },
  gatewayHost: { default: '0.0.0.0', env: 'KEEL_GATEWAY_HOST', type: 'string' },
  modelName: { env: 'KEEL_MODEL_NAME', type: 'string' },
  llmProvider: { env: 'KEEL_LLM_PROVIDER', type: 'string' },
  gatewayApiKey: { env: 'KEEL_GATEWAY_API_KEY', type: 'string' },
  queueRedisUrl: { env: 'KEEL_QUEUE_REDIS_URL', type: 'string' },
  gatewayAutoStart: { default: false, env: 'KEEL_GATEWAY_AUTO_START', type: 'boolean' },
  sudoMode: { default: false, env: 'KEEL_SUDO_MODE', type: 'boolean' },
  overrideMode: { default: false, env: 'KEEL_OVERRIDE_MODE', type: 'boolean' },
  safeMode: { default: false, env: 'KEEL_SAFE_MODE', type: 'boolean' },
  commandAllowList: {
    default: [...DEFAULT_COMMAND_ALLOW_LIST],
    type: 'list',
  },
  autoExecuteCommands: { type: 'boolean' },
  webAllowPrivateNetwork: { default: false, env: 'KEEL_WEB_ALLOW_PRIVATE_NETWORK', type: 'boolean' },
  browserExecutablePath: { default: '', env: 'KEEL_BROWSER_EXECUTABLE', type: 'string' },
  browserEngine: { default: 'engineA', env: 'KEEL_BROWSER_ENGINE', type: 'string' },
};

function fromEnv(raw: string, type: 'boolean' | 'string' | 'list' | 'number'): unknown {
  const t = raw.trim();
  if (type === 'number') return /^\d+$/.test(t) ? Number(t) : undefined;
  if (type === 'boolean')
    return ['true', '1', 'yes', 'on'].includes(t.toLowerCase())
      ? true
      : ['false', '0', 'no', 'off'].includes(t.toLowerCase())
        ? false
        : undefined;
  if (type === 'list') {
    if (t.startsWith('[')) {
      try {
        return JSON.parse(t) as unknown;
      } catch {
        return undefined;
      }
    }
    return t === ''
      ? []
      : t
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean);
  }
  return t;
}

/** From the command line: the kernel's offline view when it offers one, else the config file, environment and defaults. */
export async function cliSources(c: CommandContext, ownVersion: string): Promise<DoctorSources> {
  const home = c.home;
  const processes = liveProcesses(home);
  const common = {
    source: 'config' as const,
    home,
    processes,
    agentRunning: processes.includes('agent'),
    ...publishedMcp(home, processes.includes('agent')),
  };
  const inspect = (c as Inspectable).inspect;
  if (typeof inspect === 'function') {
    const v = await inspect.call(c);
    const declared = new Set(v.keys.map((k) => k.key));
    return {
      ...common,
      version: v.version,
      plugins: v.plugins,
      get: (k) => v.config.get(k),
      declared: (k) => declared.has(k),
      configProblems: v.configProblems,
    };
  }
  const file = c.configFile ?? join(home, 'keel.config.yaml');
  const problems: string[] = [];
  let doc: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      const parsed = parseYaml(readFileSync(file, 'utf8')) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) doc = parsed as Record<string, unknown>;
      else if (parsed != null) problems.push(`${file} is not a mapping of keys to values.`);
    } catch (e) {
      problems.push(`${file} is not valid YAML: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    }
  }
  const get = (k: string): unknown => {
    const spec = KNOWN[k];
    if (spec?.env && process.env[spec.env] !== undefined) {
      const v = fromEnv(process.env[spec.env]!, spec.type);
      if (v !== undefined) return v;
    }
    if (Object.hasOwn(doc, k)) return doc[k];
    return spec?.default;
  };
  return {
    ...common,
    version: ownVersion,
    get,
    declared: (k) => k !== 'autoExecuteCommands' || Object.hasOwn(doc, k),
    configProblems: problems,
    limits: [
      'keel doctor read the configuration file, environment and defaults only; plugin states, channel connections and recent errors need a running Keel (ask the agent for system_check).',
    ],
  };
}

/** Names of live Keel processes on this home, from $KEEL_HOME/run/*.pid. */
export function liveProcesses(home: string): string[] {
  const dir = join(home, 'run');
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.pid')) continue;
    try {
      const rec = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { pid?: unknown; name?: unknown };
      if (typeof rec.pid !== 'number') continue;
      process.kill(rec.pid, 0);
      out.push(typeof rec.name === 'string' ? rec.name : f.slice(0, -4));
    } catch {
      /* not alive or unreadable */
    }
  }
  return out.sort();
}
