/**
 * Configuration and security settings: GET|PUT /api/config, GET|PUT /api/security.
 *
 * Policy: with no API key, a client that is not on loopback may not change LOCKED keys or the security
 * settings (403); everything else an unauthenticated gateway allows, as SPEC says.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../errors.js';
import type { RouteDef, RouteEnv } from './route.js';
import * as S from './schemas.js';

const SECURITY_KEYS = ['safeMode', 'adminUsers', 'pluginAllowList', 'pluginDenyList'] as const;
type SecurityChange = {
  safeMode?: boolean;
  adminUsers?: Record<string, string[]> | string[];
  pluginAllowList?: string[];
  pluginDenyList?: string[];
};

/** `{chatA: ['1', '2']}` -> `['chatA:1', 'chatA:2']`. */
export function flattenAdmins(v: unknown): string[] {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return [];
  const out: string[] = [];
  for (const [channel, ids] of Object.entries(v as Record<string, unknown>)) {
    if (Array.isArray(ids)) for (const id of ids) out.push(`${channel}:${String(id)}`);
  }
  return out;
}

/** `['chatA:1']` -> `{chatA: ['1']}` (the split is at the first colon). */
export function nestAdmins(list: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const s of list) {
    const i = s.indexOf(':');
    (out[s.slice(0, i)] ??= []).push(s.slice(i + 1));
  }
  return out;
}

export function settingsRoutes(env: RouteEnv): RouteDef[] {
  const { ctx, settings, info } = env;
  const policyOf = (key: string) => info.configKeys().find((k) => k.key === key);
  /** Refuses a change from beyond loopback when no key protects the gateway; returns true when refused. */
  const refusedRemote = (req: FastifyRequest, reply: FastifyReply, what: string): boolean => {
    if (settings.apiKey || env.isLoopback(req)) return false;
    sendError(
      reply,
      403,
      `${what} can only be changed from this machine (loopback) while the gateway has no API key. ` +
        'Set gatewayApiKey (or start with `keel gateway -k <key>`) to change it remotely, or use `keel config set` on the host.',
    );
    return true;
  };

  return [
    {
      method: 'GET',
      url: '/api/config',
      summary: 'Every configuration key with its effective value, secrets masked',
      schema: { response: { 200: S.ConfigMap, ...S.errors(401) } },
      handler: () => ctx.config.all({ masked: true }),
    },
    {
      method: 'PUT',
      url: '/api/config/:key',
      summary: 'Change one configuration key (as the operator)',
      description:
        'The value is checked against the key schema (400 when it fails, nothing changes). 404 unknown key. 403 for a LOCKED key from a ' +
        'non-loopback client while the gateway has no API key. The response value is masked when the key is secret.',
      schema: { params: S.ConfigKey, body: S.ConfigBody, response: { 200: S.ConfigChanged, ...S.errors(400, 401, 403, 404, 413, 415) } },
      handler: async (req, reply) => {
        const { key } = req.params as { key: string };
        const { value } = req.body as { value: unknown };
        const spec = policyOf(key);
        if (!spec) return sendError(reply, 404, `Unknown configuration key "${key}". GET /api/config lists the keys.`);
        if (spec.policy === 'LOCKED' && refusedRemote(req, reply, `${key} is LOCKED: it`)) return reply;
        if (value === undefined) return sendError(reply, 400, "Invalid request: body must have required property 'value'.");
        const outcome = await ctx.config.set(key, value, { kind: 'operator', reason: 'PUT /api/config via the gateway' });
        const shown = ctx.config.all({ masked: true })[key];
        const message = outcome.status === 'applied' ? `${key} updated.` : outcome.message;
        return { success: outcome.status === 'applied', key, value: shown, message };
      },
    },
    {
      method: 'GET',
      url: '/api/security',
      summary: 'The security settings object',
      schema: { response: { 200: S.SecuritySettings, ...S.errors(401) } },
      handler: () => ({
        safeMode: Boolean(ctx.config.get('safeMode')),
        apiKeySet: Boolean(settings.apiKey),
        adminUsers: flattenAdmins(ctx.config.get('adminUsers')),
        pluginAllowList: ctx.config.get('pluginAllowList').map(String),
        pluginDenyList: ctx.config.get('pluginDenyList').map(String),
      }),
    },
    {
      method: 'PUT',
      url: '/api/security',
      summary: 'Change security settings',
      description:
        'Any of safeMode, adminUsers (object channel -> ids, or "channel:id" strings), pluginAllowList, pluginDenyList. An unknown field, a ' +
        "value of the wrong type, an unknown channel or a user id not of its channel's declared form is 400 and nothing changes. 403 from a non-loopback client while the gateway has no API key. " +
        'Plugin list changes take effect at the next start.',
      schema: { body: S.SecurityBody, response: { 200: S.Done, ...S.errors(400, 401, 403, 413, 415) } },
      handler: async (req, reply) => {
        if (refusedRemote(req, reply, 'Security settings')) return reply;
        const body = req.body as SecurityChange;
        const changes: Array<[string, unknown]> = [];
        // adminUsers first: it is the one value the kernel may still refuse (an unknown channel), so a refusal changes nothing.
        for (const k of ['adminUsers', ...SECURITY_KEYS.filter((x) => x !== 'adminUsers')] as const) {
          const v = body[k];
          if (v === undefined) continue;
          changes.push([k, k === 'adminUsers' && Array.isArray(v) ? nestAdmins(v as string[]) : v]);
        }
        for (const [k, v] of changes) await ctx.config.set(k, v, { kind: 'operator', reason: 'PUT /api/security via the gateway' });
        return { success: true, message: `Updated ${changes.map(([k]) => k).join(', ')}.` };
      },
    },
  ];
}
