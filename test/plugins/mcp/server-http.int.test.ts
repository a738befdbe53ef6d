/**
 * Keel's MCP server at /mcp on a real gateway, reached by the official SDK's Client over
 * StreamableHTTPClientTransport: the gateway key is required, tools/list lists Keel's skills with their schemas,
 * tools/call runs one through dispatch (schema, policy) and the answer comes back as MCP content.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skillEntry, writePlugin } from '../../helpers.js';
import { type Gw, startGateway } from '../gateway/harness.js';

const KEY = 'mcp-http-test-key-0123456789';

async function connect(base: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  return client;
}

describe('mcp server over streamable HTTP at /mcp', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({
      key: KEY,
      overrides: { gatewayApiKey: KEY },
      before: (home) =>
        writePlugin(join(home, 'plugins'), {
          id: 'shouty',
          manifest: { skills: [skillEntry('shout'), skillEntry('vault_open', { adminOnly: true })] },
          setup: `
            ctx.skills.register('shout', ({ text }) => text.toUpperCase() + '!');
            ctx.skills.register('vault_open', ({ text }) => 'opened ' + text);
          `,
        }),
    });
  }, 60_000);
  afterAll(() => g?.close());

  it('refuses a client without the key (401), and a wrong key', async () => {
    const none = await g.req('/mcp', {
      method: 'POST',
      key: null,
      headers: { accept: 'application/json, text/event-stream' },
      json: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(none.status).toBe(401);
    await expect(connect(g.base, {})).rejects.toThrow(/401|Unauthorized|key/i);
    await expect(connect(g.base, { authorization: 'Bearer wrong' })).rejects.toThrow(/401|Unauthorized|key/i);
  });

  it('lists Keel skills as tools with their schemas and calls one', async () => {
    const client = await connect(g.base, { authorization: `Bearer ${KEY}` });
    try {
      const { tools } = await client.listTools();
      const shout = tools.find((t) => t.name === 'shout');
      expect(shout?.inputSchema).toMatchObject({ type: 'object', required: ['text'] });
      // The gateway key is the operator's: admin-only skills are offered to it.
      expect(tools.map((t) => t.name)).toContain('vault_open');
      const r = await client.callTool({ name: 'shout', arguments: { text: 'hi' } });
      expect(r.isError).not.toBe(true);
      expect(r.content).toEqual([{ type: 'text', text: 'HI!' }]);
      const bad = await client.callTool({ name: 'shout', arguments: { text: 5 } });
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(bad.content)).toMatch(/KEEL_E_SKILL_INVALID_ARGS.*text must be string/);
      const unknown = await client.callTool({ name: 'nope', arguments: {} });
      expect(unknown.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('takes the key as X-Api-Key too; GET /mcp is 405 (stateless endpoint)', async () => {
    const client = await connect(g.base, { 'x-api-key': KEY });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    const get = await g.req('/mcp', { key: KEY, headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
  });
});
