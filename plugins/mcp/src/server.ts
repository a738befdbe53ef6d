/**
 * Keel's skills for MCP clients: one MCP `Server` (the official SDK) per connection, listing the skills the caller
 * may use (admin-only ones only for an admin) and running each call through Keel's dispatch (schema, policy,
 * hooks), as that caller. Over stdio (`keel mcp`) and over streamable HTTP at `/mcp` (stateless: a server and a
 * transport per request, so no session state is kept between requests).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type Actor, isPrivilegedSkill, type SkillManifest, type SkillResult } from '../../../sdk/index.js';

export interface McpCaller {
  actor: Actor;
  /** May see and run admin-only skills (policy still decides each call). */
  admin: boolean;
}

export interface SkillSource {
  list(): Array<SkillManifest & { plugin: string }>;
  execute(name: string, args: unknown, actor: Actor): Promise<SkillResult>;
  /** Told of every call (the action timeline). */
  recorded?(call: { name: string; caller: McpCaller; result: SkillResult }): void;
}

/** The skills a caller is offered: every available one, less the privileged ones for a non-admin. */
export function offered(source: SkillSource, caller: McpCaller): Array<SkillManifest & { plugin: string }> {
  return source
    .list()
    .filter((s) => caller.admin || !isPrivilegedSkill(s))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export async function createMcpServer(source: SkillSource, caller: McpCaller, version: string): Promise<Server> {
  const [{ Server }, { ListToolsRequestSchema, CallToolRequestSchema }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const server = new Server({ name: 'keel', version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: offered(source, caller).map((s) => ({
      name: s.name,
      description: s.description,
      inputSchema: s.parameters as unknown as { type: 'object'; [k: string]: unknown },
      annotations: {
        ...(s.isParallelSafe ? { readOnlyHint: true } : {}),
        ...(s.isDangerous ? { destructiveHint: true } : {}),
      },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const name = req.params.name;
    const skill = source.list().find((s) => s.name === name);
    // A non-admin is told the same as for a skill that does not exist: privileged skills stay hidden from them.
    if (!skill || (!caller.admin && isPrivilegedSkill(skill))) {
      return {
        isError: true,
        content: [{ type: 'text' as const, text: `Unknown tool "${name}". tools/list lists the ones you may use.` }],
      };
    }
    const result = await source.execute(name, req.params.arguments ?? {}, caller.actor);
    source.recorded?.({ name, caller, result });
    if (result.success) return { content: [{ type: 'text' as const, text: result.result }] };
    return { isError: true, content: [{ type: 'text' as const, text: `${result.code ? `${result.code}: ` : ''}${result.result}` }] };
  });
  return server;
}

/** One streamable HTTP request at `/mcp`: a fresh server and stateless transport answer it, then both close. */
export async function handleHttp(
  source: SkillSource,
  caller: McpCaller,
  version: string,
  raw: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const server = await createMcpServer(source, caller, version);
  const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true }); // no sessionIdGenerator: stateless
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(raw, res, body);
}

/** `keel mcp`: serve on this process's stdin/stdout until the client goes away. */
export async function serveStdio(source: SkillSource, caller: McpCaller, version: string): Promise<void> {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = await createMcpServer(source, caller, version);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
}
