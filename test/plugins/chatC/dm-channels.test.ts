/**
 * A reply to a user id opens the direct-message channel once and remembers it; the memory of those channels is
 * bounded (a bot that writes first to many people over months), the oldest forgotten and simply asked for again.
 */
import { DiscordAPIError, type REST } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { MAX_DM_CHANNELS, sendChunkTo } from '../../../plugins/chatC/src/discord.js';

describe('chatC direct-message channels', () => {
  it('opens a DM channel once per user, and keeps at most MAX_DM_CHANNELS of them', async () => {
    const opened: string[] = [];
    const rest = {
      post: async (route: string, o: { body: { recipient_id?: string } }) => {
        if (route === '/users/@me/channels') {
          opened.push(o.body.recipient_id!);
          return { id: `9${o.body.recipient_id}` };
        }
        const channel = /^\/channels\/(\d+)\/messages$/.exec(route)![1]!;
        // A user id is not a channel: Discord answers "Unknown Channel".
        if (!channel.startsWith('9'))
          throw new DiscordAPIError({ code: 10003, message: 'Unknown Channel' }, 10003, 404, 'POST', route, { body: o.body });
        return { id: `m${channel}` };
      },
    } as unknown as REST;
    const dms = new Map<string, string>();
    const chunk = { kind: 'text' as const, content: 'hi', nonce: 'n' };
    const user = (i: number) => String(100000000000000000n + BigInt(i));
    await expect(sendChunkTo(rest, user(0), chunk, dms)).resolves.toBe(`m9${user(0)}`);
    await sendChunkTo(rest, user(0), chunk, dms);
    expect(opened).toEqual([user(0)]);
    for (let i = 1; i <= MAX_DM_CHANNELS + 10; i++) await sendChunkTo(rest, user(i), chunk, dms);
    expect(dms.size).toBe(MAX_DM_CHANNELS);
    // The first ones were forgotten: a new reply to user 0 opens its channel again and still arrives.
    await expect(sendChunkTo(rest, user(0), chunk, dms)).resolves.toBe(`m9${user(0)}`);
    expect(opened.filter((u) => u === user(0))).toHaveLength(2);
  });
});
