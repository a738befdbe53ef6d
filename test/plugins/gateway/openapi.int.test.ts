/**
 * /api/openapi.json passes a maintained OpenAPI linter (Redocly's recommended rules) with zero errors and zero
 * warnings, applies the apiKey scheme to every operation, and names its licence.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gw } from './harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
let open: Gw;
let keyed: Gw;

beforeAll(async () => {
  open = await startGateway({ fakeAgent: true });
  keyed = await startGateway({ fakeAgent: true, key: 'k-0123456789', overrides: { gatewayApiKey: 'k-0123456789' } });
});
afterAll(async () => {
  await open?.close();
  await keyed?.close();
});

async function lint(doc: unknown) {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: JSON.stringify(doc, null, 2), absoluteRef: 'openapi.json', config });
  return problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer ?? '?'}`);
}

describe('OpenAPI document', () => {
  for (const which of ['without a key', 'with a key'] as const) {
    it(`passes Redocly's recommended rules with no problem (${which})`, async () => {
      const g = which === 'with a key' ? keyed : open;
      const doc = (await (await g.req('/api/openapi.json')).json()) as Record<string, any>;
      expect(await lint(doc)).toEqual([]);
      // Every operation names the apiKey scheme, so generated clients and API explorers send X-Api-Key.
      for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        for (const [method, op] of Object.entries(methods)) expect(op.security, `${method} ${path}`).toEqual([{ apiKey: [] }]);
      }
      expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Api-Key' });
      expect(doc.components.securitySchemes.apiKey.description).toMatch(/only when .*key is configured/i);
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
      expect(doc.info.license).toEqual({ name: pkg.license, identifier: pkg.license });
      expect(doc.info['x-keel-api-key-required']).toBe(which === 'with a key');
    });
  }
});
