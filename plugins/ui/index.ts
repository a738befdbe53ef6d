/**
 * UI plugin entry: only the `keel ui` command. ink and React load when the command runs, never in `keel run`.
 */
import { definePlugin, type CommandContext } from '../../sdk/index.js';
import manifest from './manifest.js';

async function uiCommand(c: CommandContext): Promise<number> {
  const o = c.options as { url?: string; apiKey?: string; runnerUrl?: string };
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    process.stderr.write('keel ui needs an interactive terminal; use `keel status --json` or the REST API from scripts.\n');
    return 2;
  }
  const view = await c.inspect();
  const port = Number(view.config.get('gatewayPort') ?? 3100);
  const base = (o.url ?? `http://127.0.0.1:${port === 0 ? 3100 : port}`).replace(/\/+$/, '');
  const apiKey = o.apiKey ?? process.env.KEEL_GATEWAY_API_KEY ?? view.secret?.('gatewayApiKey');
  const runnerUrl = o.runnerUrl ?? String(view.config.get('providerGApiUrl') ?? 'http://127.0.0.1:11434');
  const { runUi } = await import('./src/app.js');
  return runUi({ base, runnerUrl, version: view.version, ...(apiKey ? { apiKey } : {}) });
}

export default definePlugin({
  manifest,
  setup() {
    return {};
  },
  commands: { ui: uiCommand },
});
