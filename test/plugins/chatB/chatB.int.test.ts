/**
 * chatB end to end: the real baileys linked to the loopback WhatsApp (Noise, binary nodes, Signal), a real kernel,
 * the agent driven by the scripted fake provider.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { ADMIN, ADMIN_JID, BOT, bootChatB, type ChatBHarness, OWNER, OWNER_JID, USER, USER_JID, whenConnected } from './harness.js';

let h: ChatBHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const connected = () => whenConnected(h!);

describe('chatB inbound → action → reply', () => {
  it("answers the owner's direct message in the same chat, quoting it, as WhatsApp formatting; status says as whom", async () => {
    h = await bootChatB();
    await connected();
    expect(h.channel().status()).toMatchObject({
      enabled: true,
      connected: true,
      state: 'connected',
      linked: true,
      account: `${BOT}@s.whatsapp.net`,
    });
    const up = h.logs.recent({ level: 'info' }).filter((e) => e.message.startsWith('chatB: connected'));
    expect(up.map((e) => e.message)).toEqual([`chatB: connected as +${BOT} (linked device).`]);
    h.model.replies.push({ text: '**Hello** there, see `code` and ~~old~~' });
    const id = await h.wa.sendText(OWNER, 'hi keel', { pushName: 'Olga' });
    const reply = await h.wa.waitFor((m) => m.text?.includes('Hello') === true, 10_000);
    expect(reply.text).toBe('*Hello* there, see `code` and ~old~');
    expect(reply.to).toBe(OWNER_JID);
    expect(reply.quotedId).toBe(id);
    expect(reply.id).toMatch(/^3EB0[0-9A-F]{18}$/);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action).toMatchObject({ source: 'chatB', task: 'hi keel' });
    expect(action!.metadata.replyTo).toMatchObject({ chatId: OWNER_JID, messageId: id });
    // The owner is answered, but admin rights come from adminUsers.chatB only.
    expect(action!.metadata.actor).toMatchObject({ kind: 'user', channel: 'chatB', userId: OWNER_JID, untrusted: true });
    // Delivered once and acknowledged; marked read; "typing…" shown while it ran.
    expect(h.wa.deliveries(id)).toBe(1);
    expect(h.wa.acked(id)).toBe(true);
    expect(h.wa.reads()).toContain(id);
    expect(h.wa.chatstates().some((c) => c.state === 'composing' && c.to === OWNER_JID)).toBe(true);
    expect(h.outcome(id)).toBe('queued');
  });

  it('with auto-reply off, a stranger is recorded but neither answered nor marked read; an admin is answered', async () => {
    h = await bootChatB();
    await connected();
    const stranger = await h.wa.sendText(USER, 'hello, who is this?');
    await waitFor(() => h!.outcome(stranger), 'the stranger handled');
    expect(h.outcome(stranger)).toBe('ignored:auto-reply-off');
    expect(h.wa.acked(stranger)).toBe(true);
    expect(h.wa.reads()).not.toContain(stranger);
    h.model.replies.push({ text: 'yes, admin' });
    const admin = await h.wa.sendText(ADMIN, 'status please');
    const reply = await h.wa.waitFor((m) => m.text === 'yes, admin', 10_000);
    expect(reply.to).toBe(ADMIN_JID);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action!.metadata.actor).toMatchObject({ userId: ADMIN_JID });
    expect(action!.metadata.actor?.untrusted).toBeUndefined();
    expect(h.outcome(admin)).toBe('queued');
    expect(h.actions()).toHaveLength(1);
  });

  it('with auto-reply on, anyone in a direct chat is answered; in a group only a mention of the account is', async () => {
    h = await bootChatB({ config: { chatBAutoReplyEnabled: true } });
    await connected();
    h.model.replies.push({ text: 'hi stranger' }, { text: 'hi group' });
    await h.wa.sendText(USER, 'hello');
    await h.wa.waitFor((m) => m.text === 'hi stranger' && m.to === USER_JID, 10_000);
    const GROUP = '120363000000000001@g.us';
    h.wa.setGroup(GROUP, { subject: 'friends', participants: [USER, OWNER] });
    const chatter = await h.wa.sendText(USER, 'what a day', { group: GROUP });
    const asked = await h.wa.sendText(USER, '@keel what time is it', { group: GROUP, mentions: [`${BOT}@s.whatsapp.net`] });
    const reply = await h.wa.waitFor((m) => m.text === 'hi group', 10_000);
    expect(reply.to).toBe(GROUP);
    expect(reply.quotedId).toBe(asked);
    await waitFor(() => h!.outcome(chatter), 'the chatter handled');
    expect(h.outcome(chatter)).toBe('ignored:auto-reply-off');
    expect(h.actions().map((a) => a.task)).toEqual(expect.arrayContaining(['hello', '@keel what time is it']));
    expect(h.actions()).toHaveLength(2);
  });
});

describe('chatB contact profiles', () => {
  it('with chatBContextProfilingEnabled, each contact who writes gets a profile (name, count, topics); off by default', async () => {
    h = await bootChatB({
      runAgent: false,
      plugins: ['memory'],
      config: { chatBAutoReplyEnabled: true, chatBContextProfilingEnabled: true },
    });
    await connected();
    const id = await h.wa.sendText(USER, 'planning the trip to Lisbon', { pushName: 'Ulla' });
    await waitFor(() => h!.outcome(id), 'handled');
    const file = join(h.home, 'contacts', `${USER_JID}.json`);
    const profile = await waitFor(() => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined), 'the profile');
    expect(profile).toMatchObject({ displayName: 'Ulla', messageCount: 1 });
    expect(JSON.stringify(profile.lastTopics)).toContain('planning the trip to Lisbon');
    await h.close();
    h = await bootChatB({ runAgent: false, plugins: ['memory'], config: { chatBAutoReplyEnabled: true } });
    await connected();
    const id2 = await h.wa.sendText(USER, 'hello again', { pushName: 'Ulla' });
    await waitFor(() => h!.outcome(id2), 'handled');
    expect(existsSync(join(h.home, 'contacts', `${USER_JID}.json`))).toBe(false);
  });
});
