/**
 * The doctor's browser finding: which Chromium the browser skills use, or how to install one when none is found
 * (Keel never downloads a browser).
 */
import { describe, expect, it } from 'vitest';
import { buildReport, type DoctorSources } from '../../../plugins/doctor/src/report.js';
import { tmpdir } from 'node:os';

function sources(values: Record<string, unknown>, declaredKeys = Object.keys(values)): DoctorSources {
  return { source: 'config', home: tmpdir(), get: (k) => values[k], declared: (k) => declaredKeys.includes(k) };
}

describe('doctor: browser', () => {
  it('says how to install a browser when the configured one does not exist', async () => {
    const r = await buildReport(sources({ browserExecutablePath: '/nonexistent/chromium', browserEngine: 'engineA' }));
    const f = r.findings.find((x) => x.message.includes('browserExecutablePath'));
    expect(f).toMatchObject({ area: 'plugins', level: 'warn' });
    expect(f!.message).toContain('/nonexistent/chromium, which does not exist');
    expect(f!.fix).toMatch(/apt-get install chromium.*keel config set browserExecutablePath/);
  });

  it('names the Chromium it found, and says nothing for engineC or without the browser plugin', async () => {
    const found = await buildReport(sources({ browserExecutablePath: process.execPath, browserEngine: 'engineA' }));
    expect(found.findings.some((x) => x.level === 'ok' && x.message === `Browser skills use ${process.execPath}.`)).toBe(true);
    const cdp = await buildReport(sources({ browserExecutablePath: '/nonexistent', browserEngine: 'engineC' }));
    expect(cdp.findings.some((x) => /Browser skills|browserExecutablePath/.test(x.message))).toBe(false);
    const none = await buildReport(sources({}, []));
    expect(none.findings.some((x) => /Browser skills|Chromium/.test(x.message))).toBe(false);
  });
});
