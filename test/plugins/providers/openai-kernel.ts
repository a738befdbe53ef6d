/**
 * Starts the real kernel with only the named built-in provider plugins, for the provider tests.
 */
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { ProviderCapability } from '../../../sdk/index.js';
import { rm, tmp } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export interface ProviderKernel {
  kernel: Kernel;
  logs: LogSink;
  provider(id: string): ProviderCapability;
  stop(): Promise<void>;
}

export async function startProviders(ids: string[], overrides: Record<string, unknown>, env: Record<string, string> = {}): Promise<ProviderKernel> {
  const home = tmp('keel-providers-');
  const empty = tmp('keel-providers-empty-');
  const all = await discoverBuiltins(join(ROOT, 'plugins'));
  const extraPlugins = all.filter((c) => ids.some((id) => c.dir.endsWith(`/plugins/${id}`)));
  if (extraPlugins.length !== ids.length) throw new Error(`missing plugin folders among ${ids.join(', ')}`);
  const logs = new LogSink({ quiet: true });
  const kernel = await startKernel({
    home,
    builtinDir: empty,
    builtinOnly: true,
    extraPlugins,
    env,
    watchSkills: false,
    logs,
    overrides,
  });
  return {
    kernel,
    logs,
    provider(id) {
      const p = kernel.registry.use<ProviderCapability>(`provider:${id}`);
      if (!p) throw new Error(`provider:${id} is not provided (${JSON.stringify(kernel.host.status(id))})`);
      return p;
    },
    async stop() {
      await kernel.stop();
      rm(home);
      rm(empty);
    },
  };
}
