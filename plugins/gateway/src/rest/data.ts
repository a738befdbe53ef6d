/**
 * Read-only views: GET /api/memory, GET /api/connections, GET /api/logs.
 */
import { listChannels, type ConnectionStatus, type MemoryEntry } from '../../../../sdk/index.js';
import type { RouteDef, RouteEnv } from './route.js';
import * as S from './schemas.js';

export function dataRoutes(env: RouteEnv): RouteDef[] {
  const { ctx, info } = env;
  return [
    {
      method: 'GET',
      url: '/api/memory',
      summary: 'Memory entries (from the plugin that provides memory; empty until one runs)',
      schema: { querystring: S.MemoryQuery, response: { 200: S.MemoryList, ...S.errors(400, 401) } },
      handler: (req) => {
        const q = req.query as { type?: MemoryEntry['type']; limit?: number; search?: string };
        const memory = ctx.use('memory');
        if (!memory) return { memories: [], total: 0 };
        return memory.list({ limit: q.limit ?? 50, ...(q.type ? { type: q.type } : {}), ...(q.search ? { search: q.search } : {}) });
      },
    },
    {
      method: 'GET',
      url: '/api/connections',
      summary: 'Status of each chat channel whose plugin runs (built-in or a user plugin providing channel:<name>)',
      schema: { response: { 200: S.Connections, ...S.errors(401) } },
      handler: () => {
        const out: Record<string, ConnectionStatus> = {};
        for (const c of listChannels(ctx)) {
          // A channel whose status() fails is still listed: running, but not known to be connected.
          out[c.name] = c.status ?? { enabled: true, connected: false };
        }
        return out;
      },
    },
    {
      method: 'GET',
      url: '/api/logs',
      summary: 'Recent log entries, oldest first',
      schema: { querystring: S.LogQuery, response: { 200: S.LogList, ...S.errors(400, 401) } },
      handler: (req) => {
        const q = req.query as { level?: 'info' | 'warn' | 'error'; limit?: number };
        const logs = info.logs({ limit: q.limit ?? 100, ...(q.level ? { level: q.level } : {}) });
        return { logs: logs.map((e) => ({ level: e.level, message: e.message, timestamp: e.timestamp })) };
      },
    },
  ];
}
