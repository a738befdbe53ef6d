/**
 * `keel status`: running or not, processes, queue counts, why actions wait, plugin problems.
 * Exit 0 when the agent runs, 3 when it does not.
 */
import type { ChannelListing } from '../../sdk/channel.js';
import { browserUrl } from '../../sdk/gateway.js';
import { keelHome } from '../paths.js';
import { livePids } from '../util/pidfiles.js';
import { mcpLine, readRunState } from './run-state.js';

/**
 * One channel in the text report: its state; why, when it is not connected and knows its last error; how many
 * messages its catch-up read from the history, when any.
 * @example channelLine({ name: 'chatD', plugin: 'chatD', status: { enabled: true, connected: true, state: 'connected', caughtUp: 3 } })
 * // 'chatD connected (3 read from the history)'
 */
export function channelLine(c: ChannelListing): string {
  if (!c.status) return `${c.name} (status unavailable${c.error ? `: ${c.error}` : ''})`;
  const s = c.status;
  // Not enabled (no credentials, or switched off) reads "off", whatever the plugin calls its idle state.
  const state = !s.enabled && !s.connected ? 'off' : (s.state ?? (s.connected ? 'connected' : 'not connected'));
  const who = s.connected && s.botUsername ? ` as ${s.botUsername}` : '';
  const notes: string[] = [];
  if (s.connected && typeof s.guilds === 'number') notes.push(`${s.guilds} server${s.guilds === 1 ? '' : 's'}`);
  if (s.waitingForScan)
    notes.push(
      s.pairingCode
        ? `not linked: enter ${s.pairingCode} on the phone (Link with phone number)`
        : 'not linked: scan the QR code in the terminal Keel runs in',
    );
  if (!s.connected && s.enabled && s.lastError) notes.push(`last error: ${s.lastError}`);
  if (s.caughtUp) notes.push(`${s.caughtUp} read from the history`);
  return `${c.name} ${state}${who}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

export async function status(opts: { json?: boolean; config?: string }): Promise<number> {
  const home = keelHome();
  const procs = livePids(home);
  const agent = procs.find((p) => p.name === 'agent');
  const state = agent ? readRunState(home) : undefined;
  let queue = state?.queue;
  const { queueBackendOf } = await import('../queue/backend.js');
  const redis = await queueBackendOf(home, process.env, opts.config);
  if (!agent) {
    const { readQueueCounts } = await import('../queue/index.js');
    queue = await readQueueCounts(home, undefined, redis ? { redis } : {});
  }
  // A queue shared through Redis: where, and which runners (on any machine) hold a lease on it.
  let shared: { url: string; prefix: string; runners: Array<{ id: string; host?: string; pid?: number; since?: string }> } | undefined;
  if (redis) {
    const { redactRedisUrl, sharedQueueRunners } = await import('../queue/bull-queue.js');
    shared = { url: redactRedisUrl(redis.url), prefix: redis.prefix ?? 'keel:', runners: await sharedQueueRunners(redis) };
  }
  const plugins = state?.plugins ?? [];
  const quarantined = plugins.filter((p) => p.state === 'quarantined').map((p) => ({ id: p.id, reason: p.reason }));
  const failed = plugins.filter((p) => p.state === 'failed' || p.state === 'invalid').map((p) => ({ id: p.id, reason: p.reason }));
  let waiting: string | undefined = state?.runner.reason;
  if (!agent) waiting = shared?.runners.length ? undefined : 'the agent is not running; start it with `keel run` (or `keel run --daemon`)';
  const report = {
    running: Boolean(agent),
    pid: agent?.pid ?? null,
    mode: agent?.mode ?? null,
    home,
    processes: procs,
    queue: queue ?? { pending: 0, completed: 0, failed: 0 },
    runner: state?.runner ?? { state: 'stopped' },
    waiting: waiting ?? null,
    quarantined,
    failed,
    channels: state?.channels ?? [],
    mcpServers: state?.mcpServers ?? [],
    version: state?.version ?? null,
    ...(shared ? { sharedQueue: shared } : {}),
  };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const lines = [
      agent ? `Keel is running (pid ${agent.pid}, ${agent.mode}, since ${agent.startedAt}).` : 'Keel is not running.',
      `Data: ${home}`,
      `Queue: ${report.queue.pending} pending, ${report.queue.completed} completed, ${report.queue.failed} failed.`,
    ];
    if (shared) {
      const who = shared.runners.map((r) => `${r.host ?? r.id}${r.pid ? ` (pid ${r.pid})` : ''}`);
      lines.push(
        `Shared queue: ${shared.url} (prefix ${shared.prefix}); ${who.length ? `${who.length} runner${who.length === 1 ? '' : 's'}: ${who.join(', ')}` : 'no runner holds a lease: actions wait until one starts'}.`,
      );
    }
    for (const p of procs.filter((p) => p.name !== 'agent')) lines.push(`Also running: ${p.name} (pid ${p.pid}).`);
    // each gateway once (with --with-gateway the agent's process runs it and has two pid files)
    for (const url of new Set(procs.map((p) => p.gateway).filter((u): u is string => !!u)))
      lines.push(`Gateway: ${url} (${browserUrl(url)} in a browser for the dashboard).`);
    if (state?.runner.current) lines.push(`Working on ${state.runner.current}.`);
    if (report.queue.pending > 0 && waiting) lines.push(`Actions wait because ${waiting}.`);
    if (report.channels.length > 0) lines.push(`Channels: ${report.channels.map(channelLine).join(', ')}.`);
    if (report.mcpServers.length > 0) lines.push(`MCP servers: ${report.mcpServers.map((m) => mcpLine(m)).join('; ')}.`);
    for (const q of quarantined) lines.push(`Quarantined plugin ${q.id}: ${q.reason}`);
    for (const f of failed) lines.push(`Failed plugin ${f.id}: ${f.reason}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return agent ? 0 : 3;
}
