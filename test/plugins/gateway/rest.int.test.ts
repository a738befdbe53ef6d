/**
 * Every REST endpoint of SPEC "Gateway REST" against a real kernel and a real fastify on 127.0.0.1, port 0.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { skillEntry, writePlugin } from '../../helpers.js';
import { startGateway, writeMemoryAndChannelPlugin, type Gw } from './harness.js';

const SECRET = 'sk-live-0123456789abcdef';
let g: Gw;

beforeAll(async () => {
  g = await startGateway({
    env: { FAKE_AGENT_API_KEY: SECRET },
    fakeAgent: true,
    // Test plugins below fake the memory capability, a `run_command` skill and the channel:chatA status.
    deny: ['memory', 'system', 'chatA'],
    before: (home) => {
      writeMemoryAndChannelPlugin(home);
      writePlugin(join(home, 'plugins'), {
        id: 'tools',
        manifest: {
          skills: [
            {
              ...skillEntry('flagged', { isDeep: true, isParallelSafe: true }),
              parameters: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, additionalProperties: false },
            },
            skillEntry('boom'),
            skillEntry('slow'),
            skillEntry('run_command', { adminOnly: true, isDangerous: true }),
          ],
        },
        setup: `
          ctx.skills.register('flagged', (args) => ({ got: args }));
          ctx.skills.register('boom', () => { throw new Error('kaboom'); });
          ctx.skills.register('slow', () => new Promise((r) => setTimeout(() => r('done'), 5.3)));
          ctx.skills.register('run_command', ({ text }) => 'ran ' + text);
        `,
      });
    },
  });
});
afterAll(async () => {
  await g?.close();
});

async function json(r: Response): Promise<any> {
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  return r.json();
}

describe('gateway REST', () => {
  it('GET /api/status is the agent status object', async () => {
    const r = await g.req('/api/status');
    expect(r.status).toBe(200);
    const s = await json(r);
    expect(Object.keys(s).sort()).toEqual(['autonomy', 'memory', 'model', 'provider', 'queue', 'running', 'safeMode', 'version'].sort());
    expect(s.running).toBe(false);
    expect(s.memory).toEqual({ short: 1, episodic: 1, long: 1 });
    expect(s.queue).toEqual({ pending: expect.any(Number), failed: expect.any(Number) });
    expect(s.autonomy).toEqual({ enabled: expect.any(Boolean), interval: expect.any(Number) });
    expect(s.version).toBe(JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')).version);
  });

  it('GET /api/skills lists descriptors with parameter names and flags in the description', async () => {
    const { skills } = await json(await g.req('/api/skills'));
    const flagged = skills.find((s: any) => s.name === 'flagged');
    expect(flagged).toEqual({
      name: 'flagged',
      description: 'test skill flagged [isDeep: true, isResearch: false, isParallelSafe: true, isDangerous: false]',
      category: 'test',
      parameters: ['a', 'b'],
    });
    // All four flags with their values (SPEC), false ones too; adminOnly appears when set.
    expect(skills.find((s: any) => s.name === 'echo')).toEqual({
      name: 'echo',
      description: 'Returns its text [isDeep: false, isResearch: false, isParallelSafe: false, isDangerous: false]',
      category: 'test',
      parameters: ['text'],
    });
    expect(skills.find((s: any) => s.name === 'run_command').description).toBe(
      'test skill run_command [isDeep: false, isResearch: false, isParallelSafe: false, isDangerous: true, adminOnly: true]',
    );
    // SPEC's four fields; a skill that cannot work yet (web_search without a search key) adds what it needs.
    for (const s of skills) {
      const fields =
        s.name === 'web_search'
          ? ['category', 'description', 'name', 'needs', 'parameters']
          : ['category', 'description', 'name', 'parameters'];
      expect(Object.keys(s).sort(), s.name).toEqual(fields);
    }
  });

  it('POST /api/skills/:name/execute runs a skill and maps its failures to statuses', async () => {
    const ok = await g.req('/api/skills/echo/execute', { method: 'POST', json: { parameters: { text: 'hi' } } });
    expect(ok.status).toBe(200);
    const body = await json(ok);
    expect(body).toEqual({ success: true, result: 'hi', executionTime: expect.any(Number) });
    expect(body.executionTime).toBeGreaterThanOrEqual(0);
    // SPEC: whole milliseconds, also for a skill that takes a fraction of one or a few.
    expect(Number.isInteger(body.executionTime)).toBe(true);
    const slow = await json(await g.req('/api/skills/slow/execute', { method: 'POST', json: { parameters: { text: 'x' } } }));
    expect(slow.success).toBe(true);
    expect(Number.isInteger(slow.executionTime)).toBe(true);
    expect(slow.executionTime).toBeGreaterThanOrEqual(4);

    const obj = await json(await g.req('/api/skills/flagged/execute', { method: 'POST', json: { parameters: { a: 'x', b: 2 } } }));
    expect(JSON.parse(obj.result)).toEqual({ got: { a: 'x', b: 2 } });

    const failed = await g.req('/api/skills/boom/execute', { method: 'POST', json: { parameters: { text: 'x' } } });
    expect(failed.status).toBe(200);
    expect(await json(failed)).toEqual({
      success: false,
      result: expect.stringContaining('kaboom'),
      executionTime: expect.any(Number),
      code: 'KEEL_E_SKILL_FAILED',
      // An uncoded error keeps the generic code and names the plugin whose handler threw it.
      plugin: 'tools',
    });

    const unknown = await g.req('/api/skills/nope/execute', { method: 'POST', json: { parameters: {} } });
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toEqual({ error: 'Not Found', message: expect.stringContaining('nope'), code: 'KEEL_E_SKILL_UNKNOWN' });

    const bad = await g.req('/api/skills/echo/execute', { method: 'POST', json: { parameters: { text: 5 } } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).message).toMatch(/text/);

    const notObject = await g.req('/api/skills/echo/execute', { method: 'POST', json: { parameters: 'hi' } });
    expect(notObject.status).toBe(400);
    expect((await json(notObject)).message).toMatch(/parameters/);

    // Safe mode refuses run_command for everyone, the operator included: 403.
    expect((await g.req('/api/config/safeMode', { method: 'PUT', json: { value: true } })).status).toBe(200);
    const refused = await g.req('/api/skills/run_command/execute', { method: 'POST', json: { parameters: { text: 'ls' } } });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toEqual({ error: 'Forbidden', message: expect.stringMatching(/safe mode/i), code: 'KEEL_E_SAFE_MODE' });
    expect((await g.req('/api/config/safeMode', { method: 'PUT', json: { value: false } })).status).toBe(200);
    const allowed = await g.req('/api/skills/run_command/execute', { method: 'POST', json: { parameters: { text: 'ls' } } });
    expect(await json(allowed)).toMatchObject({ success: true, result: 'ran ls' });
  });

  it('POST /api/tasks queues a task (201) that shows in GET /api/tasks and in the queue file', async () => {
    const r = await g.req('/api/tasks', { method: 'POST', json: { task: 'water the plants', priority: 15 } });
    expect(r.status).toBe(201);
    const body = await json(r);
    expect(body).toEqual({ success: true, taskId: expect.stringMatching(/^act_\d+_/), message: expect.stringContaining('priority 10') });
    const dflt = await json(await g.req('/api/tasks', { method: 'POST', json: { task: 'default priority' } }));
    expect(dflt.message).toContain('priority 5');
    const low = await json(await g.req('/api/tasks', { method: 'POST', json: { task: 'low', priority: 0 } }));
    expect(low.message).toContain('priority 1');

    const lists = await json(await g.req('/api/tasks'));
    expect(Object.keys(lists).sort()).toEqual(['completed', 'failed', 'pending']);
    const mine = lists.pending.find((a: any) => a.id === body.taskId);
    expect(mine).toMatchObject({ task: 'water the plants', priority: 10, status: 'pending', source: 'gateway' });
    expect(mine.metadata).toMatchObject({ retries: 0, maxRetries: expect.any(Number), ttl: expect.any(Number) });

    const file = await readQueueList(g.home);
    expect(file.pending.find((a) => a.id === body.taskId)).toMatchObject({ task: 'water the plants', priority: 10, source: 'gateway' });
  });

  it('POST /api/tasks refuses a blank task, a non-integer priority and unknown fields with 400', async () => {
    const before = (await readQueueList(g.home)).pending.length;
    for (const b of [
      { task: '   ' },
      { task: '' },
      { task: 'x', priority: '5' },
      { task: 'x', priority: null },
      { task: 'x', priority: 2.5 },
      { priority: 3 },
      { task: 'x', extra: 1 },
      [],
      'task',
    ]) {
      const r = await g.req('/api/tasks', { method: 'POST', json: b });
      expect(r.status, JSON.stringify(b)).toBe(400);
      expect(Object.keys(await json(r)).sort()).toEqual(['error', 'message']);
    }
    const named = await json(await g.req('/api/tasks', { method: 'POST', json: { task: 'x', priority: 'high' } }));
    expect(named.message).toContain('priority');
    // SPEC: an integer, as WebSocket pushTask requires; a fraction is refused, not rounded
    const frac = await json(await g.req('/api/tasks', { method: 'POST', json: { task: 'x', priority: 7.5 } }));
    expect(frac.message).toMatch(/priority.*integer/);
    expect((await readQueueList(g.home)).pending.length).toBe(before);
  });

  it('GET /api/config is flat, with secrets masked', async () => {
    const cfg = await json(await g.req('/api/config'));
    expect(cfg.fakeAgentGreeting).toBe('hello');
    expect(cfg.gatewayPort).toBe(0);
    const masked = cfg.fakeAgentApiKey;
    expect(typeof masked).toBe('string');
    expect(masked).not.toBe(SECRET);
    expect(masked.startsWith(SECRET.slice(0, 2))).toBe(true);
    expect(masked).toMatch(/\*/);
    const raw = JSON.stringify(cfg);
    expect(raw).not.toContain(SECRET);
    expect(raw).not.toContain(SECRET.slice(4));
  });

  it('PUT /api/config/:key validates, applies, masks secrets and reports unknown keys', async () => {
    const r = await g.req('/api/config/fakeAgentGreeting', { method: 'PUT', json: { value: 'ahoy' } });
    expect(r.status).toBe(200);
    expect(await json(r)).toEqual({ success: true, key: 'fakeAgentGreeting', value: 'ahoy', message: expect.any(String) });
    expect((await json(await g.req('/api/config'))).fakeAgentGreeting).toBe('ahoy');
    expect(readFileSync(join(g.home, 'keel.config.yaml'), 'utf8')).toContain('ahoy');

    const bad = await g.req('/api/config/fakeAgentGreeting', { method: 'PUT', json: { value: 5 } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).message).toContain('fakeAgentGreeting');
    expect((await json(await g.req('/api/config'))).fakeAgentGreeting).toBe('ahoy');

    const unknown = await g.req('/api/config/noSuchKey', { method: 'PUT', json: { value: 1 } });
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toEqual({ error: 'Not Found', message: expect.stringContaining('noSuchKey') });

    const noValue = await g.req('/api/config/fakeAgentGreeting', { method: 'PUT', json: {} });
    expect(noValue.status).toBe(400);
    expect((await json(noValue)).message).toContain('value');

    const secret = await json(await g.req('/api/config/fakeAgentApiKey', { method: 'PUT', json: { value: 'sk-new-secret-987654321' } }));
    expect(secret.success).toBe(true);
    expect(secret.value).not.toBe('sk-new-secret-987654321');
    expect(JSON.stringify(secret)).not.toContain('secret-987654321');
  });

  it('GET /api/memory filters by type, search and limit (default 50)', async () => {
    const all = await json(await g.req('/api/memory'));
    expect(all.total).toBe(3);
    expect(all.memories[0]).toEqual({
      id: 'm1',
      type: 'short',
      content: 'saw the weather page',
      timestamp: '2026-01-01T00:00:00.000Z',
      metadata: { actionId: 'act_1_a', step: 1 },
    });
    expect((await json(await g.req('/api/memory?type=long'))).memories.map((m: any) => m.id)).toEqual(['m3']);
    expect((await json(await g.req('/api/memory?search=weather&limit=1'))).memories.map((m: any) => m.id)).toEqual(['m1']);
    expect((await json(await g.req('/api/memory?search=weather&limit=1'))).total).toBe(2);
    expect((await g.req('/api/memory?type=vector')).status).toBe(400);
    expect((await g.req('/api/memory?limit=0')).status).toBe(400);
    expect((await g.req('/api/memory?limit=ten')).status).toBe(400);
  });

  it('GET /api/connections has one entry per running channel', async () => {
    const conns = await json(await g.req('/api/connections'));
    expect(conns.chatA).toEqual({ enabled: true, connected: true, botUsername: 'keelbot', botId: 42 });
    // The built-in gateway chat is a running channel too, and the built-in email channel runs unconfigured
    // (receiving off) and lists itself as such.
    expect(conns.email).toEqual({ enabled: false, connected: false, state: 'stopped' });
    expect(Object.keys(conns).sort()).toEqual(['chatA', 'chatB', 'chatC', 'chatD', 'email', 'gateway-chat', 'openai-api']);
  });

  it('GET /api/logs returns log entries, filtered by level and limited', async () => {
    const { logs } = await json(await g.req('/api/logs'));
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.length).toBeLessThanOrEqual(100);
    for (const l of logs) {
      expect(Object.keys(l).sort()).toEqual(['level', 'message', 'timestamp']);
      expect(new Date(l.timestamp).toISOString()).toBe(l.timestamp);
    }
    // the address, and where to point a browser for the dashboard
    expect(
      logs.some((l: any) => /Gateway listening on http:\/\/127\.0\.0\.1:(\d+); dashboard: http:\/\/localhost:\1\/$/.test(l.message)),
    ).toBe(true);
    const one = await json(await g.req('/api/logs?limit=1&level=info'));
    expect(one.logs).toHaveLength(1);
    expect(one.logs[0].level).toBe('info');
    expect((await g.req('/api/logs?level=debug')).status).toBe(400);
  });

  it('GET and PUT /api/security', async () => {
    const s = await json(await g.req('/api/security'));
    expect(s).toEqual({
      safeMode: false,
      apiKeySet: false,
      adminUsers: [],
      pluginAllowList: [],
      pluginDenyList: ['agent', 'memory', 'system', 'chatA'],
    });
    const put = await g.req('/api/security', {
      method: 'PUT',
      json: { safeMode: true, adminUsers: { chatA: ['111'] }, pluginDenyList: ['agent', 'memory', 'system', 'chatA', 'evil'] },
    });
    expect(put.status).toBe(200);
    expect(await json(put)).toEqual({ success: true, message: expect.stringContaining('safeMode') });
    expect(await json(await g.req('/api/security'))).toEqual({
      safeMode: true,
      apiKeySet: false,
      adminUsers: ['chatA:111'],
      pluginAllowList: [],
      pluginDenyList: ['agent', 'memory', 'system', 'chatA', 'evil'],
    });
    // The flat form GET returns is accepted back.
    expect((await g.req('/api/security', { method: 'PUT', json: { adminUsers: ['chatA:111', 'email:me@example.com'] } })).status).toBe(200);
    expect((await json(await g.req('/api/security'))).adminUsers).toEqual(['chatA:111', 'email:me@example.com']);

    const before = await json(await g.req('/api/security'));
    for (const b of [
      { bogus: true },
      { safeMode: 'yes' },
      {},
      { pluginAllowList: 'x' },
      { adminUsers: { chatZ: ['1'] }, safeMode: false },
    ]) {
      const r = await g.req('/api/security', { method: 'PUT', json: b });
      expect(r.status, JSON.stringify(b)).toBe(400);
      expect(Object.keys(await json(r)).sort()).toEqual(['error', 'message']);
    }
    expect((await json(await g.req('/api/security', { method: 'PUT', json: { bogus: true } }))).message).toContain('bogus');
    expect(await json(await g.req('/api/security'))).toEqual(before);
    await g.req('/api/security', { method: 'PUT', json: { safeMode: false } });
  });

  it('serves an OpenAPI 3.1 document built from the route schemas', async () => {
    const doc = await json(await g.req('/api/openapi.json'));
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, m]) =>
      Object.keys(m).map((x) => `${x.toUpperCase()} ${p}`),
    );
    expect(ops.sort()).toEqual(
      [
        'GET /api/status',
        'GET /api/skills',
        'POST /api/skills/{name}/execute',
        'POST /api/tasks',
        'GET /api/tasks',
        'GET /api/config',
        'PUT /api/config/{key}',
        'GET /api/memory',
        'GET /api/connections',
        'GET /api/logs',
        'GET /api/security',
        'PUT /api/security',
        'GET /api/openapi.json',
        // The console endpoints (docs/api.md "Console endpoints").
        'GET /api/config/keys',
        'GET /api/config/pending',
        'POST /api/config/pending/{id}/approve',
        'POST /api/config/pending/{id}/reject',
        'POST /api/tasks/{id}/cancel',
        'GET /api/skills/{name}',
        'GET /api/plugins',
        'POST /api/plugins/{id}/enable',
        'GET /api/agent/readiness',
        'POST /api/agent/probe',
        // Added by the gateway-chat plugin through gateway:routes:gateway-chat.
        'POST /api/chat',
        'GET /api/chat/{conversationId}',
        // Added by the timeline plugin through gateway:routes:timeline.
        'GET /api/tasks/{id}',
        // Added by the openai-api plugin through gateway:routes:openai-api (OpenAI's protocol, docs/openai.md).
        'GET /v1/models',
        'GET /v1/models/{model}',
        'POST /v1/chat/completions',
        // Added by the mcp plugin through gateway:routes:mcp (MCP's streamable HTTP).
        'POST /mcp',
        'GET /mcp',
      ].sort(),
    );
    const task = doc.paths['/api/tasks'].post;
    expect(task.requestBody.content['application/json'].schema.required).toEqual(['task']);
    expect(Object.keys(task.responses['201'].content['application/json'].schema.properties).sort()).toEqual([
      'message',
      'success',
      'taskId',
    ]);
    expect(doc.paths['/api/memory'].get.parameters.map((p: any) => p.name).sort()).toEqual(['limit', 'search', 'type']);

    // docs/api.md documents exactly the operations the document lists.
    const md = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'api.md'), 'utf8');
    const table = md.slice(md.indexOf('| Method and path |'), md.indexOf('### GET /api/status'));
    const documented = [...table.matchAll(/^\| `(GET|POST|PUT|DELETE) (\/(?:api\/|v1\/|mcp)[^`]*)`/gm)].map(
      (m) => `${m[1]} ${m[2]!.replace(/:([A-Za-z]+)/g, '{$1}')}`,
    );
    expect(documented.sort()).toEqual(ops.sort());
    for (const op of ops) expect(md, op).toContain(`### ${op.replace(/\{([A-Za-z]+)\}/g, ':$1')}`);
  });

  it('answers unknown routes with a JSON 404', async () => {
    for (const p of ['/api/nothing', '/api', '/api/status/extra', '/nothing']) {
      const r = await g.req(p);
      expect(r.status, p).toBe(404);
      expect(Object.keys(await json(r)).sort()).toEqual(['error', 'message']);
    }
    const wrongMethod = await g.req('/api/status', { method: 'DELETE' });
    expect(wrongMethod.status).toBe(404);
  });
});
