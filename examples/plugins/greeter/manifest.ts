/**
 * The greeter's manifest: plain data, checked before any of the plugin's code runs. Keel reads the config
 * key's default, environment name and policy class from here, so `keel config set greeterGreeting Hi` works
 * without loading the plugin.
 */
import { Type, type PluginManifest } from 'keel/sdk';

const manifest = {
  id: 'greeter',
  version: '1.0.0',
  kind: 'skill',
  description: 'Greets people by name with a configurable greeting.',
  config: {
    greeterGreeting: {
      schema: Type.String({ minLength: 1 }),
      default: 'Hello',
      env: ['GREETER_GREETING'],
      // SAFE: the agent may change it on its own; nothing depends on it.
      policy: 'SAFE',
      description: 'The word the greeter puts before the name.',
    },
  },
  skills: [
    {
      name: 'greet',
      description: 'Greets someone by name.',
      category: 'demo',
      isParallelSafe: true,
      parameters: Type.Object({ name: Type.String({ minLength: 1, description: 'Who to greet' }) }),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
