/**
 * Doctor plugin entry: the system_check skill and the `keel doctor [--json]` command. See docs/scheduling.md ("Diagnostics").
 */
import { definePlugin, withProgress, type CommandContext, type ModelProbe } from '../../sdk/index.js';
import manifest from './manifest.js';
import { buildReport, renderText } from './src/report.js';
import { cliSources, kernelSources } from './src/sources.js';

/**
 * `--probe`: the model is called from a kernel of this command's own with only the agent and the providers loaded
 * (no channel, no scheduler, no gateway), through system_check, as a plugin's skill is reached from a command.
 */
async function probeModel(c: CommandContext): Promise<ModelProbe> {
  const k = await c.startKernel({ processName: 'doctor', only: { ids: ['agent'], kinds: ['provider'] }, logLevel: 'error' });
  try {
    const r = await k.execute('system_check', { probeModel: true }, { kind: 'operator', channel: 'cli' });
    if (!r.success) return { ok: false, error: r.result, fix: 'See the error; keel doctor without --probe checks the settings.' };
    const probe = (JSON.parse(r.result) as { modelProbe?: ModelProbe }).modelProbe;
    return probe ?? { ok: false, error: 'the check returned nothing', fix: 'Run keel doctor --probe again.' };
  } finally {
    await k.stop();
  }
}

async function doctorCommand(c: CommandContext): Promise<number> {
  // Probing connections and the gateway can take seconds: say so on a terminal (nothing in scripts or --json).
  const report = await withProgress(
    c.options.probe ? 'Checking Keel and calling the model' : 'Checking Keel',
    async () => {
      const src = await cliSources(c, manifest.version);
      if (c.options.probe) src.modelProbe = await probeModel(c);
      return buildReport(src);
    },
    { quiet: c.options.json === true },
  );
  process.stdout.write(c.options.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderText(report)}\n`);
  return report.ok ? 0 : 1;
}

export default definePlugin({
  manifest,
  setup(ctx) {
    ctx.skills.register('system_check', async (args, call) => {
      const src = kernelSources(ctx);
      if (args.probeModel) {
        const llm = ctx.use('llm');
        src.modelProbe = llm?.probe
          ? await llm.probe({ ...(call.signal ? { signal: call.signal } : {}) })
          : {
              ok: false,
              error: 'no agent plugin runs in this process, so there is no model to call',
              fix: 'Enable the agent plugin (pluginAllowList, pluginDenyList).',
            };
      }
      const report = await buildReport(src);
      return { ...report, text: renderText(report) };
    });
  },
  commands: { doctor: doctorCommand },
});
