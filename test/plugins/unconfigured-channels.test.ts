/**
 * Built-in chat channels without credentials (sdk `offerUnconfigured`): each is listed stopped, its sends and
 * skills fail with the one message naming the key to set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelCapability } from '../../sdk/index.js';
import { bootKernel, type TestKernel } from '../../testing/index.js';

let t: TestKernel | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('unconfigured chat channels', () => {
  it('offer a stopped channel and skills that say which key to set', async () => {
    t = await bootKernel({ builtins: ['chatA', 'chatB', 'chatC', 'chatD'] });
    const k = t.kernel;
    const cases = [
      {
        name: 'chatA',
        key: 'chatAToken',
        skills: {
          send_chatA: { chatId: '5', message: 'hi' },
          chatA_send_buttons: { chatId: '5', message: 'pick', buttons: [{ text: 'A', callback_data: 'a' }] },
          chatA_pin_message: { chatId: '5', messageId: 1 },
        },
      },
      {
        name: 'chatB',
        key: 'chatBEnabled',
        skills: { send_chatB: { jid: '4915123456789@s.whatsapp.net', message: 'hi' } },
        says: 'chatB is not enabled: set chatBEnabled to true',
      },
      { name: 'chatC', key: 'chatCToken', skills: { send_chatC: { channel_id: '123456789012345678', message: 'hi' } } },
      { name: 'chatD', key: 'chatDBotToken', skills: { send_chatD: { channel_id: 'C0123ABC', message: 'hi' } } },
    ] as Array<{ name: string; key: string; skills: Record<string, unknown>; says?: string }>;
    for (const c of cases) {
      const ch = k.registry.use<ChannelCapability>(`channel:${c.name}`)!;
      expect(ch.status()).toMatchObject({ enabled: false, connected: false, state: 'stopped' });
      await expect(ch.send('1', 'hi')).rejects.toThrow(c.key);
      for (const [s, args] of Object.entries(c.skills)) {
        const r = await k.execute(s, args, k.operator);
        expect(r.success).toBe(false);
        expect(r.result).toContain(c.says ?? `${c.name} is not configured: set ${c.key}`);
      }
    }
  });
});
