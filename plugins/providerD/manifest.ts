/**
 * providerD: AWS Bedrock through the Converse API. Data only; @aws-sdk/client-bedrock-runtime is imported on the
 * first call. Model ids are named `<family>.<model>-<version>` (e.g. `anthropic.claude-3-haiku-20240307-v1:0`).
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { DEFAULT_TIMEOUT_MS } from '../../sdk/vendors/common.js';

const manifest = {
  id: 'providerD',
  version: '1.0.0',
  kind: 'provider',
  description: 'AWS Bedrock (Converse API: chat with native tool use and vision) through @aws-sdk/client-bedrock-runtime.',
  provides: ['provider:providerD'],
  permissions: { network: true, secrets: ['providerDAccessKeyId', 'providerDSecretAccessKey', 'providerDSessionToken'] },
  config: {
    providerDRegion: {
      schema: Type.String({ minLength: 1, pattern: '^[a-z]{2}(-[a-z]+)+-\\d+$', title: 'an AWS region like us-east-1 or eu-central-1' }),
      env: ['PROVIDERD_REGION', 'AWS_REGION'],
      policy: 'APPROVAL',
      description:
        'AWS region of Bedrock (e.g. us-east-1); PROVIDERD_REGION wins over AWS_REGION. APPROVAL (the SPEC gives no class): ' +
        'the credentials stay with AWS, but prompts would be processed in another region, which a person should agree to.',
    },
    providerDAccessKeyId: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERD_ACCESS_KEY_ID', 'AWS_ACCESS_KEY_ID'],
      policy: 'LOCKED',
      secret: true,
      description:
        'AWS access key id used to SigV4-sign Bedrock requests; PROVIDERD_ACCESS_KEY_ID wins over AWS_ACCESS_KEY_ID. LOCKED (SPEC).',
    },
    providerDSecretAccessKey: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERD_SECRET_ACCESS_KEY', 'AWS_SECRET_ACCESS_KEY'],
      policy: 'LOCKED',
      secret: true,
      description:
        'AWS secret access key; it only signs requests and is never sent, logged or shown in errors. ' +
        'PROVIDERD_SECRET_ACCESS_KEY wins over AWS_SECRET_ACCESS_KEY. LOCKED (SPEC).',
    },
    providerDSessionToken: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERD_SESSION_TOKEN', 'AWS_SESSION_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description:
        'Optional session token for temporary credentials (STS); PROVIDERD_SESSION_TOKEN wins over AWS_SESSION_TOKEN. ' +
        'LOCKED like the other credentials.',
    },
    providerDBaseUrl: {
      schema: Type.String({ minLength: 1, pattern: '^https?://' }),
      env: ['PROVIDERD_BASE_URL'],
      policy: 'LOCKED',
      description:
        'Endpoint override for Bedrock Runtime (default: the regional https://bedrock-runtime.<region>.amazonaws.com); for ' +
        'VPC endpoints, proxies and tests. LOCKED because requests signed with the credentials would go to another host.',
    },
    providerDTimeoutSeconds: {
      schema: Type.Number({ exclusiveMinimum: 0, maximum: 3600 }),
      default: DEFAULT_TIMEOUT_MS / 1000,
      env: ['PROVIDERD_TIMEOUT_SECONDS'],
      policy: 'SAFE',
      description: `Seconds one Bedrock request may take before it is abandoned (default ${DEFAULT_TIMEOUT_MS / 1000}); a request's own timeout wins.`,
    },
  },
} as const satisfies PluginManifest;

export default manifest;
