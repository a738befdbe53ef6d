import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfigExample } from '../scripts/config-example.js';

describe('app.config.example.yaml', () => {
  it('documents every key of the kernel and the built-in plugins (regenerate with npx tsx scripts/config-example.ts)', async () => {
    const committed = readFileSync(join(import.meta.dirname, '..', 'app.config.example.yaml'), 'utf8');
    expect(committed).toBe(await renderConfigExample());
    expect(committed).toMatch(/^# safeMode: false$/m);
    expect(committed).toMatch(/^# pluginHealthCheckIntervalMinutes: 15$/m);
  });
});
