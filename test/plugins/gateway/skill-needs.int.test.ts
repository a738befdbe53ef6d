/**
 * A skill that cannot work yet (web_search without a search key) is still listed by GET /api/skills and
 * GET /api/skills/:name, with what it needs; once the key is set it is listed as ready. (The agent's catalogue
 * still offers it only when it works: test/kernel/skill-availability.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gw } from './harness.js';

let g: Gw;
beforeAll(async () => {
  g = await startGateway({ fakeAgent: true });
});
afterAll(async () => g?.close());

const NEEDS = 'needs searchAApiKey or searchBApiKey';

describe('skills that need a key', () => {
  it('lists web_search without a search key, says what it needs, and drops the note once a key is set', async () => {
    const list = (await (await g.req('/api/skills')).json()) as { skills: Array<Record<string, unknown>> };
    expect(list.skills.find((s) => s.name === 'web_search')).toEqual({
      name: 'web_search',
      description: expect.stringContaining('Search the web'),
      category: 'web',
      parameters: ['query', 'maxResults'],
      needs: NEEDS,
    });
    // Skills that work carry no such note.
    expect(list.skills.find((s) => s.name === 'http_fetch')).not.toHaveProperty('needs');

    const one = await g.req('/api/skills/web_search');
    expect(one.status).toBe(200);
    expect(await one.json()).toMatchObject({ name: 'web_search', plugin: 'web', available: false, needs: NEEDS });
    const fetchOne = await g.req('/api/skills/http_fetch');
    expect(await fetchOne.json()).toMatchObject({ name: 'http_fetch', available: true });

    // Running it explains the missing key; the agent is not offered it meanwhile.
    const run = (await (
      await g.req('/api/skills/web_search/execute', { method: 'POST', json: { parameters: { query: 'keel' } } })
    ).json()) as { success: boolean; result: string };
    expect(run.success).toBe(false);
    expect(run.result).toMatch(/set searchAApiKey .* or searchBApiKey/);

    const set = await g.req('/api/config/searchAApiKey', { method: 'PUT', json: { value: 'serper-test-key-123' } });
    expect(set.status).toBe(200);
    const after = (await (await g.req('/api/skills')).json()) as { skills: Array<Record<string, unknown>> };
    expect(after.skills.find((s) => s.name === 'web_search')).not.toHaveProperty('needs');
    expect(await (await g.req('/api/skills/web_search')).json()).toMatchObject({ available: true });
    expect(await (await g.req('/api/skills/web_search')).json()).not.toHaveProperty('needs');
  });
});
