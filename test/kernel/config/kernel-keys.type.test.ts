/**
 * The SDK's typed view of the kernel's keys (sdk/config-keys.ts `KnownConfig`) is the one the kernel declares
 * (kernel/config/kernel-keys.ts): a key added, removed or retyped on one side only fails `npm run typecheck`.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { KERNEL_KEYS } from '../../../kernel/config/kernel-keys.js';
import type { ConfigKey, ConfigValue, KnownConfig, PluginContext } from '../../../sdk/index.js';

type KernelManifest = { id: 'kernel'; version: '1'; kind: 'service'; description: ''; config: typeof KERNEL_KEYS };
type Declared = { [K in ConfigKey<KernelManifest>]: ConfigValue<KernelManifest, K> };

describe('KnownConfig', () => {
  it('is exactly the kernel keys with their schema types', () => {
    expectTypeOf<KnownConfig>().toEqualTypeOf<Declared>();
  });

  it('types a kernel key read by any plugin', () => {
    // Compiled, never run: only the types are under test.
    void ((ctx: PluginContext) => {
      expectTypeOf(ctx.config.get('safeMode')).toEqualTypeOf<boolean>();
      expectTypeOf(ctx.config.get('adminUsers')).toEqualTypeOf<Record<string, string[]> | undefined>();
      expectTypeOf(ctx.config.get('sessionScope')).toEqualTypeOf<'main' | 'per-peer' | 'per-channel-peer'>();
      expectTypeOf(ctx.config.get<number>('someOtherPluginsKey')).toEqualTypeOf<number>();
    });
  });
});
