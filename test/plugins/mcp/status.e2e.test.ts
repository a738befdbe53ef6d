/**
 * The MCP servers' state where an operator looks: `keel status` and `keel doctor` of a real `keel run` (the built
 * CLI) whose mcpServers has one working stdio server (stdio-server.mjs, the SDK's McpServer) and one that never
 * starts.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEEL_CLI, keelCli, rm, tmp, waitFor } from '../../helpers.js';
import { readRunState } from '../../../kernel/cli/run-state.js';

const FIXTURE = join(import.meta.dirname, 'stdio-server.mjs');

describe('keel status and keel doctor show MCP servers', () => {
  let home: string;
  beforeAll(async () => {
    home = tmp('keel-mcp-status-');
    const config = {
      mcpRestartDelayMs: 10,
      mcpRestartMaxDelayMs: 20,
      mcpRestartAttempts: 2,
      mcpServers: {
        good: { command: process.execPath, args: [FIXTURE], adminOnly: false },
        bad: { command: process.execPath, args: [FIXTURE], env: { FAIL_AT_START: '1' } },
      },
    };
    writeFileSync(join(home, 'keel.config.yaml'), JSON.stringify(config));
    const child = spawn(process.execPath, [KEEL_CLI, 'run'], { env: { ...process.env, KEEL_HOME: home }, stdio: 'ignore' });
    child.unref();
    await waitFor(() => {
      const s = readRunState(home)?.mcpServers;
      return s?.find((m) => m.name === 'good')?.state === 'connected' && s.find((m) => m.name === 'bad')?.state === 'failed';
    }, 'keel run published both MCP servers');
  }, 40_000);
  afterAll(async () => {
    await keelCli(home, ['stop']);
    rm(home);
  }, 30_000);

  it('keel status lists each server with its state, tool count and last error', async () => {
    const json = await keelCli(home, ['status', '--json']);
    const report = JSON.parse(json.stdout) as { mcpServers: Array<{ name: string; state: string; tools: number; lastError?: string }> };
    expect(report.mcpServers.find((m) => m.name === 'good')).toMatchObject({ state: 'connected', tools: 5 });
    expect(report.mcpServers.find((m) => m.name === 'bad')).toMatchObject({ state: 'failed', attempt: 2 });
    const text = await keelCli(home, ['status']);
    expect(text.stdout).toMatch(/MCP servers: .*good connected \(stdio\), 5 tools/);
    expect(text.stdout).toMatch(/bad failed: /);
  });

  it('keel doctor reports the failed server as an error with what to do, and the good one as ok', async () => {
    const r = await keelCli(home, ['doctor', '--json']);
    const report = JSON.parse(r.stdout) as { findings: Array<{ area: string; level: string; message: string; fix?: string }> };
    const mcp = report.findings.filter((f) => f.message.startsWith('MCP server'));
    expect(mcp.find((f) => f.message.includes('good'))).toMatchObject({ level: 'ok', area: 'connections' });
    expect(mcp.find((f) => f.message.includes('bad'))).toMatchObject({ level: 'error' });
    expect(mcp.find((f) => f.message.includes('bad'))?.fix).toMatch(/mcpServers\.bad/);
    expect(r.code).toBe(1);
  });
});
