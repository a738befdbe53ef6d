/**
 * Issue 39.4: one dovecot per run. The global set-up provides it (with its test CA) as `keelDovecot`; each file
 * gets a user of its own there, added to the running server's passwd-file, whose mail no other user sees.
 */
import { ImapFlow } from 'imapflow';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { addDovecotUser, dovecotProblem, fileDovecot, rawMail, type TestImap } from './servers.js';

const problem = dovecotProblem();
const users: TestImap[] = [];

afterAll(async () => {
  for (const u of users) await u.stop();
});

async function inboxSubjects(imap: TestImap): Promise<string[]> {
  const c = await imap.client();
  try {
    const box = await c.mailboxOpen('INBOX');
    const out: string[] = [];
    if (box.exists === 0) return out;
    for await (const m of c.fetch('1:*', { envelope: true })) out.push(m.envelope?.subject ?? '');
    return out;
  } finally {
    await c.logout().catch(() => c.close());
  }
}

describe.skipIf(problem)('the run shares one dovecot', () => {
  it('the global set-up provides it, and fileDovecot() is a user on it, not a private instance', async () => {
    const shared = inject('keelDovecot');
    expect(shared).toBeDefined();
    const { ca, imap } = await fileDovecot();
    users.push(imap);
    expect(imap.port).toBe(shared!.port);
    expect(ca.caFile).toBe(shared!.caFile);
    expect(readFileSync(shared!.passwdFile, 'utf8')).toContain(`${imap.user}/`);
  });

  it('users added while it runs log in at once, each with a Maildir no other user sees', async () => {
    const shared = inject('keelDovecot')!;
    const [a, b] = await Promise.all([addDovecotUser(shared), addDovecotUser(shared)]);
    users.push(a!, b!);
    expect(a!.maildir).not.toBe(b!.maildir);
    await a!.append(rawMail({ from: 'Ada <ada@example.org>', subject: 'only for a' }));
    expect(await inboxSubjects(a!)).toEqual(['only for a']);
    expect(await inboxSubjects(b!)).toEqual([]);
  });

  it('a wrong password is refused', async () => {
    const shared = inject('keelDovecot')!;
    const a = await addDovecotUser(shared);
    users.push(a);
    const c = new ImapFlow({
      host: shared.host,
      port: shared.port,
      secure: true,
      auth: { user: a.user, pass: 'not-the-password' },
      tls: { ca: readFileSync(shared.caFile, 'utf8') },
      logger: false,
    });
    c.on('error', () => undefined);
    await expect(c.connect()).rejects.toMatchObject({ authenticationFailed: true });
  });
});
