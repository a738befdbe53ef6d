/**
 * Doctor plugin entry: the system_check skill and the `keel doctor [--json]` command. See docs/scheduling.md ("Diagnostics").
 */
import { definePlugin, withProgress, type CommandContext } from '../../sdk/index.js';
import manifest from './manifest.js';
import { buildReport, renderText } from './src/report.js';
import { cliSources, kernelSources } from './src/sources.js';

async function doctorCommand(c: CommandContext): Promise<number> {
  // Probing connections and the gateway can take seconds: say so on a terminal (nothing in scripts or --json).
  const report = await withProgress('Checking Keel', async () => buildReport(await cliSources(c, manifest.version)), {
    quiet: c.options.json === true,
  });
  process.stdout.write(c.options.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderText(report)}\n`);
  return report.ok ? 0 : 1;
}

export default definePlugin({
  manifest,
  setup(ctx) {
    ctx.skills.register('system_check', async () => {
      const report = await buildReport(kernelSources(ctx));
      return { ...report, text: renderText(report) };
    });
  },
  commands: { doctor: doctorCommand },
});
