/**
 * `npm run bench`: every benchmark, each figure beside its peer measured in the same run.
 * Exits 1 when a budget of DESIGN.md section 7 is over (benchmarks are never part of `npm test`).
 */
import { printRows, type BenchRow } from './lib.js';

const suites: Array<[string, () => Promise<BenchRow[]>]> = [
  ['cli', async () => (await import('./cli.js')).benchCli()],
  ['dispatch', async () => (await import('./dispatch.js')).benchDispatch()],
  ['daemon', async () => (await import('./daemon.js')).benchDaemon()],
  ['queue', async () => (await import('./queue.js')).benchQueue()],
  ['shared queue', async () => (await import('./shared-queue.js')).benchSharedQueue()],
  ['receive', async () => (await import('./receive.js')).benchReceive()],
  ['hot reload', async () => (await import('./hot-reload.js')).benchHotReload()],
  ['agent', async () => (await import('./agent.js')).benchAgent()],
  ['gateway', async () => (await import('./gateway.js')).benchGateway()],
  ['gateway ws', async () => (await import('./gateway-ws.js')).benchGatewayWs()],
  ['dashboard', async () => (await import('./dashboard.js')).benchDashboard()],
  ['memory', async () => (await import('./memory.js')).benchMemory()],
  ['knowledge', async () => (await import('./knowledge.js')).benchKnowledge()],
  ['commands', async () => (await import('./commands.js')).benchCommands()],
  ['channels', async () => (await import('./channels.js')).benchChannels()],
  ['discord', async () => (await import('./discord.js')).benchDiscord()],
  ['timeline', async () => (await import('./timeline.js')).benchTimeline()],
  ['email', async () => (await import('./email.js')).benchEmail()],
  ['browser', async () => (await import('./browser.js')).benchBrowser()],
  ['slack', async () => (await import('./slack.js')).benchSlack()],
  ['whatsapp', async () => (await import('./whatsapp.js')).benchWhatsApp()],
];

const only = process.argv.slice(2);
let over = 0;
for (const [name, run] of suites) {
  if (only.length && !only.includes(name.replace(' ', '-'))) continue;
  console.log(`# ${name}`);
  const rows = await run();
  printRows(rows);
  over += rows.filter((r) => !r.ok).length;
}
process.exitCode = over ? 1 : 0;
