/**
 * The OpenAPI 3.1 document of the REST API, built from the same TypeBox schemas fastify validates with
 * (OpenAPI 3.1 schema objects are JSON Schema, so the route schemas go in as they are).
 */
import type { TSchema } from '../../../sdk/index.js';
import type { RouteDef } from './rest/route.js';
import { ErrorBody } from './rest/schemas.js';

type Json = Record<string, unknown>;

/** A plain JSON copy (TypeBox keeps its bookkeeping in symbol keys, which JSON drops). */
function plain(s: TSchema): Json {
  return JSON.parse(JSON.stringify(s)) as Json;
}

function parameters(where: 'path' | 'query', s: TSchema | undefined): Json[] {
  if (!s) return [];
  const p = plain(s) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(p.properties ?? {}).map(([name, schema]) => ({
    name,
    in: where,
    required: where === 'path' || (p.required ?? []).includes(name),
    schema,
    ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
  }));
}

export function openApiDocument(routes: RouteDef[], version: string, apiKey: boolean): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const responses: Json = {};
    for (const [code, schema] of Object.entries(r.schema.response)) {
      responses[code] = {
        description: Number(code) < 400 ? 'Success' : 'Error: `{error, message}`',
        content: { 'application/json': { schema: schema === ErrorBody ? { $ref: '#/components/schemas/ErrorBody' } : plain(schema) } },
      };
    }
    const op: Json = {
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      operationId: `${r.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      parameters: [...parameters('path', r.schema.params), ...parameters('query', r.schema.querystring)],
      ...(r.schema.body ? { requestBody: { required: true, content: { 'application/json': { schema: plain(r.schema.body) } } } } : {}),
      responses,
      // Declared on every operation so clients send X-Api-Key; the gateway enforces it only when a key is configured.
      security: [{ apiKey: [] }],
    };
    paths[path] = { ...(paths[path] as Json | undefined), [r.method.toLowerCase()]: op };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keel gateway REST API',
      version,
      description:
        'REST API of the Keel gateway. Every error is `{error, message}`. Every operation declares the apiKey scheme (header X-Api-Key); ' +
        'the gateway enforces it only when a key is configured (gatewayApiKey or `keel gateway -k`), and then a request without the right ' +
        'key gets 401. Whether this gateway has a key is `x-keel-api-key-required`. The WebSocket on the same port is described in docs/websocket.md.',
      license: { name: 'MIT', identifier: 'MIT' },
      'x-keel-api-key-required': apiKey,
    },
    servers: [{ url: '/' }],
    components: {
      schemas: { ErrorBody: plain(ErrorBody) },
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Api-Key',
          description:
            'The gateway key. Enforced only when a key is configured (gatewayApiKey, `keel gateway -k`); without one every request is accepted.',
        },
      },
    },
    paths,
  };
}
