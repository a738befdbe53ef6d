/**
 * A real kernel with the agent, the chatA plugin and the scripted fake provider, talking to the loopback Bot API.
 */
import { expect } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram-server.js';
import { type PluginSpec, waitFor } from '../../helpers.js';
import type { ChildProcess } from 'node:child_process';
import { bootChannelKernel, type ChannelKernel, exited } from '../channel-harness.js';

export interface ChatAHarness extends ChannelKernel {
  tg: FakeTelegram;
}

export async function bootChatA(
  o: { config?: Record<string, unknown>; token?: string; runAgent?: boolean; plugins?: string[]; extra?: PluginSpec[] } = {},
): Promise<ChatAHarness> {
  const tg = await startFakeTelegram();
  const h = await bootChannelKernel({
    channel: 'chatA',
    config: {
      chatAToken: o.token ?? tg.token,
      chatAApiRoot: tg.apiRoot,
      chatAPollTimeout: 1,
      chatAAutoReplyEnabled: true,
      adminUsers: { chatA: ['42'] },
      ...o.config,
    },
    runAgent: o.runAgent,
    plugins: o.plugins,
    extra: o.extra,
    closeFake: () => tg.close(),
  });
  return Object.assign(h, { tg });
}

/**
 * Waits for the last of `paragraphs` in chat `chatId`, lets a moment pass for anything sent twice, then checks that
 * every paragraph arrived exactly once, in order, and no message twice; returns everything sent there, joined.
 */
export async function expectReplyOnce(tg: FakeTelegram, chatId: number, paragraphs: string[]): Promise<string> {
  const sent = () => tg.sent.filter((m) => m.chat.id === chatId).map((m) => m.text!);
  const last = paragraphs.at(-1)!.slice(0, 9);
  await waitFor(() => sent().join('\n\n').includes(last), 'the whole reply', 60_000);
  await new Promise((r) => setTimeout(r, 2500));
  const texts = sent();
  expect(new Set(texts).size).toBe(texts.length);
  const joined = texts.join('\n\n');
  for (const p of paragraphs) expect(joined.split(p.slice(0, 9)).length - 1, p.slice(0, 8)).toBe(1);
  const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 9)));
  expect([...order].sort((a, b) => a - b)).toEqual(order);
  return joined;
}

/**
 * `kill -9` of `proc` while its third `sendMessage` is in flight (that request is never accepted), then waits for it
 * to exit: the first two chunks of the reply to `chatId` reached the chat, the rest did not.
 */
export async function killAtThirdChunk(tg: FakeTelegram, proc: ChildProcess, chatId: number): Promise<void> {
  tg.onCall = (c) => {
    if (c.method === 'sendMessage' && tg.callsOf('sendMessage').length === 3) {
      proc.kill('SIGKILL');
      return 'hold';
    }
  };
  await exited(proc);
  tg.onCall = undefined;
  expect(tg.sent.filter((m) => m.chat.id === chatId)).toHaveLength(2);
}
