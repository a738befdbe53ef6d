/**
 * The doctor says what Keel keeps on disk, by part, and warns when downloads pile up because downloadsKeepDays is 0
 * (docs/housekeeping.md).
 */
import { mkdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildReport, type DoctorSources } from '../../../plugins/doctor/src/report.js';
import { rm, tmp } from '../../helpers.js';

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rm(h);
});

function sources(home: string, values: Record<string, unknown>): DoctorSources {
  return { source: 'config', home, get: (k) => values[k], declared: (k) => k in values };
}

describe('doctor: what Keel keeps', () => {
  it('sizes downloads, channel stores, knowledge, memory and logs; warns about 1 GiB+ of downloads kept for good', async () => {
    const home = tmp('keel-doctor-usage-');
    homes.push(home);
    mkdirSync(join(home, 'downloads', 'chatA'), { recursive: true });
    // a sparse 1.5 GiB attachment: its size without the disk space
    writeFileSync(join(home, 'downloads', 'chatA', 'big.bin'), '');
    truncateSync(join(home, 'downloads', 'chatA', 'big.bin'), 1.5 * 1024 ** 3);
    writeFileSync(join(home, 'daemon.log'), 'x'.repeat(2048));
    mkdirSync(join(home, 'daily'));
    writeFileSync(join(home, 'daily', '2026-11-27.md'), 'y'.repeat(1024));

    const kept = await buildReport(sources(home, { downloadsKeepDays: 0 }));
    const sizes = kept.findings.find((f) => f.area === 'disk' && f.message.startsWith('Keel keeps:'));
    expect(sizes?.level).toBe('ok');
    expect(sizes?.message).toMatch(/downloads 1\.5 GiB, channel stores 0 B, knowledge 0 B, memory 1\.0 KiB, logs 2\.0 KiB\./);
    const warn = kept.findings.find((f) => f.area === 'disk' && f.level === 'warn');
    expect(warn?.message).toMatch(/downloads\/ holds 1\.5 GiB and downloadsKeepDays is 0/);
    expect(warn?.fix).toBe('keel config set downloadsKeepDays 30');

    // removed after 30 days: no warning
    const swept = await buildReport(sources(home, { downloadsKeepDays: 30 }));
    expect(swept.findings.some((f) => f.area === 'disk' && f.level === 'warn')).toBe(false);
  });
});
