/**
 * `keel config set|get|pending|approve|reject`. The CLI is the operator: it may set any key, LOCKED ones too.
 */
import { keelHome } from '../paths.js';
import { offlineView } from './offline.js';

const OPERATOR = { kind: 'operator', actor: { kind: 'operator', channel: 'cli' } } as const;

export async function configSet(key: string, raw: string, opts: { json?: boolean; config?: string }): Promise<number> {
  const { config } = await offlineView(keelHome(), opts.config);
  const value = config.parseCliValue(key, raw);
  const outcome = await config.set(key, value, OPERATOR);
  const shown = config.all({ masked: true })[key];
  const layer = config.layerOf(key);
  const note = layer === 'env' ? ` (note: an environment variable overrides it while set)` : '';
  if (opts.json) process.stdout.write(`${JSON.stringify({ success: true, key, value: shown, status: outcome.status })}\n`);
  else process.stdout.write(`Set ${key} = ${JSON.stringify(shown)}${note}\n`);
  return 0;
}

export async function configGet(key: string | undefined, opts: { json?: boolean; source?: boolean; config?: string }): Promise<number> {
  const { config } = await offlineView(keelHome(), opts.config);
  const all = config.all({ masked: true });
  if (key !== undefined) {
    config.assertKnown(key);
    const value = all[key];
    if (opts.json) process.stdout.write(`${JSON.stringify({ key, value, source: config.layerOf(key) })}\n`);
    else
      process.stdout.write(
        `${typeof value === 'string' ? value : JSON.stringify(value)}${opts.source ? `\t(${config.layerOf(key)})` : ''}\n`,
      );
    return 0;
  }
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
    return 0;
  }
  for (const k of Object.keys(all).sort()) {
    const v = all[k];
    if (v === undefined) continue;
    process.stdout.write(`${k} = ${JSON.stringify(v)}${opts.source ? `\t(${config.layerOf(k)})` : ''}\n`);
  }
  return 0;
}

export async function configPending(opts: { json?: boolean; config?: string }): Promise<number> {
  const { config } = await offlineView(keelHome(), opts.config);
  const list = config.pending();
  if (opts.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
  else if (list.length === 0) process.stdout.write('No configuration changes wait for approval.\n');
  else {
    for (const p of list) {
      process.stdout.write(`${p.id}\t${p.key} = ${JSON.stringify(p.value)}\t${p.reason ?? ''}\t(${p.requestedAt})\n`);
    }
  }
  return 0;
}

export async function configDecide(id: string, decision: 'approve' | 'reject', opts: { config?: string }): Promise<number> {
  const { config } = await offlineView(keelHome(), opts.config);
  if (decision === 'approve') {
    const out = await config.approve(id, OPERATOR);
    process.stdout.write(`Approved ${id}: ${out.key} is now set.\n`);
  } else {
    await config.reject(id, OPERATOR);
    process.stdout.write(`Rejected ${id}.\n`);
  }
  return 0;
}
