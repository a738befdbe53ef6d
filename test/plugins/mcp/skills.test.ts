/**
 * MCP tools as skills: names fitted to the skill pattern (a clash or a cut gets a hash), the agent counting an MCP
 * result as outside content (the rest of the action is untrusted), and a run-time skill that cannot take a name
 * another plugin owns.
 */
import { describe, expect, it } from 'vitest';
import { bringsOutsideContent } from '../../../plugins/agent/src/trust.js';
import { skillNameFor } from '../../../plugins/mcp/src/names.js';
import { skillFor } from '../../../plugins/mcp/src/skills.js';
import { Type } from '../../../sdk/index.js';
import { bootKernel } from '../../../testing/index.js';

describe('mcp tool skills', () => {
  it('names: mcp_<server>_<tool>, sanitised, at most 64 characters, clashes told apart', () => {
    expect(skillNameFor('Files', 'Echo-Text')).toBe('mcp_files_echo_text');
    const long = skillNameFor('srv', 'x'.repeat(100));
    expect(long).toMatch(/^mcp_srv_x+_[0-9a-f]{6}$/);
    expect(long.length).toBeLessThanOrEqual(64);
    const taken = new Set(['mcp_s_a_b']);
    expect(skillNameFor('s', 'a.b', taken)).toMatch(/^mcp_s_a_b_[0-9a-f]{6}$/);
  });

  it('an MCP tool result makes the rest of the action untrusted for the agent', () => {
    const s = skillFor('fx', {}, { name: 'read', inputSchema: { type: 'object' } }, new Set());
    expect(s).toMatchObject({ name: 'mcp_fx_read', category: 'mcp', adminOnly: true });
    expect(bringsOutsideContent(s)).toBe(true);
  });
});

describe('ctx.skills.declare', () => {
  it('refuses a name another plugin owns and a broken schema; a declared skill is validated and dispatched', async () => {
    const errors: string[] = [];
    const t = await bootKernel({
      plugins: [
        {
          manifest: {
            id: 'owner',
            version: '1.0.0',
            kind: 'skill',
            description: 'owns a name',
            skills: [{ name: 'taken_name', description: 'taken', category: 'test', parameters: Type.Object({}) }],
          },
          setup(ctx) {
            ctx.skills.register('taken_name' as never, () => 'mine');
          },
        },
        {
          manifest: { id: 'dyn', version: '1.0.0', kind: 'skill', description: 'declares at run time' },
          setup(ctx) {
            const params = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } as never;
            for (const [name, parameters] of [
              ['taken_name', params],
              ['bad_schema', { type: 'object', properties: { n: { type: 'nonsense' } } }],
            ] as const) {
              try {
                ctx.skills.declare({ name, description: 'x', category: 'test', parameters: parameters as never }, () => 'x');
              } catch (e) {
                errors.push((e as Error).message);
              }
            }
            ctx.skills.declare({ name: 'dyn_ok', description: 'ok', category: 'test', parameters: params }, ({ n }) => `n=${n}`);
          },
        },
      ],
    });
    try {
      expect(errors[0]).toMatch(/already provided by plugin "owner"/);
      expect(errors[1]).toMatch(/not valid JSON Schema/);
      const actor = { kind: 'operator', channel: 'cli' } as const;
      expect(await t.kernel.execute('taken_name', {}, actor)).toMatchObject({ success: true, result: 'mine' });
      expect(await t.kernel.execute('dyn_ok', { n: 2 }, actor)).toMatchObject({ success: true, result: 'n=2' });
      expect(await t.kernel.execute('dyn_ok', { n: 'x' }, actor)).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    } finally {
      await t.close();
    }
  });
});
