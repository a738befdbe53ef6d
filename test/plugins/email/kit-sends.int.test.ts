/**
 * The email channel's sends on the channel kit's send path, through the real nodemailer against smtp-server: replies
 * are ledgered under the kit's keys (`<actionId>:r<n>`, one mail a chunk, its Message-ID the platform id), and a
 * failed action started by a mail gets the kit's one failure notice, threaded as an automatic reply.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { errorReply, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { bootEmail, cleanup, emailConfig } from './harness.js';
import { testCa, startSmtp, type TestCa, type TestSmtp } from './servers.js';

let ca: TestCa;
let smtp: TestSmtp;
let fake: ScriptedServer;
let kernel: Kernel | undefined;
const home = tmp('keel-email-kit-');

beforeAll(async () => {
  ca = testCa();
  smtp = await startSmtp(ca, { implicitTls: false });
  fake = await startOpenAIFake();
});

afterAll(async () => {
  await kernel?.stop();
  await cleanup();
  await smtp?.close();
  await fake?.close();
  rm(home);
});

const replyTo = { chatId: 'ada@example.org', messageId: '<help-1@ada.test>', subject: 'Help', references: ['<help-1@ada.test>'] };

describe('email on the kit send path', () => {
  it('replies are ledgered under <actionId>:r<n>, one mail each, with its Message-ID', async () => {
    const k = await bootEmail({ config: emailConfig({ ca, smtp }) });
    const action = await k.kernel.queue.push({ task: 'x', source: 'email', metadata: { replyTo } });
    const first = await k.channel().reply(action, 'one');
    const second = await k.channel().reply(action, 'two');
    // The ledger marks a confirmed chunk at the end of the turn: read once both marks are committed.
    const rows = await waitFor(() => {
      const db = new DatabaseSync(join(k.home, 'channels', 'email', 'kit.db'));
      const r = db
        .prepare('SELECT key, chunk, chat_id, state, platform_id FROM delivery WHERE key LIKE ? ORDER BY key')
        .all(`${action.id}:%`) as Array<{ state: string }>;
      db.close();
      return r.length === 2 && r.every((x) => x.state === 'sent') ? r : undefined;
    }, 'both replies marked sent');
    expect(rows).toEqual([
      { key: `${action.id}:r0`, chunk: 0, chat_id: 'ada@example.org', state: 'sent', platform_id: first.messageId },
      { key: `${action.id}:r1`, chunk: 0, chat_id: 'ada@example.org', state: 'sent', platform_id: second.messageId },
    ]);
    expect(smtp.mails.slice(-2).map((m) => m.parsed.messageId)).toEqual([first.messageId, second.messageId]);
    await k.stop();
  });

  it('a reply the earlier email channel sent under its own key (email.db) is in the ledger after the upgrade: not mailed again', async () => {
    const upgraded = tmp('keel-email-upgrade-');
    try {
      // The earlier channel's record: its schema (with delivery_key) and one reply it sent.
      mkdirSync(join(upgraded, 'email'), { recursive: true });
      const old = new DatabaseSync(join(upgraded, 'email', 'email.db'));
      old.exec(
        'CREATE TABLE sent (message_id TEXT PRIMARY KEY, thread TEXT NOT NULL, recipients TEXT NOT NULL, auto INTEGER NOT NULL, delivery_key TEXT UNIQUE, state TEXT NOT NULL, at INTEGER NOT NULL)',
      );
      old
        .prepare("INSERT INTO sent VALUES (?, ?, ?, 1, ?, 'sent', ?)")
        .run('<old-reply@keel.test>', '<help-1@ada.test>', 'ada@example.org', 'act_1700000000000_upgrade1:reply:0', Date.now());
      old.close();
      const k = await bootEmail({ config: emailConfig({ ca, smtp }), home: upgraded });
      const mails = smtp.mails.length;
      // The same action answering again (re-run after the upgrade): its first answer is the one already sent.
      const action = {
        ...(await k.kernel.queue.push({ task: 'x', source: 'email', metadata: { replyTo } })),
        id: 'act_1700000000000_upgrade1',
      };
      const again = await k.channel().reply(action, 'the same answer, once more');
      expect(again.messageId).toBe('<old-reply@keel.test>');
      expect(smtp.mails.length).toBe(mails);
      // Its next answer is a new one, sent.
      const next = await k.channel().reply(action, 'a second answer');
      expect(next.messageId).not.toBe('<old-reply@keel.test>');
      await waitFor(() => smtp.mails.length === mails + 1 || undefined, 'the second answer');
      await k.stop();
      // Moved once: the old key is cleared.
      const after = new DatabaseSync(join(upgraded, 'email', 'email.db'));
      expect(after.prepare('SELECT delivery_key FROM sent WHERE message_id = ?').get('<old-reply@keel.test>')).toEqual({
        delivery_key: null,
      });
      after.close();
    } finally {
      rm(upgraded);
    }
  });

  it('a failed action started by a mail gets one brief failure notice on its thread, as an automatic reply', async () => {
    kernel = await startKernel({
      home,
      env: {},
      watchSkills: false,
      runAgent: true,
      runner: { maxIdleMs: 100 },
      logs: new LogSink({ quiet: true }),
      overrides: {
        ...emailConfig({ ca, smtp }),
        providerAApiKey: 'sk-test-email-0123456789',
        providerABaseUrl: fake.url,
        modelName: 'gpt-4o-mini',
      },
    });
    fake.script(...Array.from({ length: 5 }, () => errorReply(400, 'model exploded\n    at run (/srv/keel/x.js:1:2)')));
    await kernel.queue.push({
      task: 'do it',
      source: 'email',
      actor: { kind: 'user', channel: 'email', userId: 'ada@example.org', untrusted: true },
      maxRetries: 0,
      metadata: { replyTo: { ...replyTo, messageId: '<help-2@ada.test>', references: ['<help-2@ada.test>'] } },
    });
    const notice = await waitFor(() => smtp.mails.find((m) => m.parsed.inReplyTo === '<help-2@ada.test>'), 'the failure notice', 20_000);
    expect(notice.rcpt).toEqual(['ada@example.org']);
    expect(notice.parsed.subject).toBe('Re: Help');
    expect(notice.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(notice.parsed.text?.trim()).toMatch(/^Sorry, that did not work/);
    // No path into the code.
    expect(notice.parsed.text).not.toMatch(/\/srv\//);
    expect(notice.parsed.html).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails.filter((m) => m.parsed.inReplyTo === '<help-2@ada.test>')).toHaveLength(1);
  });
});
