/**
 * `keel mcp` (the built CLI) reached by the official SDK's Client over StdioClientTransport: Keel's skills are
 * listed and called over stdio; with --no-admin the caller is not an admin, so admin-only skills are neither listed
 * nor run (hidden from tools/list and refused by name).
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TimelineStore } from '../../../plugins/timeline/src/store.js';
import { KEEL_CLI, rm, skillEntry, tmp, waitFor, writePlugin } from '../../helpers.js';

async function keelMcp(home: string, args: string[]): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [KEEL_CLI, 'mcp', ...args],
      env: { KEEL_HOME: home, PATH: process.env.PATH ?? '' },
      stderr: 'ignore',
    }),
  );
  return client;
}

describe('keel mcp: stdio', () => {
  let home: string;
  beforeAll(() => {
    home = tmp('keel-mcp-stdio-');
    writePlugin(join(home, 'plugins'), {
      id: 'shouty',
      manifest: { skills: [skillEntry('shout'), skillEntry('vault_open', { adminOnly: true })] },
      setup: `
        ctx.skills.register('shout', ({ text }) => text.toUpperCase() + '!');
        ctx.skills.register('vault_open', ({ text }) => 'opened ' + text);
      `,
    });
  });
  afterAll(() => rm(home));

  it('lists and calls skills as the local operator (admin)', async () => {
    const client = await keelMcp(home, []);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('shout');
      expect(names).toContain('vault_open');
      expect(await client.callTool({ name: 'shout', arguments: { text: 'hey' } })).toMatchObject({
        content: [{ type: 'text', text: 'HEY!' }],
      });
      const v = await client.callTool({ name: 'vault_open', arguments: { text: 'box' } });
      expect(v.content).toEqual([{ type: 'text', text: 'opened box' }]);
    } finally {
      await client.close();
    }
    // Each call is in the action timeline (written behind by the timeline plugin of that process).
    const recorded = () => {
      const s = TimelineStore.read(home);
      try {
        return (s?.byMessageId('mcp:vault_open').length ?? 0) > 0;
      } finally {
        s?.close();
      }
    };
    await waitFor(recorded, 'the calls recorded');
    const store = TimelineStore.read(home);
    try {
      const shout = store?.byMessageId('mcp:shout') ?? [];
      expect(shout.map((t) => [t.action.source, t.action.status])).toEqual([['mcp', 'completed']]);
      expect(shout[0]!.events.find((e) => e.type === 'received')?.data).toMatchObject({ channel: 'mcp', userId: 'operator' });
      expect(store?.byMessageId('mcp:vault_open')).toHaveLength(1);
    } finally {
      store?.close();
    }
  }, 30_000);

  it('--no-admin: admin-only skills are hidden and refused', async () => {
    const client = await keelMcp(home, ['--no-admin']);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('shout');
      expect(names).not.toContain('vault_open');
      expect(names).not.toContain('run_command');
      const v = await client.callTool({ name: 'vault_open', arguments: { text: 'box' } });
      expect(v.isError).toBe(true);
      expect(JSON.stringify(v.content)).not.toMatch(/opened/);
      expect((await client.callTool({ name: 'shout', arguments: { text: 'ok' } })).content).toEqual([{ type: 'text', text: 'OK!' }]);
    } finally {
      await client.close();
    }
  }, 30_000);
});
