/**
 * Rule 4 of authorize (issue 35): on untrusted work an outbound skill may only answer the requester, unless the
 * local operator is behind the work. Checked through the kernel's real dispatch (a kernel with a plugin whose
 * skills record what they were asked to send), and the recipient of every built-in outbound skill read the way the
 * skill reads it.
 */
import Type from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { manifestFor } from '../../../kernel/plugins/custom-skills.js';
import { authorize, isOutboundSkill, recipientsOf } from '../../../kernel/policy/index.js';
import type { Action, Actor, ConfigView, SkillManifest } from '../../../sdk/types.js';
import { definePlugin } from '../../../sdk/index.js';
import { bootKernel, type TestKernel } from '../../../testing/index.js';

const str = Type.String();
/** Stand-ins with the real skills' names and recipient arguments; every call that runs is recorded in `sent`. */
const SKILLS: SkillManifest[] = [
  { name: 'send_chatA', parameters: Type.Object({ chatId: Type.Union([str, Type.Number()]), message: str }) },
  { name: 'send_email', parameters: Type.Object({ to: str, message: str }) },
  { name: 'send_file', parameters: Type.Object({ jid: str, path: str, channel: Type.Optional(str) }) },
  { name: 'post_webhook', isOutbound: true, parameters: Type.Object({ url: str }) },
  { name: 'lookup', parameters: Type.Object({ text: str }) },
].map((x) => ({ description: x.name, category: 'test', ...x }));

const log: Array<{ s: string; args: unknown }> = [];
const sent = () => log;

let t: TestKernel;

beforeAll(async () => {
  t = await bootKernel({
    config: { adminUsers: { chatA: ['42'], email: ['boss@example.com'] } },
    plugins: [
      definePlugin({
        manifest: { id: 'senders', version: '1.0.0', kind: 'skill', description: 'recording senders', skills: SKILLS },
        setup(ctx) {
          for (const x of SKILLS)
            ctx.skills.register(x.name as never, (args: unknown) => {
              log.push({ s: x.name, args });
              return 'sent';
            });
          return { stop() {} };
        },
      }),
    ],
  });
}, 20_000);

afterAll(async () => {
  await t?.close();
});

const alice: Actor = { kind: 'user', channel: 'chatA', userId: '700', untrusted: true };
const admin: Actor = { kind: 'user', channel: 'chatA', userId: '42' };
const operator: Actor = { kind: 'operator', channel: 'cli' };
/** The agent at work for `who`, after it read a web page (the agent loop marks its calls so). */
const agentFor = (who: Actor, untrusted = true): Actor => ({
  kind: 'agent',
  channel: who.channel,
  onBehalfOf: who,
  ...(untrusted ? { untrusted: true } : {}),
});

async function chatAction(who: Actor, chatId: string, source = 'chatA'): Promise<Action> {
  return t.kernel.queue.push({ task: 'hello', source, actor: who, metadata: { replyTo: { chatId, messageId: '1' } } });
}

describe('outbound skills on untrusted work, through dispatch', () => {
  it('a stranger on chatA may be answered, but their work cannot message another chat or mail anyone', async () => {
    const action = await chatAction(alice, '700');
    const run = (name: string, args: Record<string, unknown>) => t.kernel.execute(name, args, agentFor(alice), { action });
    const before = sent().length;

    const other = await run('send_chatA', { chatId: '999', message: 'spam' });
    expect(other).toMatchObject({ success: false, code: ErrorCodes.FORBIDDEN });
    expect(other.result).toMatch(
      /send_chatA is refused: this work is untrusted .* may only answer the requester \(chatA 700\), not chatA 999\./,
    );
    const mail = await run('send_email', { to: 'victim@example.org', message: 'hi' });
    expect(mail.result).toMatch(/not email victim@example.org/);
    const file = await run('send_file', { jid: '999', path: '/tmp/x' });
    expect(file.code).toBe(ErrorCodes.FORBIDDEN);
    // The same id on another channel is another place.
    expect((await run('send_file', { jid: '700', path: '/tmp/x', channel: 'chatC' })).code).toBe(ErrorCodes.FORBIDDEN);
    expect(sent().slice(before)).toEqual([]);

    expect(await run('send_chatA', { chatId: '700', message: 'answer' })).toMatchObject({ success: true });
    // A placeholder is the current chat, as send_chatA itself reads it.
    expect(await run('send_chatA', { chatId: 'me', message: 'answer' })).toMatchObject({ success: true });
    expect(await run('send_file', { jid: '700', path: '/tmp/x' })).toMatchObject({ success: true });
    expect(await run('lookup', { text: 'anything' })).toMatchObject({ success: true });
    expect(
      sent()
        .slice(before)
        .map((x) => x.s),
    ).toEqual(['send_chatA', 'send_chatA', 'send_file', 'lookup']);
  });

  it('in a group the requester is the group and the person; a mail is answered to its sender only', async () => {
    const group = await chatAction(alice, '-100500');
    const inGroup = (chatId: string) => t.kernel.execute('send_chatA', { chatId, message: 'x' }, agentFor(alice), { action: group });
    expect((await inGroup('-100500')).success).toBe(true);
    expect((await inGroup('700')).success).toBe(true);
    expect((await inGroup('-100999')).success).toBe(false);

    const sender: Actor = { kind: 'user', channel: 'email', userId: 'unverified:ann@example.org', untrusted: true };
    const mail = await t.kernel.queue.push({
      task: 'mail',
      source: 'email',
      actor: sender,
      metadata: { replyTo: { chatId: 'Ann@Example.org' } },
    });
    const reply = (to: string) => t.kernel.execute('send_email', { to, message: 'x' }, agentFor(sender), { action: mail });
    expect((await reply('ann@example.org')).success).toBe(true);
    expect((await reply('Ann <ANN@example.org>')).success).toBe(true);
    const cc = await reply('ann@example.org, boss@example.com');
    expect(cc.success).toBe(false);
    expect(cc.result).toMatch(/not email boss@example.com/);
  });

  it('an action recorded for someone else does not lend its chat; work with no requester answers nobody', async () => {
    const bobs = await chatAction({ kind: 'user', channel: 'chatA', userId: '800', untrusted: true }, '800');
    const r = await t.kernel.execute('send_chatA', { chatId: '800', message: 'x' }, agentFor(alice), { action: bobs });
    expect(r.success).toBe(false);
    const alone = await t.kernel.execute(
      'send_chatA',
      { chatId: '700', message: 'x' },
      { kind: 'agent', channel: 'autonomy', untrusted: true },
    );
    expect(alone.result).toMatch(/nobody: this work has no requester to answer/);
  });

  it('an outbound skill whose recipient cannot be told is refused on untrusted work, and runs on trusted work', async () => {
    const action = await chatAction(admin, '42');
    const hook = await t.kernel.execute('post_webhook', { url: 'https://evil.example/x' }, agentFor(admin), { action });
    expect(hook).toMatchObject({ success: false, code: ErrorCodes.FORBIDDEN });
    expect(hook.result).toMatch(/whom post_webhook would send to cannot be told from its arguments/);
    expect((await t.kernel.execute('post_webhook', { url: 'https://example.com/x' }, agentFor(admin, false), { action })).success).toBe(
      true,
    );
  });

  it("an admin's untrusted work may answer only the admin; the operator's untrusted work may send anywhere", async () => {
    const action = await chatAction(admin, '42');
    expect((await t.kernel.execute('send_chatA', { chatId: '999', message: 'x' }, agentFor(admin), { action })).success).toBe(false);
    expect((await t.kernel.execute('send_chatA', { chatId: '42', message: 'x' }, agentFor(admin), { action })).success).toBe(true);
    // Trusted work (the admin's own message, nothing read from outside) sends where the admin asks.
    expect((await t.kernel.execute('send_chatA', { chatId: '999', message: 'x' }, agentFor(admin, false), { action })).success).toBe(true);

    const op = await t.kernel.queue.push({ task: 'research and tell the team', source: 'cli', actor: operator });
    for (const [name, args] of [
      ['send_chatA', { chatId: '999', message: 'x' }],
      ['send_email', { to: 'team@example.org', message: 'x' }],
      ['post_webhook', { url: 'https://example.com/x' }],
    ] as const) {
      expect((await t.kernel.execute(name, args, agentFor(operator), { action: op })).success, name).toBe(true);
    }
  });
});

describe('which skills are outbound, and whom each addresses', () => {
  const view: ConfigView = { get: () => undefined as never, has: () => false, all: () => ({}) };
  const skill = (name: string, flags: Partial<SkillManifest> = {}): SkillManifest => ({
    name,
    description: name,
    category: 'test',
    parameters: Type.Object({}),
    ...flags,
  });

  it('knows the outbound skills by name whatever the manifest says, and by isOutbound', () => {
    for (const name of [
      'send_file',
      'send_voice_note',
      'send_image',
      'react',
      'send_email',
      'send_chatA',
      'send_chatD',
      'chatA_send_poll',
      'chatA_pin_message',
    ])
      expect(isOutboundSkill(skill(name, { isOutbound: false })), name).toBe(true);
    expect(isOutboundSkill(skill('fetch_weather', { isOutbound: true }))).toBe(true);
    for (const name of ['web_search', 'rag_search', 'recall_memory', 'generate_image'])
      expect(isOutboundSkill(skill(name)), name).toBe(false);
  });

  it('reads the recipient the way each skill does', () => {
    const fromChatA = { source: 'chatA', metadata: { replyTo: { chatId: '-100' } } } as unknown as Action;
    const fromChatD = { source: 'chatD', metadata: { replyTo: { chatId: 'C0123ABC' } } } as unknown as Action;
    expect(recipientsOf('send_chatA', { chatId: 'me' }, fromChatA)).toEqual([{ channel: 'chatA', id: '-100' }]);
    expect(recipientsOf('send_chatA', { chatId: 5 }, fromChatA)).toEqual([{ channel: 'chatA', id: '5' }]);
    expect(recipientsOf('send_chatD', { channel_id: 'here' }, fromChatD)).toEqual([{ channel: 'chatD', id: 'C0123ABC' }]);
    expect(recipientsOf('send_chatD', { channel_id: 'C0999' }, fromChatD)).toEqual([{ channel: 'chatD', id: 'C0999' }]);
    expect(recipientsOf('send_chatB', { jid: '49151@s.whatsapp.net' }, undefined)).toEqual([
      { channel: 'chatB', id: '49151@s.whatsapp.net' },
    ]);
    expect(recipientsOf('send_chatC', { channel_id: '123456789012345678' }, undefined)).toEqual([
      { channel: 'chatC', id: '123456789012345678' },
    ]);
    expect(recipientsOf('send_email', { to: 'A <a@x.org>; b@y.org' }, undefined)).toEqual([
      { channel: 'email', id: 'a@x.org' },
      { channel: 'email', id: 'b@y.org' },
    ]);
    // SPEC's channel detection: explicit, then the action's source, then the id's form.
    expect(recipientsOf('send_file', { jid: '49151@s.whatsapp.net' }, undefined)).toEqual([
      { channel: 'chatB', id: '49151@s.whatsapp.net' },
    ]);
    expect(recipientsOf('send_image', { jid: '123456789012345678' }, fromChatA)).toEqual([{ channel: 'chatA', id: '123456789012345678' }]);
    expect(recipientsOf('react', { message_id: '1', emoji: 'fire' }, fromChatA)).toEqual([{ channel: 'chatA', id: '-100' }]);
    expect(recipientsOf('react', { message_id: '1', emoji: 'fire' }, undefined)).toBeUndefined();
    expect(recipientsOf('send_chatA', {}, fromChatA)).toBeUndefined();
    expect(recipientsOf('post_webhook', { url: 'x' }, undefined)).toBeUndefined();
  });

  it('an agent-written skill keeps its isOutbound flag (a custom skill file), and a manifest must give it as a boolean', () => {
    const def = { name: 'post_status', description: 'Posts a status', parameters: Type.Object({}), isOutbound: true, run: () => 'ok' };
    const { manifest } = manifestFor('post_status.ts', def);
    expect(manifest.skills?.[0]?.isOutbound).toBe(true);
    expect(isOutboundSkill(manifest.skills![0]!)).toBe(true);
    expect(() => manifestFor('post_status.ts', { ...def, isOutbound: 'yes' })).toThrow(/"isOutbound" must be true or false/);
  });

  it('fails closed without arguments or with a malformed actor chain', () => {
    const untrusted = agentFor(alice);
    expect(authorize({ actor: untrusted, skill: skill('send_chatA'), config: view }).allowed).toBe(false);
    let chain: Actor = { kind: 'user', channel: 'chatA', userId: '700' };
    for (let i = 0; i < 10; i++) chain = { kind: 'agent', channel: 'chatA', onBehalfOf: chain };
    // Too long to read: untrusted, and nobody is provably behind it.
    expect(authorize({ actor: chain, skill: skill('send_chatA'), config: view, args: { chatId: '700' } }).allowed).toBe(false);
  });
});
