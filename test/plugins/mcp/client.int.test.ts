/**
 * Keel's MCP client against a real MCP server: the SDK's own McpServer (stdio-server.mjs), started by Keel from
 * `mcpServers`. Tools become skills mcp_<server>_<tool> with the server's schemas, allow/deny and adminOnly apply
 * per tool, results are marked untrusted, and a server that dies is restarted with backoff (visible in its status).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerStatus } from '../../../plugins/mcp/src/client.js';
import { bootKernel, type TestKernel } from '../../../testing/index.js';
import { waitFor } from '../../helpers.js';

const FIXTURE = join(import.meta.dirname, 'stdio-server.mjs');
const ADMIN = { kind: 'operator', channel: 'cli' } as const;
const USER = { kind: 'user', channel: 'chatA', userId: '42' } as const;

describe('mcp client: a real stdio MCP server', () => {
  let t: TestKernel;
  let startLog: string;
  const servers = () => t.kernel.registry.use<{ list(): ServerStatus[] }>('mcp:servers')!.list();
  const status = (name: string) => servers().find((s) => s.name === name)!;

  beforeAll(async () => {
    t = await bootKernel({
      builtins: ['mcp'],
      env: { KEEL_LEAK: 'should-not-pass' },
      before: (home) => {
        startLog = join(home, 'starts.log');
        const mcpServers = {
          fx: {
            command: process.execPath,
            args: [FIXTURE],
            env: { START_LOG: startLog, FIXTURE_TOKEN: 'tok-123' },
            toolDenyList: ['fails'],
            adminOnly: ['secret_env', 'crash'],
          },
          priv: { command: process.execPath, args: [FIXTURE], toolAllowList: ['add', 'fails'] },
          broken: { command: process.execPath, args: [FIXTURE], env: { FAIL_AT_START: '1' } },
          off: { command: process.execPath, args: [FIXTURE], enabled: false },
          denied: { command: process.execPath, args: [FIXTURE] },
        };
        // JSON is YAML: the servers come from keel.config.yaml as a user writes them.
        writeFileSync(join(home, 'keel.config.yaml'), JSON.stringify({ mcpServers, pluginDenyList: ['mcp-denied'] }));
      },
      config: { mcpRestartDelayMs: 20, mcpRestartMaxDelayMs: 40, mcpRestartAttempts: 3 },
    });
  }, 30_000);
  afterAll(() => t?.close());

  it('offers each permitted tool as a skill mcp_<server>_<tool> with its schema', async () => {
    await waitFor(() => t.kernel.registry.skills.has('mcp_fx_add'), 'fx tools as skills');
    await waitFor(() => status('priv')?.state === 'connected', 'priv connected');
    const names = [...t.kernel.registry.skills.keys()].filter((n) => n.startsWith('mcp_')).sort();
    expect(names).toEqual(['mcp_fx_add', 'mcp_fx_crash', 'mcp_fx_echo_text', 'mcp_fx_secret_env', 'mcp_priv_add', 'mcp_priv_fails']);
    const add = t.kernel.registry.skills.get('mcp_fx_add')!.manifest;
    expect(add.category).toBe('mcp');
    expect((add.parameters as { properties: Record<string, unknown> }).properties).toHaveProperty('a');
    expect(add.description).toMatch(/Add two numbers/);
    expect(t.kernel.registry.skills.get('mcp_fx_echo_text')!.manifest.isParallelSafe).toBe(true);
  });

  it('calls a tool and marks the result untrusted; the server schema is checked before the call', async () => {
    await waitFor(() => status('fx')?.state === 'connected', 'fx connected');
    const ok = await t.kernel.execute('mcp_fx_add', { a: 2, b: 3 }, USER);
    expect(ok).toMatchObject({ success: true });
    expect(ok.result).toBe('[untrusted content from MCP server fx, tool add]\nsum=5');
    const bad = await t.kernel.execute('mcp_fx_add', { a: 'two', b: 3 }, USER);
    expect(bad).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    expect(bad.result).toMatch(/a must be number/);
    const long = await t.kernel.execute('mcp_fx_echo_text', { text: 'x'.repeat(51) }, USER);
    expect(long).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    const echo = await t.kernel.execute('mcp_fx_echo_text', { text: 'hi' }, USER);
    expect(echo.result).toMatch(/echo:hi$/);
  });

  it('an error result is a failed skill call', async () => {
    const r = await t.kernel.execute('mcp_priv_fails', {}, ADMIN);
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/it went wrong/);
  });

  it('adminOnly: true by default, or for the listed tools only', async () => {
    // priv has no adminOnly: every tool needs an admin.
    const refused = await t.kernel.execute('mcp_priv_add', { a: 1, b: 1 }, USER);
    expect(refused).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect((await t.kernel.execute('mcp_priv_add', { a: 1, b: 1 }, ADMIN)).success).toBe(true);
    // fx lists secret_env and crash: those need an admin, add does not.
    expect(await t.kernel.execute('mcp_fx_secret_env', {}, USER)).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    const env = await t.kernel.execute('mcp_fx_secret_env', {}, ADMIN);
    // The server gets its own env, not Keel's environment.
    expect(env.result).toMatch(/token=tok-123 keelkey=none/);
  });

  it('the config with its tokens is masked', () => {
    expect(JSON.stringify(t.kernel.config.all({ masked: true }).mcpServers)).not.toMatch(/tok-123/);
  });

  it('a server that dies is restarted with backoff, and its state says so', async () => {
    const starts = () => readFileSync(startLog, 'utf8').trim().split('\n').length;
    const before = starts();
    const r = await t.kernel.execute('mcp_fx_crash', {}, ADMIN);
    expect(r.success).toBe(true);
    await waitFor(() => status('fx').state !== 'connected' || starts() > before, 'fx noticed down');
    await waitFor(() => starts() > before && status('fx').state === 'connected', 'fx restarted');
    expect((await t.kernel.execute('mcp_fx_add', { a: 1, b: 2 }, USER)).result).toMatch(/sum=3$/);
  });

  it('a server that never starts is retried, then left failed with its last error', async () => {
    const s = await waitFor(() => (status('broken').state === 'failed' ? status('broken') : undefined), 'broken failed');
    expect(s.attempt).toBe(3);
    expect(s.lastError).toMatch(/closed|refusing/);
    expect([...t.kernel.registry.skills.keys()].some((n) => n.startsWith('mcp_broken_'))).toBe(false);
    expect(t.kernel.host.status('mcp')?.state).toBe('loaded');
  });

  it('a server switched off or on pluginDenyList (as mcp-<name>) is not started', () => {
    expect(status('off')).toMatchObject({ state: 'disabled', tools: 0 });
    expect(status('denied')).toMatchObject({ state: 'disabled' });
    expect(status('denied').lastError).toMatch(/mcp-denied" is on pluginDenyList/);
    expect([...t.kernel.registry.skills.keys()].some((n) => n.startsWith('mcp_off_') || n.startsWith('mcp_denied_'))).toBe(false);
  });
});
