/**
 * defineChannel's stop order (sdk/channel-kit/define.ts): an adapter's `stopping()` runs while its connection is
 * still up (a catch-up notes then when the channel was last connected), its `stop()` once the connection stopped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { renderChunks } from '../../sdk/channel-kit/index.js';
import type { PluginManifest } from '../../sdk/index.js';
import { bootKernel, type TestKernel } from '../../testing/index.js';

const manifest = {
  id: 'chatZ',
  version: '1.0.0',
  kind: 'channel',
  description: 'A test channel on defineChannel.',
  provides: ['channel:chatZ'],
  channel: { name: 'chatZ', userIdPattern: '^u[0-9]+$', userIdExample: 'u1' },
} as const satisfies PluginManifest;

let t: TestKernel | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('defineChannel stop order', () => {
  it('stopping() sees the connection still connected, stop() sees it stopped', async () => {
    const seen: string[] = [];
    let up: () => void = () => undefined;
    const connectedOnce = new Promise<void>((r) => (up = r));
    const plugin = defineChannel<typeof manifest, { text: string }, { text: string }>({
      manifest,
      adapter: (kit) => ({
        policy: {
          send: { capacity: 100, perSecond: 100 },
          edit: { capacity: 100, perSecond: 100 },
          global: { capacity: 100, perSecond: 100 },
        },
        classify: () => ({ retry: false }),
        sendChunk: async () => 'm1',
        badAddress: () => undefined,
        chunks: (m) => renderChunks(m.text ?? '', 'plain', { limit: 100 }).map((text) => ({ text })),
        target: () => ({ chatId: '1', options: {} }),
        transport: () => ({ typing: async () => undefined, status: async () => 's1' }),
        connection: {
          stallMs: 60_000,
          fatal: () => undefined,
          connect: async (signal, { connected }) => {
            connected('as test');
            up();
            await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
          },
        },
        receive: async () => 'skipped',
        async stopping() {
          seen.push(`stopping:${kit.connection?.state}`);
        },
        async stop() {
          seen.push(`stop:${kit.connection?.state}`);
        },
      }),
    });
    t = await bootKernel({ plugins: [plugin as never] });
    await connectedOnce;
    await t.close();
    t = undefined;
    expect(seen).toEqual(['stopping:connected', 'stop:stopped']);
  });
});
