/**
 * Routes and WebSocket actions of other plugins (capability `gateway:routes:<plugin>`, sdk/gateway.ts). They are
 * looked up per request, so an extension that starts after the gateway (or restarts) is picked up without a
 * restart of the server; their schemas are compiled once per schema object.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import type { GatewayRoute, GatewayWsAction, PluginContext } from '../../../sdk/index.js';

export interface ExtensionRoute extends GatewayRoute {
  plugin: string;
}

export interface Extensions {
  routes(): ExtensionRoute[];
  /** The route for a method and path (`params` from its `:name` segments); `allowed` lists methods when only the path matched. */
  match(method: string, path: string): { route: ExtensionRoute; params: Record<string, string> } | { allowed: string[] } | undefined;
  wsAction(name: string): (GatewayWsAction & { plugin: string }) | undefined;
  wsActionNames(): string[];
  /** A validator for a schema (bodies strictly, query strings with coercion). */
  validator(schema: object, part: 'body' | 'text'): ValidateFunction;
  /** Changes when the set of extensions changes (cache key of the OpenAPI document). */
  signature(): string;
}

/** Where extension routes may be: under `/api/`, under `/v1/`, or `/mcp` and under it. All of them need the key. */
export function extensionUrl(url: string): boolean {
  return url.startsWith('/api/') || url.startsWith('/v1/') || url === '/mcp' || url.startsWith('/mcp/');
}

function segments(url: string): string[] {
  return url.split('/').filter(Boolean);
}

export function createExtensions(ctx: PluginContext, builtinPaths: ReadonlySet<string>): Extensions {
  const opts = { allErrors: false, strict: false, useDefaults: true, removeAdditional: false } as const;
  // Made at the first extension request: an idle gateway pays no memory for them.
  let body: Ajv.default | undefined;
  let text: Ajv.default | undefined;
  const compiled = new WeakMap<object, ValidateFunction>();
  const compiledText = new WeakMap<object, ValidateFunction>();

  const all = () => {
    try {
      return ctx.capabilities('gateway:routes:');
    } catch {
      return [];
    }
  };
  const routes = (): ExtensionRoute[] => {
    const out: ExtensionRoute[] = [];
    for (const { plugin, impl } of all()) {
      for (const r of impl.routes ?? []) {
        // Built-in routes win; an extension cannot shadow or replace them, nor serve outside its prefixes.
        if (!extensionUrl(r.url) || builtinPaths.has(`${r.method} ${r.url}`)) continue;
        if (!r.handler && !r.stream) continue;
        out.push({ ...r, plugin });
      }
    }
    return out;
  };

  return {
    routes,
    match(method, path) {
      const want = segments(path);
      const allowed: string[] = [];
      for (const route of routes()) {
        const have = segments(route.url);
        if (have.length !== want.length) continue;
        const params: Record<string, string> = {};
        let ok = true;
        for (let i = 0; i < have.length; i++) {
          const h = have[i]!;
          if (h.startsWith(':')) {
            try {
              params[h.slice(1)] = decodeURIComponent(want[i]!);
            } catch {
              ok = false;
              break;
            }
          } else if (h !== want[i]) {
            ok = false;
            break;
          }
        }
        if (!ok) continue;
        if (route.method === method) return { route, params };
        allowed.push(route.method);
      }
      return allowed.length ? { allowed } : undefined;
    },
    wsAction(name) {
      for (const { plugin, impl } of all()) {
        const a = impl.wsActions?.[name];
        if (a && Object.hasOwn(impl.wsActions!, name)) return { ...a, plugin };
      }
      return undefined;
    },
    wsActionNames() {
      return all().flatMap(({ impl }) => Object.keys(impl.wsActions ?? {}));
    },
    validator(schema, part) {
      const cache = part === 'body' ? compiled : compiledText;
      let v = cache.get(schema);
      if (!v) {
        const ajv =
          part === 'body'
            ? (body ??= new Ajv.default({ ...opts, coerceTypes: false }))
            : (text ??= new Ajv.default({ ...opts, coerceTypes: 'array' }));
        v = ajv.compile(schema);
        cache.set(schema, v);
      }
      return v;
    },
    signature() {
      return all()
        .map((c) => c.plugin)
        .sort()
        .join(',');
    },
  };
}
