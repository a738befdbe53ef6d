/**
 * Every tools/call of an MCP client is recorded in the action timeline (docs/mcp.md, docs/timelines.md): the
 * official SDK's Client over StreamableHTTPClientTransport against a real gateway at /mcp; each call gets a
 * timeline of its own (who called, the skill, whether it worked, the error), readable through GET /api/tasks/:id
 * and found by `mcp:<skill>`; the skill's result is not copied into it. A call refused before it ran (invalid
 * arguments) is not recorded, as for every skill call.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Timeline, TimelineStore } from '../../../plugins/timeline/src/store.js';
import { skillEntry, waitFor, writePlugin } from '../../helpers.js';
import { type Gw, startGateway } from '../gateway/harness.js';

const KEY = 'mcp-timeline-test-key-0123456789';

describe('mcp server calls in the action timeline', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({
      key: KEY,
      overrides: { gatewayApiKey: KEY },
      before: (home) =>
        writePlugin(join(home, 'plugins'), {
          id: 'shouty',
          manifest: { skills: [skillEntry('shout'), skillEntry('crash')] },
          setup: `
            ctx.skills.register('shout', ({ text }) => 'SECRET-RESULT ' + text.toUpperCase());
            ctx.skills.register('crash', () => { throw new Error('the disk is on fire'); });
          `,
        }),
    });
  }, 60_000);
  afterAll(() => g?.close());

  /** Timelines filed under `mcp:<skill>`, read beside the running gateway (WAL allows it). */
  const calls = (skill: string): Timeline[] => {
    const store = TimelineStore.read(g.home);
    try {
      return store?.byMessageId(`mcp:${skill}`) ?? [];
    } finally {
      store?.close();
    }
  };

  it('records each call with who made it and how it ended; GET /api/tasks/:id reads it', async () => {
    const client = new Client({ name: 'timeline-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${g.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }),
    );
    try {
      expect((await client.callTool({ name: 'shout', arguments: { text: 'hi' } })).content).toEqual([
        { type: 'text', text: 'SECRET-RESULT HI' },
      ]);
      expect((await client.callTool({ name: 'crash', arguments: { text: 'x' } })).isError).toBe(true);
      expect((await client.callTool({ name: 'shout', arguments: { text: 5 } })).isError).toBe(true);
    } finally {
      await client.close();
    }

    const [ok] = await waitFor(() => (calls('shout').length ? calls('shout') : undefined), 'the shout call recorded');
    expect(ok!.action).toMatchObject({ source: 'mcp', status: 'completed', task: 'MCP tools/call shout' });
    expect(ok!.action.id).toMatch(/^mcp_\d+_[0-9a-f]{6}$/);
    expect(ok!.events.map((e) => e.type)).toEqual(['received', 'queued', 'started', 'skill_call', 'settled']);
    expect(ok!.events[0]!.data).toMatchObject({ channel: 'mcp', messageId: 'mcp:shout' });
    expect(ok!.events[3]!.data).toMatchObject({ name: 'shout', ok: true });
    // The skill's result stays out of the timeline.
    expect(JSON.stringify(ok)).not.toContain('SECRET-RESULT');
    // Invalid arguments were refused before the skill ran: that call is not there.
    expect(calls('shout')).toHaveLength(1);

    const [bad] = await waitFor(() => (calls('crash').length ? calls('crash') : undefined), 'the crash call recorded');
    expect(bad!.action.status).toBe('failed');
    expect(bad!.events.at(-1)!.data).toMatchObject({ status: 'failed', reason: expect.stringContaining('the disk is on fire') });

    const r = await g.req(`/api/tasks/${bad!.action.id}`, { key: KEY });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      action: { id: string; status: string; source: string };
      timeline: { events: Array<{ type: string }> };
    };
    expect(body.action).toMatchObject({ id: bad!.action.id, status: 'failed', source: 'mcp' });
    expect(body.timeline.events.map((e) => e.type)).toContain('skill_call');
  });
});
