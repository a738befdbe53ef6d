/**
 * The doctor's report, built from whatever sources the caller has: the running kernel (system_check) or the
 * configuration alone (`keel doctor`). Each finding says what is wrong and how to fix it.
 */
import { existsSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { strictIsolationSupport } from '../../../sdk/command-isolation.js';
import { namespaceSupport, type ConnectionStatus, type LogEntry, type ModelProbe } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/errors.js';

export type Level = 'ok' | 'warn' | 'error';
export type Area = 'kernel' | 'plugins' | 'disk' | 'config' | 'connections' | 'errors' | 'security';

export interface Finding {
  area: Area;
  level: Level;
  message: string;
  /** What to do, usually the exact `keel config set ...` command. */
  fix?: string;
}

export interface Report {
  ok: boolean;
  generatedAt: string;
  /** Where the facts came from: `kernel` (system_check in a running Keel) or `config` (keel doctor). */
  source: 'kernel' | 'config';
  summary: { ok: number; warn: number; error: number };
  findings: Finding[];
  /** The model check, when one was asked for (`keel doctor --probe`, system_check `probeModel`). */
  modelProbe?: ModelProbe;
}

export interface DoctorSources {
  source: Report['source'];
  home: string;
  version?: string;
  /** ISO time the kernel started (uptime). */
  startedAt?: string;
  agentRunning?: boolean;
  /** Other Keel processes on this home (from pid files). */
  processes?: string[];
  plugins?: Array<{ id: string; state: string; reason?: string }>;
  /** Effective configuration value (undefined when the key is unknown or unset). */
  get(key: string): unknown;
  /** Whether some installed plugin (or the kernel) declares the key. */
  declared(key: string): boolean;
  configProblems?: string[];
  recentErrors?: LogEntry[];
  channels?: Array<{ name: string; status: ConnectionStatus | undefined; error?: string }>;
  /** MCP servers Keel is a client of (the mcp plugin), with their state. */
  mcpServers?: Array<{ name: string; state: string; tools: number; attempt?: number; nextTryAt?: string; lastError?: string }>;
  /** Whether the gateway is listening in this process right now. */
  gatewayServing?: boolean;
  /** What this view cannot tell (shown as notes). */
  limits?: string[];
  /** The result of a real call to the configured model, when one was made. */
  modelProbe?: ModelProbe;
}

export const INTERPRETERS = [
  'bash',
  'sh',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'python',
  'python3',
  'node',
  'nodejs',
  'npx',
  'deno',
  'bun',
  'pwsh',
  'powershell',
  'perl',
  'ruby',
  'php',
  'lua',
] as const;
/** Where the browser plugin looks for Chromium when browserExecutablePath is empty (plugins/browser/src/service.ts). */
export const BROWSER_CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome-stable',
  '/usr/bin/google-chrome',
  '/snap/bin/chromium',
];
export const LOW_DISK_WARN = 1024 ** 3;
export const LOW_DISK_ERROR = 100 * 1024 ** 2;

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|::1|\[::1\]|::ffff:127(\.\d{1,3}){3})$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host.trim());
}

function quote(v: string): string {
  return /^[A-Za-z0-9_.,:/@=+-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`;
}

function humanBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function humanDuration(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return d ? `${d}d ${h}h ${m}m` : h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

export async function buildReport(src: DoctorSources, now = new Date()): Promise<Report> {
  const f: Finding[] = [];
  const add = (area: Area, level: Level, message: string, fix?: string) => f.push({ area, level, message, ...(fix ? { fix } : {}) });

  // ---------------------------------------------------------------- kernel
  const parts: string[] = [`Keel ${src.version ?? '(version unknown)'}`, `home ${src.home}`];
  if (src.startedAt) parts.push(`up ${humanDuration(Math.max(0, Math.floor((now.getTime() - Date.parse(src.startedAt)) / 1000)))}`);
  if (src.processes?.length) parts.push(`running processes: ${src.processes.join(', ')}`);
  add('kernel', 'ok', `${parts.join(', ')}.`);
  if (src.agentRunning === false)
    add('kernel', 'warn', 'No agent is running on this home: queued actions and scheduled tasks wait.', 'keel run');

  // ---------------------------------------------------------------- plugins
  if (src.plugins) {
    const bad = src.plugins.filter((p) => p.state === 'failed' || p.state === 'quarantined' || p.state === 'invalid');
    for (const p of bad) {
      add(
        'plugins',
        p.state === 'failed' ? 'error' : p.state === 'quarantined' ? 'error' : 'warn',
        `Plugin ${p.id} is ${p.state}${p.reason ? `: ${p.reason}` : ''}.`,
        p.state === 'quarantined'
          ? `fix the cause, then ask the agent to run self_repair_skill for ${p.id} (or reinstall it) and restart Keel`
          : `fix the cause above, then restart Keel (keel stop && keel run); see keel plugins`,
      );
    }
    const loaded = src.plugins.filter((p) => p.state === 'loaded').length;
    const disabled = src.plugins.filter((p) => p.state === 'disabled').length;
    if (bad.length === 0)
      add('plugins', 'ok', `${loaded} plugin(s) loaded${disabled ? `, ${disabled} disabled by the plugin lists` : ''}, none failed.`);
  }

  // ---------------------------------------------------------------- disk
  try {
    const s = await statfs(src.home);
    const free = Number(s.bavail) * Number(s.bsize);
    if (free < LOW_DISK_ERROR)
      add(
        'disk',
        'error',
        `Only ${humanBytes(free)} free where $KEEL_HOME lives (${src.home}): queue, memory and config writes may fail.`,
        'free disk space, or move KEEL_HOME to a larger disk',
      );
    else if (free < LOW_DISK_WARN)
      add(
        'disk',
        'warn',
        `${humanBytes(free)} free where $KEEL_HOME lives (${src.home}); below 1 GiB.`,
        'free disk space, or move KEEL_HOME to a larger disk',
      );
    else add('disk', 'ok', `${humanBytes(free)} free where $KEEL_HOME lives.`);
  } catch (e) {
    add('disk', 'warn', `Free space of ${src.home} is unknown: ${errorMessage(e)}.`);
  }
  await usageFindings(src, add);

  // ---------------------------------------------------------------- browser (Keel never downloads one)
  if (src.declared('browserExecutablePath') && src.get('browserEngine') !== 'engineC') {
    const set = String(src.get('browserExecutablePath') ?? '').trim();
    const found = set ? (existsSync(set) ? set : undefined) : BROWSER_CANDIDATES.find((p) => existsSync(p));
    if (found) add('plugins', 'ok', `Browser skills use ${found}.`);
    else
      add(
        'plugins',
        'warn',
        set
          ? `browserExecutablePath is ${set}, which does not exist: the browser skills fail.`
          : `No Chromium or Chrome found (looked for ${BROWSER_CANDIDATES.join(', ')}): the browser skills fail. Keel never downloads a browser.`,
        'install one (Debian/Ubuntu: sudo apt-get install chromium; Fedora: sudo dnf install chromium; macOS: install Google Chrome), or keel config set browserExecutablePath <path>',
      );
  }

  // ---------------------------------------------------------------- config
  if (src.configProblems) {
    for (const p of src.configProblems)
      add('config', 'warn', p, 'correct the value with keel config set <key> <value> (see keel config get <key>)');
    if (src.configProblems.length === 0) add('config', 'ok', 'No configuration problems reported.');
  }

  // ---------------------------------------------------------------- model
  // The first thing a new user runs into: without a model every pushed action waits.
  if (src.declared('modelName')) {
    const model = src.get('modelName');
    const provider = src.get('llmProvider');
    const remembered = src.get('providerModelNames');
    const fromProvider =
      typeof provider === 'string' &&
      remembered &&
      typeof remembered === 'object' &&
      typeof (remembered as Record<string, unknown>)[provider] === 'string';
    if ((typeof model !== 'string' || model === '') && !fromProvider) {
      add(
        'config',
        'error',
        'No model is configured: modelName is not set, so every queued action waits. Set modelName and the API key of its provider ' +
          '(providerAApiKey, providerBApiKey, providerCApiKey, providerDAccessKeyId/providerDSecretAccessKey, providerEApiKey ... providerKApiKey), ' +
          'or run a local model with providerG (Ollama: providerGEnabled true, providerGApiUrl) and set modelName to it.',
        'keel config set providerAApiKey <key> && keel config set modelName gpt-4o-mini   (local: keel config set providerGEnabled true && keel config set modelName llama3.2)',
      );
    } else {
      add('config', 'ok', `Model: ${typeof model === 'string' && model ? model : `${String(provider)}'s last model`}.`);
    }
  }

  const probe = src.modelProbe;
  if (probe?.ok) add('config', 'ok', `The model answered: ${probe.model} on ${probe.provider} in ${probe.ms} ms.`);
  else if (probe) {
    const which = probe.model ? ` (${probe.model}${probe.provider ? ` on ${probe.provider}` : ''})` : '';
    add('config', 'error', `The model check failed${which}: ${probe.error}`, probe.fix);
  }

  // ---------------------------------------------------------------- connections
  if (src.channels) {
    const present = src.channels.filter((c) => c.status || c.error);
    for (const c of present) {
      if (c.error) add('connections', 'warn', `Channel ${c.name}: status unavailable (${c.error}).`);
      else if (c.status!.enabled && !c.status!.connected)
        add(
          'connections',
          'warn',
          `Channel ${c.name} is enabled but not connected.`,
          `check its credentials and network, then keel plugins (state of ${c.name})`,
        );
      else if (c.status!.enabled)
        add('connections', 'ok', `Channel ${c.name} is connected${c.status!.botUsername ? ` as ${c.status!.botUsername}` : ''}.`);
    }
    if (!present.some((c) => c.status?.enabled)) add('connections', 'ok', 'No chat channel is enabled.');
  }

  for (const m of src.mcpServers ?? []) {
    const why = m.lastError ? `: ${m.lastError}` : '';
    if (m.state === 'connected') add('connections', 'ok', `MCP server ${m.name} is connected, ${m.tools} tool(s).`);
    else if (m.state === 'restarting' || m.state === 'connecting')
      add(
        'connections',
        'warn',
        `MCP server ${m.name} is ${m.state}${m.attempt ? ` (attempt ${m.attempt}${m.nextTryAt ? `, next try at ${m.nextTryAt}` : ''})` : ''}${why}.`,
        `check its command or url in mcpServers.${m.name} (docs/mcp.md)`,
      );
    else if (m.state === 'failed')
      add(
        'connections',
        'error',
        `MCP server ${m.name} failed and is not retried${why}.`,
        `fix mcpServers.${m.name} (docs/mcp.md), then restart Keel (keel stop && keel run)`,
      );
  }

  // ---------------------------------------------------------------- recent errors
  if (src.recentErrors) {
    if (src.recentErrors.length === 0) add('errors', 'ok', 'No errors logged recently.');
    else {
      const lines = src.recentErrors.map((e) => `${e.timestamp} ${e.tag ? `[${e.tag}] ` : ''}${e.message.slice(0, 300)}`);
      add(
        'errors',
        'warn',
        `${src.recentErrors.length} recent error(s), newest last:\n${lines.join('\n')}`,
        'see the messages above; keel status shows the processes, the logs hold the rest',
      );
    }
  }

  // ---------------------------------------------------------------- risky settings
  const risky = f.length;
  if (src.declared('gatewayHost')) {
    const host = String(src.get('gatewayHost') ?? '0.0.0.0');
    const key = src.get('gatewayApiKey');
    const hasKey = typeof key === 'string' && key !== '';
    if (!isLoopbackHost(host) && !hasKey) {
      const live = src.gatewayServing === true || src.get('gatewayAutoStart') === true;
      add(
        'security',
        live ? 'error' : 'warn',
        `The gateway binds to ${host} (beyond loopback) without gatewayApiKey: anyone who can reach this machine gets full control of the agent` +
          (live
            ? src.gatewayServing
              ? ' - and it is listening now.'
              : ' - and gatewayAutoStart starts it with the agent.'
            : ' whenever the gateway runs (keel gateway, keel run --with-gateway).'),
        'keel config set gatewayHost 127.0.0.1   (or set a long random key: keel config set gatewayApiKey <key>)',
      );
    }
  }
  const redisUrl = src.get('queueRedisUrl');
  if (typeof redisUrl === 'string' && redisUrl) {
    let u: URL | undefined;
    try {
      u = new URL(redisUrl);
    } catch {
      // the key's schema keeps unparsable values out; nothing to judge
    }
    if (u && !u.password)
      add(
        'security',
        'warn',
        `The shared queue's Redis (queueRedisUrl, ${u.host}) is used without a password: anyone who can reach it can queue tasks as the operator (admin) on every machine of this Keel.`,
        'set requirepass (or an ACL user) on that Redis, then: keel config set queueRedisUrl redis://:<password>@<host>:<port>',
      );
    if (u && u.protocol === 'redis:' && !isLoopbackHost(u.hostname))
      add(
        'security',
        'warn',
        `The shared queue's Redis (queueRedisUrl, ${u.host}) is reached without TLS: tasks, results and the password cross the network in clear text.`,
        'enable TLS on that Redis (or a tunnel), then use rediss:// in queueRedisUrl',
      );
    const signed = src.get('queueRedisSigningKey');
    if (u && !isLoopbackHost(u.hostname) && !(typeof signed === 'string' && signed))
      add(
        'security',
        'warn',
        `The shared queue's Redis (queueRedisUrl, ${u.host}) holds unsigned ops: anything else that can write to that Redis (another application sharing it, a leaked password) can queue tasks as the operator (admin).`,
        'set the same long random key on every machine: keel config set queueRedisSigningKey "$(openssl rand -base64 32)"',
      );
  }
  if (src.get('sudoMode') === true)
    add(
      'security',
      'warn',
      'sudoMode is on: the command allow list is bypassed (only the deny list still applies).',
      'keel config set sudoMode false',
    );
  if (src.get('overrideMode') === true)
    add(
      'security',
      'warn',
      'overrideMode is on: persona behavioural boundaries are bypassed (experimental).',
      'keel config set overrideMode false',
    );
  const allow = src.get('commandAllowList');
  if (Array.isArray(allow)) {
    const names = allow.filter((x): x is string => typeof x === 'string');
    const found = names.filter((n) =>
      (INTERPRETERS as readonly string[]).includes(
        n
          .trim()
          .toLowerCase()
          .replace(/\.exe$/, ''),
      ),
    );
    if (found.length) {
      const rest = names.filter((n) => !found.includes(n));
      add(
        'security',
        'warn',
        `commandAllowList contains interpreters (${found.join(', ')}): each runs arbitrary code, so allowing one allows nearly any command. ` +
          'The deny list names programs: it stops an interpreter from starting rm, not from deleting files through its own library (os.remove, fs.rmSync); safe mode, a narrower allow list or the agent-code sandbox do (docs/security.md).',
        `keel config set commandAllowList ${rest.length ? quote(rest.join(',')) : "'[]'"}`,
      );
    }
  }
  if (src.declared('autoExecuteCommands') && src.get('autoExecuteCommands') === true && src.get('safeMode') !== true) {
    add(
      'security',
      'warn',
      'autoExecuteCommands is on with safeMode off: commands run without a human confirming them.',
      'keel config set autoExecuteCommands false',
    );
  }
  if (src.declared('webAllowPrivateNetwork') && src.get('webAllowPrivateNetwork') === true) {
    add(
      'security',
      'warn',
      'webAllowPrivateNetwork is on: web fetches may reach this machine and its local network (server-side request forgery).',
      'keel config set webAllowPrivateNetwork false',
    );
  }
  if (f.length === risky) add('security', 'ok', 'No risky settings found.');
  if (src.declared('gatewayHost')) {
    const host = String(src.get('gatewayHost') ?? '0.0.0.0');
    const key = src.get('gatewayApiKey');
    if (isLoopbackHost(host) && !(typeof key === 'string' && key !== ''))
      // Not a risk, but the reason a reverse proxy in front of it gets 403 (docs/api.md, Authentication).
      add(
        'security',
        'ok',
        `The gateway serves this machine only (${host}, no gatewayApiKey): it refuses requests a reverse proxy forwards, requests addressed to another host name and calls from web pages of other sites. To put it behind a proxy (TLS), set gatewayApiKey.`,
      );
  }
  if (src.declared('commandIsolation')) await isolationFinding(src, add);

  for (const l of src.limits ?? []) add('kernel', 'ok', `Note: ${l}`);

  const summary = { ok: 0, warn: 0, error: 0 };
  for (const x of f) summary[x.level]++;
  return {
    ok: summary.error === 0,
    generatedAt: now.toISOString(),
    source: src.source,
    summary,
    findings: f,
    ...(src.modelProbe ? { modelProbe: src.modelProbe } : {}),
  };
}

/** Whether run_command's deny list is enforced by the operating system here (plugins/system, docs/security.md). */
async function isolationFinding(src: DoctorSources, add: (area: Area, level: Level, message: string, fix?: string) => void): Promise<void> {
  const mode = src.get('commandIsolation');
  const limit = 'Only the argv check applies: a script or an interpreter a command runs can start programs on commandDenyList.';
  if (mode === 'off') {
    add(
      'security',
      'warn',
      `commandIsolation is off: the operating system does not enforce commandDenyList. ${limit}`,
      'keel config set commandIsolation auto',
    );
    return;
  }
  const ns = await namespaceSupport(['mount', 'pid']);
  if (ns.available) {
    const jail = `Commands run in a private mount and pid namespace${ns.userNamespace ? ' (user namespace)' : ''} where the programs on commandDenyList are replaced by stubs`;
    const gap = 'a copy of a denied program that reaches a writable folder another way (downloaded, extracted from a package) can run';
    if (mode === 'required') {
      add(
        'security',
        'warn',
        `${jail}, and nothing more (commandIsolation is required): ${gap}.`,
        'keel config set commandIsolation auto (strict where this system allows it; see docs/security.md for what strict stops running)',
      );
      return;
    }
    const strict = await strictIsolationSupport();
    if (strict.available) add('security', 'ok', `${jail}, and nothing runs from a place the command can write (strict isolation).`);
    else if (mode === 'strict')
      add(
        'security',
        'error',
        `commandIsolation is strict but strict isolation cannot be set up here (${strict.reason}): every run_command is refused.`,
        'keel config set commandIsolation auto (the stubs alone where strict is impossible)',
      );
    else
      add(
        'security',
        'warn',
        `Strict isolation cannot be set up here (${strict.reason}), so commandIsolation auto uses the weaker jail. ${jail}, but ${gap}.`,
        'run Keel where every writable mount can be remounted noexec in a user or mount namespace (see docs/security.md)',
      );
  } else if (mode === 'required' || mode === 'strict') {
    add(
      'security',
      'error',
      `commandIsolation is ${mode} but this system cannot isolate commands (${ns.reason}): every run_command is refused.`,
      'run Keel on Linux with util-linux and user namespaces enabled (or as root), or keel config set commandIsolation auto',
    );
  } else {
    add(
      'security',
      'warn',
      `The operating system cannot enforce commandDenyList here (${ns.reason}). ${limit}`,
      'run Keel on Linux with util-linux and user namespaces enabled (sysctl user.max_user_namespaces > 0) or as root; or keel config set commandIsolation required to refuse commands instead; see docs/security.md',
    );
  }
}

const MARK: Record<Level, string> = { ok: 'ok   ', warn: 'WARN ', error: 'ERROR' };

/** Bytes and files under `dir` (links not followed), at most `limit` entries looked at. */
async function du(dir: string, limit = 200_000): Promise<{ bytes: number; files: number; partial: boolean }> {
  const out = { bytes: 0, files: 0, partial: false };
  let seen = 0;
  const walk = async (d: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++seen > limit) {
        out.partial = true;
        return;
      }
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        try {
          out.bytes += (await lstat(p)).size;
          out.files++;
        } catch {
          // gone meanwhile
        }
      }
    }
  };
  await walk(dir);
  return out;
}

/** What Keel keeps on disk, by part (docs/housekeeping.md), and downloads that nothing removes. */
async function usageFindings(src: DoctorSources, add: (area: Area, level: Level, message: string, fix?: string) => void): Promise<void> {
  const parts: Array<[string, string[]]> = [
    ['downloads', ['downloads']],
    ['channel stores', ['channels']],
    ['knowledge', ['knowledge']],
    ['memory', ['memory.json', 'memory.journal', 'daily', 'contacts', 'USER.md', 'LEARNING.md', 'JOURNAL.md']],
    ['logs', ['daemon.log', 'daemon.log.1', 'gateway.log', 'gateway.log.1', 'token-usage.log', 'token-usage.log.1']],
  ];
  const sizes: string[] = [];
  let downloads = 0;
  for (const [name, paths] of parts) {
    let bytes = 0;
    let partial = false;
    for (const p of paths) {
      const full = join(src.home, p);
      const st = await lstat(full).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory()) {
        const r = await du(full);
        bytes += r.bytes;
        partial ||= r.partial;
      } else if (st.isFile()) bytes += st.size;
    }
    if (name === 'downloads') downloads = bytes;
    sizes.push(`${name} ${humanBytes(bytes)}${partial ? '+' : ''}`);
  }
  add('disk', 'ok', `Keel keeps: ${sizes.join(', ')}.`);
  const keep = src.get('downloadsKeepDays');
  if (keep === 0 && downloads > LOW_DISK_WARN)
    add(
      'disk',
      'warn',
      `downloads/ holds ${humanBytes(downloads)} and downloadsKeepDays is 0, so nothing there is ever removed (attachments, screenshots, generated media).`,
      'keel config set downloadsKeepDays 30',
    );
}

export function renderText(r: Report): string {
  const out: string[] = [`Keel doctor (${r.source === 'kernel' ? 'running kernel' : 'configuration only'}), ${r.generatedAt}`];
  for (const area of ['kernel', 'plugins', 'disk', 'config', 'connections', 'errors', 'security'] as const) {
    const items = r.findings.filter((x) => x.area === area);
    if (!items.length) continue;
    out.push('', `${area}:`);
    for (const x of items) {
      const [first, ...more] = x.message.split('\n');
      out.push(`  ${MARK[x.level]} ${first}`);
      for (const m of more) out.push(`          ${m}`);
      if (x.fix) out.push(`          fix: ${x.fix}`);
    }
  }
  out.push('', `${r.summary.error} error(s), ${r.summary.warn} warning(s).`);
  return out.join('\n');
}
