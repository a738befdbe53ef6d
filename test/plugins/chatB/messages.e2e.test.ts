/**
 * chatB: what happens to messages between WhatsApp and the kit: redelivery, edits and "delete for everyone",
 * the self chat, LID-addressed senders, commands, the skill and reactions, long replies.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import {
  ADMIN,
  ADMIN_JID,
  BOT,
  BOT_JID,
  bootChatB,
  type ChatBHarness,
  OWNER,
  OWNER_JID,
  runSkill,
  USER,
  whenConnected,
} from './harness.js';

let h: ChatBHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const run = (name: string, args: unknown) => runSkill(h!, name, args);
const connected = () => whenConnected(h!);

describe('chatB messages', () => {
  it('a message whose delivery was cut is delivered again and becomes one action', async () => {
    h = await bootChatB();
    await connected();
    h.model.replies.push({ text: 'once' });
    h.wa.loseNextDelivery();
    const id = await h.wa.sendText(OWNER, 'are you there?');
    await h.wa.waitFor((m) => m.text === 'once', 15_000);
    expect(h.wa.deliveries(id)).toBe(2);
    expect(h.wa.acked(id)).toBe(true);
    expect(h.actions()).toHaveLength(1);
    expect(h.recorded().filter((k) => k === id)).toHaveLength(1);
    expect(h.channel().status().reconnects).toBeGreaterThanOrEqual(1);
  });

  it('"message yourself" from the phone is answered in that chat (also in its LID form); what the account writes elsewhere is not', async () => {
    h = await bootChatB();
    await connected();
    h.model.replies.push({ text: 'noted' }, { text: 'noted again' });
    // The account's phone writing to a friend: the account's own message, in another chat.
    const elsewhere = await h.wa.sendFromPhone('see you at 8', { peer: USER });
    const note = await h.wa.sendFromPhone('remind me to call mum');
    const reply = await h.wa.waitFor((m) => m.text === 'noted', 10_000);
    expect(reply.to).toBe(BOT_JID);
    expect(reply.quotedId).toBe(note);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action).toMatchObject({ task: 'remind me to call mum' });
    expect(action!.metadata.replyTo).toMatchObject({ chatId: BOT_JID, messageId: note });
    await h.wa.sendFromPhone('and buy bread', { addressing: 'lid' });
    const again = await h.wa.waitFor((m) => m.text === 'noted again', 10_000);
    // Answered in the chat as WhatsApp named it: the account's own LID this time.
    expect([BOT_JID, h.wa.lidOf(BOT)]).toContain(again.to);
    await waitFor(() => h!.wa.acked(elsewhere), 'acked');
    expect(h.recorded()).not.toContain(elsewhere);
    expect(
      h
        .actions()
        .map((a) => a.task)
        .sort(),
    ).toEqual(['and buy bread', 'remind me to call mum']);
    // Keel's own answers in the self chat do not come back as notes.
    expect(h.wa.sent().filter((m) => m.to === BOT_JID || m.to === h!.wa.lidOf(BOT))).toHaveLength(2);
  });

  it('a sender addressed by LID is known by their phone number: an admin stays an admin', async () => {
    h = await bootChatB();
    await connected();
    h.model.replies.push({ text: 'hello admin' });
    await h.wa.sendText(ADMIN, 'hi', { addressing: 'lid' });
    const reply = await h.wa.waitFor((m) => m.text === 'hello admin', 10_000);
    // The answer goes to the chat as WhatsApp named it (the LID), which reaches the same person.
    expect([ADMIN_JID, h.wa.lidOf(ADMIN)]).toContain(reply.to);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action!.metadata.actor).toMatchObject({ userId: ADMIN_JID });
    expect(action!.metadata.actor?.untrusted).toBeUndefined();
  });

  it('/status is answered by the kit without an action', async () => {
    h = await bootChatB();
    await connected();
    const id = await h.wa.sendText(OWNER, '/status');
    const reply = await h.wa.waitFor((m) => m.to === OWNER_JID && /WhatsApp: connected as \+/.test(m.text ?? ''), 10_000);
    expect(reply.text).toContain(`+${BOT}`);
    await waitFor(() => h!.outcome(id), 'the command handled');
    expect(h.outcome(id)).toBe('command:status');
    expect(h.actions()).toHaveLength(0);
  });

  it('an edit of a waiting message amends its action; "delete for everyone" withdraws one', async () => {
    h = await bootChatB({ runAgent: false });
    await connected();
    const first = await h.wa.sendText(OWNER, 'book a table for 2');
    const a = await waitFor(() => h!.actions().find((x) => x.metadata.replyTo?.messageId === first), 'queued');
    await h.wa.sendEdit(OWNER, first, 'book a table for 4');
    await waitFor(() => h!.kernel.queue.get(a.id)?.task === 'book a table for 4', 'amended', 10_000);
    expect(h.actions()).toHaveLength(1);
    const second = await h.wa.sendText(OWNER, 'and order flowers');
    const b = await waitFor(() => h!.actions().find((x) => x.metadata.replyTo?.messageId === second), 'queued');
    await h.wa.sendMessage(OWNER, { protocolMessage: { type: 0, key: { remoteJid: BOT_JID, fromMe: false, id: second } } });
    await waitFor(() => h!.kernel.queue.get(b.id)?.status === 'failed' || !h!.kernel.queue.get(b.id), 'withdrawn', 10_000);
    expect(h.kernel.queue.get(a.id)?.status).toBe('pending');
  });

  it('send_chatB sends to a JID once per call and refuses anything else with the form it wants', async () => {
    h = await bootChatB();
    await connected();
    const ok = await run('send_chatB', { jid: ADMIN_JID, message: 'Report: **done**' });
    expect(ok.success).toBe(true);
    const result = JSON.parse(ok.result) as { jid: string; messageId: string };
    expect(result.jid).toBe(ADMIN_JID);
    const sent = await h.wa.waitFor((m) => m.text === 'Report: *done*');
    expect(sent.id).toBe(result.messageId);
    for (const jid of ['+4917600000003', '4917600000003', 'someone@example.com', '123@g.us.evil']) {
      const bad = await run('send_chatB', { jid, message: 'x' });
      expect(bad.success).toBe(false);
      expect(bad.result).toMatch(/is not a WhatsApp chat: use <number>@s\.whatsapp\.net/);
    }
    expect(h.wa.sent().filter((m) => m.text === 'x')).toHaveLength(0);
  });

  it('a long reply goes out in parts of at most 4,096 characters, in order, each with its own id, the first quoting the message', async () => {
    h = await bootChatB();
    await connected();
    const paragraphs = Array.from({ length: 40 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(10)}`);
    h.model.replies.push({ text: paragraphs.join('\n\n') });
    const id = await h.wa.sendText(ADMIN, 'write a lot');
    await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed', 20_000);
    const parts = h.wa.sent().filter((m) => m.to === ADMIN_JID);
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect(p.text!.length).toBeLessThanOrEqual(4096);
    const joined = parts.map((p) => p.text).join('\n\n');
    const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 13)));
    expect(order.every((v, i) => v >= 0 && (i === 0 || v > order[i - 1]!))).toBe(true);
    expect(new Set(parts.map((p) => p.id)).size).toBe(parts.length);
    expect(parts[0]!.quotedId).toBe(id);
    expect(parts.slice(1).every((p) => !p.quotedId)).toBe(true);
  });

  it('react puts a native reaction on the message; with chatBAutoReactEnabled every queued message gets 👀', async () => {
    h = await bootChatB({ config: { chatBAutoReactEnabled: true }, runAgent: false, plugins: ['messaging'] });
    await connected();
    const id = await h.wa.sendText(USER, 'just chatting');
    const asked = await h.wa.sendText(ADMIN, 'please look at this');
    const eyes = await h.wa.waitFor((m) => m.reaction?.text === '👀', 10_000);
    expect(eyes.reaction!.key).toMatchObject({ id: asked });
    await waitFor(() => h!.outcome(id), 'the stranger handled');
    expect(h.wa.sent().filter((m) => m.reaction && m.reaction.key?.id === id)).toHaveLength(0);
    const r = await run('react', { chat_id: ADMIN_JID, message_id: asked, emoji: '👍', channel: 'chatB' });
    expect(r.success).toBe(true);
    await h.wa.waitFor((m) => m.reaction?.text === '👍' && m.reaction.key?.id === asked, 10_000);
  });
});

describe('chatB records before WhatsApp hears "delivered"', () => {
  it('a message that cannot be recorded is not acknowledged: WhatsApp delivers it again, it decrypts again, and it is answered once', async () => {
    h = await bootChatB();
    await connected();
    // Another process holds the channel's store for longer than its busy timeout: the record fails.
    const locker = spawn(
      process.execPath,
      [
        '-e',
        `const { DatabaseSync } = require('node:sqlite');
         const db = new DatabaseSync(process.argv[1]);
         db.exec('BEGIN IMMEDIATE'); console.log('locked');
         setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, 7000);`,
        join(h.home, 'channels', 'chatB', 'kit.db'),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((r) => locker.stdout!.once('data', () => r()));
    h.model.replies.push({ text: 'got it' });
    // The owner's first message: a Signal prekey message, which can be decrypted only with the state before it.
    const id = await h.wa.sendText(OWNER, 'the important one');
    await h.wa.waitFor((m) => m.text === 'got it', 30_000);
    await new Promise<void>((r) => (locker.exitCode !== null ? r() : locker.once('exit', () => r())));
    expect(h.wa.deliveries(id)).toBeGreaterThanOrEqual(2);
    expect(h.wa.acked(id)).toBe(true);
    expect(h.actions()).toHaveLength(1);
    expect(
      h.logs
        .recent({ level: 'warn' })
        .some((e) => /could not record message .*reconnecting so that WhatsApp delivers it again/.test(e.message)),
    ).toBe(true);
  }, 60_000);
});

describe('chatB status updates', () => {
  it('ignored by default; with chatBStatusReplyEnabled, one from someone Keel answers becomes a task answered in the direct chat', async () => {
    h = await bootChatB({ config: { chatBStatusReplyEnabled: false } });
    await connected();
    const off = await h.wa.sendText(ADMIN, 'sunset at the beach', { group: 'status@broadcast' });
    await waitFor(() => h!.wa.acked(off), 'acked');
    expect(h.recorded()).not.toContain(off);
    await h.close();
    h = await bootChatB({ config: { chatBStatusReplyEnabled: true } });
    await connected();
    h.model.replies.push({ text: 'lovely!' });
    const on = await h.wa.sendText(ADMIN, 'new job starts monday', { group: 'status@broadcast' });
    const reply = await h.wa.waitFor((m) => m.text === 'lovely!', 10_000);
    expect(reply.to).toBe(ADMIN_JID);
    const action = await waitFor(() => h!.actions().find((a) => a.metadata.replyTo?.messageId === on), 'the action');
    expect(action.task).toBe('[status update] new job starts monday');
    // A stranger's status update is not answered (auto-reply off).
    const stranger = await h.wa.sendText(USER, 'gym time', { group: 'status@broadcast' });
    await waitFor(() => h!.outcome(stranger), 'handled');
    expect(h.outcome(stranger)).toBe('ignored:auto-reply-off');
  });
});
