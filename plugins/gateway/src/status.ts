/**
 * The agent status object of SPEC (`GET /api/status`, the WebSocket's first message).
 */
import type { GatewayDeps } from './deps.js';

export interface AgentStatus {
  running: boolean;
  model: string;
  provider: string;
  memory: { short: number; episodic: number; long: number };
  queue: { pending: number; failed: number };
  autonomy: { enabled: boolean; interval: number };
  safeMode: boolean;
  version: string;
}

/** Keys owned by plugins that may not be installed read as their neutral value. */
function opt<T>(d: GatewayDeps, key: string, fallback: T): T {
  const v = d.ctx.config.get<T | undefined>(key);
  return v === undefined || v === null ? fallback : v;
}

export function agentStatus(d: GatewayDeps): AgentStatus {
  const counts = d.ctx.queue.counts();
  const memory = d.ctx.use('memory')?.counts() ?? { short: 0, episodic: 0, long: 0 };
  // The router knows the effective provider and model (inferred from the model name, restored per provider).
  const current = d.ctx.use('llm')?.current();
  return {
    running: d.info.agentRunning(),
    model: current?.model ?? String(opt(d, 'modelName', '')),
    provider: current?.provider ?? String(opt(d, 'llmProvider', '')),
    memory,
    queue: { pending: counts.pending, failed: counts.failed },
    autonomy: { enabled: Boolean(opt(d, 'autonomyEnabled', false)), interval: Number(opt(d, 'autonomyInterval', 0)) },
    safeMode: Boolean(d.ctx.config.get('safeMode')),
    version: d.info.version,
  };
}
