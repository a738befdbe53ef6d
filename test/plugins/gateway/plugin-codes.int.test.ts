/**
 * A plugin's own error codes reach the client: a skill that throws an error whose `code` is `KEEL_E_*` keeps that
 * code through dispatch, the REST execute route and the WebSocket executeSkill reply; any other code is SKILL_FAILED.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skillEntry, writePlugin } from '../../helpers.js';
import { startGateway, type Gw } from './harness.js';
import { open } from './ws-helpers.js';

describe('plugin error codes at the gateway', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({
      fakeAgent: true,
      before: (home) =>
        writePlugin(join(home, 'plugins'), {
          id: 'coded',
          manifest: { skills: [skillEntry('blocked_fetch'), skillEntry('odd_code'), skillEntry('forbidden_thing')] },
          setup: `
            ctx.skills.register('blocked_fetch', () => { throw Object.assign(new Error('the address is private'), { code: 'KEEL_E_WEB_BLOCKED' }); });
            ctx.skills.register('odd_code', () => { throw Object.assign(new Error('disk says no'), { code: 'ENOSPC' }); });
            ctx.skills.register('forbidden_thing', () => { throw Object.assign(new Error('not for you'), { code: 'KEEL_E_FORBIDDEN' }); });
          `,
        }),
    });
  });
  afterAll(async () => {
    await g?.close();
  });

  it('dispatch keeps a plugin KEEL_E_* code and maps anything else to SKILL_FAILED', async () => {
    const k = g.kernel;
    expect(k.host.status('coded')?.state).toBe('loaded');
    expect(await k.execute('blocked_fetch', { text: 'x' }, k.operator)).toMatchObject({ success: false, code: 'KEEL_E_WEB_BLOCKED' });
    expect(await k.execute('odd_code', { text: 'x' }, k.operator)).toMatchObject({ success: false, code: 'KEEL_E_SKILL_FAILED' });
  });

  it('REST: the 200 failure result carries the code; a refusal carries it in the error body', async () => {
    const r = await g.req('/api/skills/blocked_fetch/execute', { method: 'POST', json: { parameters: { text: 'x' } } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ success: false, code: 'KEEL_E_WEB_BLOCKED' });
    expect(body.result).toMatch(/the address is private/);

    const odd = await g.req('/api/skills/odd_code/execute', { method: 'POST', json: { parameters: { text: 'x' } } });
    expect(await odd.json()).toMatchObject({ success: false, code: 'KEEL_E_SKILL_FAILED' });

    const ok = await g.req('/api/skills/echo/execute', { method: 'POST', json: { parameters: { text: 'hi' } } });
    const okBody = (await ok.json()) as Record<string, unknown>;
    expect(okBody).toMatchObject({ success: true, result: 'hi' });
    expect(okBody).not.toHaveProperty('code');

    const no = await g.req('/api/skills/forbidden_thing/execute', { method: 'POST', json: { parameters: { text: 'x' } } });
    expect(no.status).toBe(403);
    expect(await no.json()).toMatchObject({ error: 'Forbidden', code: 'KEEL_E_FORBIDDEN' });
  });

  it('WebSocket: the executeSkill error reply carries the code', async () => {
    const c = await open(`ws://127.0.0.1:${g.port}/`);
    try {
      const r = await c.request('executeSkill', { skill: 'blocked_fetch', parameters: { text: 'x' } });
      expect(r).toMatchObject({ action: 'executeSkill', ok: false, error: { code: 'KEEL_E_WEB_BLOCKED' } });
      expect(r.error.message).toMatch(/the address is private/);
    } finally {
      c.close();
    }
  });
});
