/**
 * The gateway: REST under /api and a WebSocket on the same port (SPEC "Gateway REST", "Gateway WebSocket").
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'gateway',
  version: '1.0.0',
  kind: 'service',
  description: 'Web gateway: REST API under /api, a WebSocket event stream on the same port, optional static dashboard.',
  // The bound address (host, port, url) once the gateway listens: tests and tools that start it on port 0 read it here.
  // gateway:events: other plugins put events on the WebSocket stream (sdk/gateway.ts); they add routes by providing
  // gateway:routes:<their id>, which the gateway looks up per request.
  provides: ['gateway:address', 'gateway:events'],
  permissions: { network: true, filesystem: ['$KEEL_HOME'], secrets: ['gatewayApiKey', 'queueRedisUrl'] },
  config: {
    gatewayPort: {
      schema: Type.Integer({ minimum: 0, maximum: 65535 }),
      default: 3100,
      env: ['KEEL_GATEWAY_PORT'],
      policy: 'APPROVAL',
      description: 'TCP port of the gateway (REST and WebSocket). `keel gateway -p` overrides it.',
    },
    gatewayHost: {
      schema: Type.String({ minLength: 1 }),
      default: '0.0.0.0',
      env: ['KEEL_GATEWAY_HOST'],
      policy: 'LOCKED',
      description:
        'Bind address. 127.0.0.1 allows local access only; 0.0.0.0 without gatewayApiKey exposes full control of the agent. LOCKED because it widens who can reach the agent.',
    },
    gatewayApiKey: {
      schema: Type.String({ minLength: 1 }),
      env: ['KEEL_GATEWAY_API_KEY'],
      policy: 'LOCKED',
      secret: true,
      description:
        'When set, every REST request needs the header X-Api-Key and the WebSocket the query parameter apiKey. `keel gateway -k` overrides it.',
    },
    gatewayStaticDir: {
      schema: Type.String({ minLength: 1 }),
      env: ['KEEL_GATEWAY_STATIC_DIR'],
      policy: 'APPROVAL',
      description:
        'Folder of static files served at / instead of the built-in dashboard; /api always takes precedence. `keel gateway -s` overrides it.',
    },
    gatewayAutoStart: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_GATEWAY_AUTO_START'],
      policy: 'APPROVAL',
      description: 'Start the gateway together with the agent (`keel run`), as `keel run --with-gateway` does.',
    },
    gatewayCorsOrigins: {
      schema: Type.Array(Type.String({ minLength: 1 })),
      default: ['*'],
      env: ['KEEL_GATEWAY_CORS_ORIGINS'],
      policy: 'LOCKED',
      description:
        'Origins allowed by CORS, and for the WebSocket upgrade when the list is not ["*"]. LOCKED because it widens who can drive the agent from a browser.',
    },
    gatewayBodyLimit: {
      schema: Type.Integer({ minimum: 1024 }),
      default: 1_048_576,
      env: ['KEEL_GATEWAY_BODY_LIMIT'],
      policy: 'SAFE',
      description: 'Largest request body in bytes (1 MiB by default); a larger body gets 413.',
    },
  },
  cli: [
    {
      name: 'gateway',
      description: 'Start the web gateway (REST API and WebSocket)',
      options: [
        { flags: '-p, --port <port>', description: 'listening port (default gatewayPort, 3100)' },
        { flags: '-h, --host <host>', description: 'bind address (default gatewayHost, 0.0.0.0); 127.0.0.1 for local access only' },
        { flags: '-k, --api-key <key>', description: 'require X-Api-Key on every API request (overrides gatewayApiKey)' },
        { flags: '-s, --static <dir>', description: 'serve the static files of this folder at / (instead of the dashboard)' },
        { flags: '--with-agent', description: 'also run the agent loop in this process' },
        { flags: '-b, --background', description: 'run detached; logs to $KEEL_HOME/gateway.log' },
      ],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
