// A small MCP server built with the official SDK's McpServer, spawned over stdio by Keel's MCP client in the tests.
// Each start appends a line to $START_LOG; the tool `crash` makes the process exit (a server that dies).
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.env.START_LOG) appendFileSync(process.env.START_LOG, `${process.pid}\n`);
if (process.env.FAIL_AT_START === '1') {
  process.stderr.write('fixture: refusing to start\n');
  process.exit(3);
}
const server = new McpServer({ name: 'fixture', version: '1.0.0' });
server.registerTool('add', { description: 'Add two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
  content: [{ type: 'text', text: `sum=${a + b}` }],
}));
server.registerTool(
  'Echo-Text',
  { description: 'Echo a text back', inputSchema: { text: z.string().max(50) }, annotations: { readOnlyHint: true } },
  async ({ text }) => ({ content: [{ type: 'text', text: `echo:${text}` }] }),
);
server.registerTool('secret_env', { description: 'Says whether it sees the token it was given', inputSchema: {} }, async () => ({
  content: [{ type: 'text', text: `token=${process.env.FIXTURE_TOKEN ?? 'none'} keelkey=${process.env.KEEL_LEAK ?? 'none'}` }],
}));
server.registerTool('fails', { description: 'Always an error result', inputSchema: {} }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'it went wrong' }],
}));
server.registerTool('crash', { description: 'Exit the server process', inputSchema: {} }, async () => {
  setTimeout(() => process.exit(1), 10);
  return { content: [{ type: 'text', text: 'bye' }] };
});
await server.connect(new StdioServerTransport());
