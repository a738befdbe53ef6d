/**
 * A mail answered end to end with real parts only: dovecot pushes the new mail over IDLE, the email channel queues
 * it, the built-in agent asks providerA (the real openai client against a loopback OpenAI fake), and the answer
 * goes back through the channel's reply() and nodemailer to smtp-server, threaded and marked Auto-Submitted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { chatReply, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { emailConfig } from './harness.js';
import { dovecotProblem, fileDovecot, rawMail, startSmtp, type TestCa, type TestImap, type TestSmtp } from './servers.js';

const problem = dovecotProblem();
if (problem) console.warn(`email end-to-end test skipped: ${problem}`);

let ca: TestCa;
let imap: TestImap;
let smtp: TestSmtp;
let fake: ScriptedServer;
let kernel: Kernel | undefined;
const home = tmp('keel-email-e2e-');

beforeAll(async () => {
  if (problem) return;
  ({ ca, imap } = await fileDovecot());
  smtp = await startSmtp(ca, { implicitTls: false });
  fake = await startOpenAIFake();
}, 60_000);

afterAll(async () => {
  await kernel?.stop();
  await imap?.stop();
  await smtp?.close();
  await fake?.close();
  rm(home);
});

describe.skipIf(problem)('email end to end', () => {
  it('mail in -> action -> agent -> threaded reply out, and the model saw the mail as untrusted', async () => {
    kernel = await startKernel({
      home,
      env: {},
      watchSkills: false,
      runAgent: true,
      runner: { maxIdleMs: 100 },
      logs: new LogSink({ quiet: true }),
      overrides: {
        ...emailConfig({ ca, imap, smtp }),
        emailEnabled: true,
        emailAutoReplyEnabled: true,
        providerAApiKey: 'sk-test-email-0123456789',
        providerABaseUrl: fake.url,
        modelName: 'gpt-4o-mini',
      },
    });
    await waitFor(
      () => kernel!.registry.use<{ status(): { state?: string } }>('channel:email')?.status().state === 'connected',
      'IMAP connected',
    );
    fake.script(chatReply({ text: 'The offsite is on **14 March** in Porto.' }));
    await imap.append(
      rawMail({
        from: 'Ada <ada@example.org>',
        subject: 'Offsite date?',
        messageId: '<offsite-q@example.org>',
        body: 'When and where is the offsite?',
      }),
    );
    const reply = await waitFor(
      () => smtp.mails.find((m) => m.parsed.inReplyTo === '<offsite-q@example.org>'),
      'the reply by mail',
      20_000,
    );
    expect(reply.rcpt).toEqual(['ada@example.org']);
    expect(reply.parsed.subject).toBe('Re: Offsite date?');
    expect(reply.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(reply.parsed.references).toContain('<offsite-q@example.org>');
    expect(reply.parsed.html).toContain('<strong>14 March</strong>');
    expect(reply.parsed.text).toContain('The offsite is on 14 March in Porto.');
    const prompt = JSON.stringify(fake.requests.at(-1)!.body);
    expect(prompt).toContain('When and where is the offsite?');
    expect(prompt).toMatch(/untrusted/i);
    // Exactly one answer.
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails.filter((m) => m.parsed.inReplyTo === '<offsite-q@example.org>')).toHaveLength(1);
  });
});
