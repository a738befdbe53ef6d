/**
 * One REST route as data: fastify registers it and the OpenAPI document is built from the same object.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from '../../../../sdk/index.js';
import type { GatewayDeps } from '../deps.js';

export interface RouteSchema {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response: Record<number, TSchema>;
}

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  description?: string;
  schema: RouteSchema;
  handler: (req: FastifyRequest, reply: FastifyReply) => unknown;
}

/** What route handlers need besides the gateway deps. */
export interface RouteEnv extends GatewayDeps {
  /** Whether the request came over loopback (injectable for tests of the policy). */
  isLoopback(req: FastifyRequest): boolean;
}
