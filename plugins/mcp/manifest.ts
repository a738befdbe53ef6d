/**
 * MCP (docs/mcp.md): the client connects to the MCP servers in `mcpServers` and offers their tools as skills
 * `mcp_<server>_<tool>`; the server offers Keel's skills to MCP clients over stdio (`keel mcp`) and over
 * streamable HTTP at `/mcp` on the gateway (the gateway key required).
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const Names = Type.Array(Type.String({ minLength: 1 }));

export const ServerSpec = Type.Object(
  {
    command: Type.Optional(Type.String({ minLength: 1, description: 'stdio: the program to start' })),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
    cwd: Type.Optional(Type.String({ minLength: 1 })),
    url: Type.Optional(Type.String({ pattern: '^https?://', description: 'streamable HTTP: the endpoint' })),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    toolAllowList: Type.Optional(Names),
    toolDenyList: Type.Optional(Names),
    adminOnly: Type.Optional(Type.Union([Type.Boolean(), Names])),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const manifest = {
  id: 'mcp',
  version: '1.0.0',
  kind: 'service',
  description:
    "Model Context Protocol: the tools of the MCP servers in mcpServers as skills mcp_<server>_<tool>; Keel's skills for MCP clients over stdio (keel mcp) and at /mcp on the gateway.",
  permissions: { network: true, commands: true },
  provides: ['gateway:routes:mcp', 'mcp:servers'],
  config: {
    mcpServers: {
      schema: Type.Record(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$' }), ServerSpec),
      policy: 'LOCKED',
      // env and headers carry tokens: the whole value is masked in GET /api/config, keel config get and logs.
      secret: true,
      description:
        'MCP servers whose tools Keel offers as skills mcp_<server>_<tool>: <name>: {command, args, env, cwd} (stdio) or {url, headers} (streamable HTTP), ' +
        'with toolAllowList, toolDenyList, adminOnly (true by default: every tool needs an admin; false; or a list of the tools that do) and enabled. ' +
        'Each server is also admitted by the plugin lists as mcp-<name>.',
    },
    mcpRestartDelayMs: {
      schema: Type.Integer({ minimum: 10, maximum: 600_000 }),
      default: 1000,
      policy: 'SAFE',
      description: 'Wait before restarting an MCP server that died or could not connect; doubled on each failure in a row.',
    },
    mcpRestartMaxDelayMs: {
      schema: Type.Integer({ minimum: 10, maximum: 3_600_000 }),
      default: 60_000,
      policy: 'SAFE',
      description: 'Longest wait between two restarts of an MCP server.',
    },
    mcpRestartAttempts: {
      schema: Type.Integer({ minimum: 1, maximum: 1000 }),
      default: 10,
      policy: 'SAFE',
      description: 'Failures in a row after which an MCP server is left failed (until Keel restarts).',
    },
    mcpCallTimeoutMs: {
      schema: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
      default: 120_000,
      policy: 'SAFE',
      description: 'Longest time an MCP tool call may take.',
    },
  },
  cli: [
    {
      name: 'mcp',
      description: "Serve Keel's skills to an MCP client over stdio (Claude Desktop, Cursor: command `npx keel mcp`)",
      options: [{ flags: '--no-admin', description: 'act as a non-admin caller: admin-only skills are neither listed nor run' }],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
