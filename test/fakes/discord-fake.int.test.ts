/**
 * The loopback Discord itself, where a bench or test relies on how it behaves: a session gets MESSAGE_CREATE only
 * for the intents its IDENTIFY asked for, as Discord does (bench/discord.ts logs a Guilds-only client in beside the
 * measured sends so that no echo lands inside their timings).
 */
import { Client, GatewayIntentBits, Partials } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from './discord-server.js';

let fake: FakeDiscord | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.destroy();
  await fake?.close();
});

describe('fake Discord gateway', () => {
  it('sends a session no MESSAGE_CREATE of a kind its intents do not ask for', async () => {
    fake = await startFakeDiscord();
    // Direct messages only: a guild message must not reach it.
    client = new Client({
      rest: { api: fake.apiUrl },
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.DirectMessages],
      partials: [Partials.Channel],
    });
    const seen: string[] = [];
    client.on('raw', (p: { t?: string; d?: { content?: string } }) => {
      if (p.t === 'MESSAGE_CREATE') seen.push(p.d?.content ?? '');
    });
    const ready = new Promise((r) => client!.once('clientReady', r));
    await client.login(fake.token);
    await ready;
    fake.pushMessage('in the guild');
    fake.pushMessage('in a DM', { dm: true });
    // One socket keeps its order: once the DM is here, the guild message would have come before it.
    while (!seen.length) await new Promise((r) => setTimeout(r, 10));
    expect(seen).toEqual(['in a DM']);
  });
});
