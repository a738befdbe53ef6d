/**
 * MCP plugin entry (docs/mcp.md). Client: each server in `mcpServers` that the plugin lists admit (as
 * `mcp-<name>`) is connected, and its permitted tools become skills `mcp_<server>_<tool>` while it is up; a server
 * that dies is restarted with backoff. Server: `POST /mcp` on the gateway and `keel mcp` on stdio offer Keel's
 * skills to MCP clients. Nothing of the MCP SDK is imported until a server is configured or a client calls.
 */
import { errorsFor } from '../../sdk/errors.js';
import { definePlugin, errorMessage, Type, type Actor, type PluginContext } from '../../sdk/index.js';
import manifest from './manifest.js';
import { describe, type McpTool, type ServerConfig, ServerConnection, type ServerStatus } from './src/client.js';
import { handleHttp, type McpCaller, serveStdio, type SkillSource } from './src/server.js';
import { resultText, skillFor, toolPermitted } from './src/skills.js';

const coded = errorsFor('mcp');

const JsonRpc = Type.Object(
  { jsonrpc: Type.Literal('2.0') },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 message (MCP streamable HTTP, JSON answers)' },
);
const Problem = Type.Object({ error: Type.String(), message: Type.String() }, { additionalProperties: true });
const MCP_RESPONSES = { 200: JsonRpc, 400: JsonRpc, 401: Problem };
const NOT_ALLOWED = {
  200: Type.Object({}, { description: 'Never sent: the endpoint keeps no sessions, so GET always answers 405' }),
  401: Problem,
  405: JsonRpc,
};

declare module '../../sdk/capabilities.js' {
  interface Capabilities {
    /** The MCP servers Keel is a client of, with their state (the mcp plugin): `keel status`, `keel doctor`. */
    'mcp:servers': { list(): ServerStatus[] };
  }
}

/** Why a server entry cannot be used, or undefined. */
function configProblem(c: ServerConfig): string | undefined {
  if (c.command && c.url) return 'give either command (stdio) or url (streamable HTTP), not both';
  if (!c.command && !c.url) return 'give command (stdio) or url (streamable HTTP)';
  return undefined;
}

function permittedByLists(ctx: PluginContext, id: string): string | undefined {
  const allow = ctx.config.get<string[]>('pluginAllowList') ?? [];
  const deny = ctx.config.get<string[]>('pluginDenyList') ?? [];
  if (deny.includes(id)) return `"${id}" is on pluginDenyList`;
  if (allow.length > 0 && !allow.includes(id)) return `pluginAllowList is set and does not name "${id}"`;
  return undefined;
}

function startClients(ctx: PluginContext<typeof manifest>): { list(): ServerStatus[]; stop(): Promise<void> } {
  const servers = (ctx.config.get('mcpServers') ?? {}) as Record<string, ServerConfig>;
  const connections: ServerConnection[] = [];
  const off: ServerStatus[] = [];
  const declared = new Map<string, string[]>();
  const backoff = () => ({
    delayMs: ctx.config.get('mcpRestartDelayMs'),
    maxDelayMs: Math.max(ctx.config.get('mcpRestartDelayMs'), ctx.config.get('mcpRestartMaxDelayMs')),
    attempts: ctx.config.get('mcpRestartAttempts'),
  });
  for (const [name, c] of Object.entries(servers ?? {})) {
    const transport = c.url ? 'http' : 'stdio';
    const why = c.enabled === false ? 'enabled is false' : (permittedByLists(ctx, `mcp-${name}`) ?? configProblem(c));
    if (why) {
      off.push({ name, transport, state: c.enabled === false || !configProblem(c) ? 'disabled' : 'failed', tools: 0, lastError: why });
      ctx.log.warn(`MCP server ${name} is not started: ${why}`);
      continue;
    }
    const conn: ServerConnection = new ServerConnection({
      name,
      config: c,
      backoff,
      version: ctx.version,
      log: ctx.log,
      onTools: (tools) => declare(name, c, conn, tools),
    });
    connections.push(conn);
  }

  function declare(server: string, c: ServerConfig, conn: ServerConnection, tools: McpTool[]): void {
    for (const n of declared.get(server) ?? []) ctx.skills.withdraw(n);
    const names: string[] = [];
    const taken = new Set<string>();
    for (const t of tools) {
      if (!toolPermitted(c, t.name)) continue;
      const skill = skillFor(server, c, t, taken);
      try {
        ctx.skills.declare(skill, async (args, call) => {
          const r = await conn.connected().callTool({ name: t.name, arguments: args }, undefined, {
            signal: call.signal,
            timeout: ctx.config.get('mcpCallTimeoutMs'),
          });
          const text = resultText(server, t.name, r as { content?: unknown; structuredContent?: unknown });
          if (r.isError === true) throw coded('KEEL_E_PROVIDER_FAILED', text);
          return text;
        });
        names.push(skill.name);
      } catch (e) {
        ctx.log.warn(`MCP server ${server}: tool ${t.name} is not offered: ${errorMessage(e)}`);
      }
    }
    declared.set(server, names);
  }

  for (const conn of connections) conn.start();
  return {
    list: () => [...connections.map((c) => c.status()), ...off],
    stop: async () => {
      await Promise.all(connections.map((c) => c.stop()));
    },
  };
}

function source(skills: { list(): ReturnType<SkillSource['list']>; execute: SkillSource['execute'] }): SkillSource {
  return { list: () => skills.list(), execute: (n, a, actor) => skills.execute(n, a, actor) };
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const clients = startClients(ctx);
    ctx.provide('mcp:servers', { list: () => clients.list() });
    const skills = source({ list: () => ctx.skills.list(), execute: (n, a, actor) => ctx.skills.execute(n, a, actor) });
    const notAllowed = async ({ res }: { res: import('node:http').ServerResponse }) => {
      res.writeHead(405, { 'content-type': 'application/json', allow: 'POST' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless, send each request with POST /mcp.' },
          id: null,
        }),
      );
    };
    ctx.provide('gateway:routes:mcp', {
      routes: [
        {
          method: 'POST',
          url: '/mcp',
          summary: "MCP over streamable HTTP: Keel's skills as tools (stateless; JSON answers)",
          description:
            'The gateway key is required (X-Api-Key or Authorization: Bearer). The caller is the operator (admin): tools/list lists every available skill, tools/call runs one through dispatch.',
          schema: { response: MCP_RESPONSES },
          stream: async ({ caller, raw, res, body }) => {
            const who: McpCaller = { actor: { ...caller.actor, channel: 'mcp' } as Actor, admin: caller.operator };
            await handleHttp(skills, who, ctx.version, raw, res, body);
          },
        },
        {
          method: 'GET',
          url: '/mcp',
          summary: 'No stream to open: the MCP endpoint is stateless (405, which MCP clients accept)',
          schema: { response: NOT_ALLOWED },
          stream: notAllowed,
        },
      ],
    });
    return {
      stop: () => clients.stop(),
      health() {
        const list = clients.list();
        if (!list.length) return { ok: true, message: 'no MCP servers configured; serving /mcp and keel mcp' };
        const bad = list.filter((s) => s.state === 'failed' || s.state === 'restarting');
        return { ok: bad.length === 0, message: `MCP servers: ${list.map((s) => describe(s)).join('; ')}` };
      },
    };
  },
  commands: {
    async mcp(c) {
      const admin = c.options.admin !== false;
      const running = await c.startKernel({
        processName: 'mcp',
        only: { ids: ['timeline'], kinds: ['skill', 'provider'] },
        logLevel: 'warn',
      });
      const caller: McpCaller = admin
        ? { actor: { kind: 'operator', channel: 'mcp' }, admin: true }
        : { actor: { kind: 'user', channel: 'mcp', userId: 'mcp-client' }, admin: false };
      try {
        await serveStdio(
          source({ list: () => running.skills(), execute: (n, a, actor) => running.execute(n, a as Record<string, unknown>, actor) }),
          caller,
          (await c.inspect()).version,
        );
      } finally {
        await running.stop();
      }
      return 0;
    },
  },
});
