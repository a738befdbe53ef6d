/**
 * Starts the real kernel with only the named built-in provider plugins, for the provider tests.
 */
import type { Kernel } from '../../../kernel/kernel.js';
import type { LogSink } from '../../../kernel/log.js';
import type { ProviderCapability } from '../../../sdk/index.js';
import { bootKernel } from '../../../testing/index.js';

export interface ProviderKernel {
  kernel: Kernel;
  logs: LogSink;
  provider(id: string): ProviderCapability;
  stop(): Promise<void>;
}

export async function startProviders(
  ids: string[],
  overrides: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<ProviderKernel> {
  const t = await bootKernel({ builtins: ids, userPlugins: false, env, config: overrides });
  return {
    kernel: t.kernel,
    logs: t.kernel.logs,
    provider(id) {
      const p = t.kernel.registry.use<ProviderCapability>(`provider:${id}`);
      if (!p) throw new Error(`provider:${id} is not provided (${JSON.stringify(t.kernel.host.status(id))})`);
      return p;
    },
    stop: t.close,
  };
}
