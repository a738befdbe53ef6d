/**
 * Real mail servers on 127.0.0.1 for the email tests and the bench:
 * - a test CA and a server certificate (SAN 127.0.0.1, localhost) made with openssl in a temp dir;
 * - SMTP: nodemailer's smtp-server library, STARTTLS (AUTH only after TLS) or implicit TLS, AUTH PLAIN/LOGIN;
 * - IMAP: Debian's dovecot-imapd as a private instance (`dovecot -F -c <conf>`) with its own config, a
 *   passwd-file user and a Maildir in a temp dir, TLS with the test CA's certificate. When dovecot is missing the
 *   set-up installs it (`apt-get install -y dovecot-imapd`, as root); where it cannot, `dovecotProblem` says why
 *   and the IMAP tests skip with that message;
 * - a TCP proxy that can stop answering, to play a server that hangs.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { debianPackageProblem } from '../../debian-package.js';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { tmp } from '../../helpers.js';

export interface TestCa {
  dir: string;
  caFile: string;
  cert: string;
  key: string;
  /** A CA the servers do not use: a client trusting only it must refuse them. */
  otherCaFile: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

export function makeCa(): TestCa {
  const dir = tmp('keel-mail-ca-');
  chmodSync(dir, 0o755);
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=Keel Test CA'],
    dir,
  );
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'], dir);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
    ],
    dir,
  );
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key', '-out', 'other.crt', '-days', '2', '-subj', '/CN=Other CA'],
    dir,
  );
  chmodSync(join(dir, 'server.key'), 0o644);
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    cert: readFileSync(join(dir, 'server.crt'), 'utf8'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    otherCaFile: join(dir, 'other.crt'),
  };
}

// ---------------------------------------------------------------- SMTP

export interface ReceivedMail {
  raw: string;
  parsed: ParsedMail;
  /** Envelope recipients. */
  rcpt: string[];
  user: string | undefined;
  secure: boolean;
}

export interface TestSmtp {
  port: number;
  mails: ReceivedMail[];
  user: string;
  pass: string;
  authFailures: number;
  close(): Promise<void>;
}

export async function startSmtp(ca: TestCa, opts: { implicitTls: boolean }): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const state = { authFailures: 0 };
  const user = 'keel@example.org';
  const pass = 'smtp-secret';
  const server = new SMTPServer({
    secure: opts.implicitTls,
    key: ca.key,
    cert: ca.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // AUTH is refused before TLS: a client that does not do STARTTLS cannot log in.
    allowInsecureAuth: false,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === user && auth.password === pass) return cb(null, { user });
      state.authFailures++;
      cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        void simpleParser(raw).then((parsed) => {
          mails.push({
            raw,
            parsed,
            rcpt: session.envelope.rcptTo.map((r) => r.address),
            user: session.user as string | undefined,
            secure: session.secure,
          });
          cb();
        }, cb);
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    mails,
    user,
    pass,
    get authFailures() {
      return state.authFailures;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ---------------------------------------------------------------- IMAP (dovecot)

function findDovecot(): string | undefined {
  for (const p of ['/usr/sbin/dovecot', '/usr/local/sbin/dovecot']) if (existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v dovecot'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : undefined;
}

/** Why dovecot cannot run here (undefined: it can). Installs it first when missing and running as root. */
export function dovecotProblem(): string | undefined {
  return debianPackageProblem({ pkg: 'dovecot-imapd', service: 'dovecot', find: findDovecot });
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, log: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`dovecot exited with ${child.exitCode}: ${existsSync(log) ? readFileSync(log, 'utf8') : ''}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`dovecot did not listen on ${port}: ${existsSync(log) ? readFileSync(log, 'utf8') : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface TestImap {
  port: number;
  user: string;
  pass: string;
  dir: string;
  maildir: string;
  /** Appends a raw message to INBOX over IMAP (a separate connection) and returns its UID. */
  append(raw: string, flags?: string[], internalDate?: Date): Promise<number>;
  /** Writes messages straight into the Maildir (fast bulk delivery; dovecot assigns UIDs at its next look). */
  deliverToMaildir(raws: string[]): void;
  /** A connected client for assertions (caller logs out). */
  client(): Promise<ImapFlow>;
  stop(): Promise<void>;
}

export async function startDovecot(ca: TestCa): Promise<TestImap> {
  const bin = findDovecot();
  if (!bin) throw new Error(dovecotProblem() ?? 'dovecot missing');
  const dir = tmp('keel-dovecot-');
  chmodSync(dir, 0o755);
  const root = process.getuid?.() === 0;
  // passwd-file refuses UID 0 for mail users: as root the mailbox belongs to nobody; otherwise to this user.
  const uid = root ? 65534 : process.getuid!();
  const gid = root ? 65534 : process.getgid!();
  const me = userInfo().username;
  const maildir = join(dir, 'Maildir');
  for (const d of ['run', 'state', 'home', maildir]) mkdirSync(join(dir, d), { recursive: true });
  for (const d of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, d), { recursive: true });
  if (root)
    for (const d of [maildir, join(maildir, 'cur'), join(maildir, 'new'), join(maildir, 'tmp'), join(dir, 'home')]) chownSync(d, uid, gid);
  const user = 'keel@example.org';
  const pass = 'imap-secret';
  writeFileSync(join(dir, 'passwd'), `${user}:{PLAIN}${pass}:${uid}:${gid}::${join(dir, 'home')}::\n`);
  const port = await freePort();
  const log = join(dir, 'dovecot.log');
  const conf = [
    `base_dir = ${join(dir, 'run')}`,
    `state_dir = ${join(dir, 'state')}`,
    `log_path = ${log}`,
    'protocols = imap',
    'listen = 127.0.0.1',
    'ssl = required',
    `ssl_cert = <${join(ca.dir, 'server.crt')}`,
    `ssl_key = <${join(ca.dir, 'server.key')}`,
    'ssl_min_protocol = TLSv1.2',
    'disable_plaintext_auth = yes',
    'auth_mechanisms = plain login',
    'auth_failure_delay = 0',
    `default_login_user = ${root ? 'dovenull' : me}`,
    `default_internal_user = ${root ? 'dovecot' : me}`,
    ...(root ? [] : [`default_internal_group = ${me}`]),
    'first_valid_uid = 1',
    `passdb {\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u ${join(dir, 'passwd')}\n}`,
    `userdb {\n  driver = passwd-file\n  args = username_format=%u ${join(dir, 'passwd')}\n}`,
    `mail_location = maildir:${maildir}`,
    `service imap-login {\n  inet_listener imap {\n    port = 0\n  }\n  inet_listener imaps {\n    port = ${port}\n    ssl = yes\n  }\n${root ? '' : '  chroot =\n'}}`,
    ...(root ? [] : ['service anvil {\n  chroot =\n}']),
    '',
  ].join('\n');
  const confFile = join(dir, 'dovecot.conf');
  writeFileSync(confFile, conf);
  const child = spawn(bin, ['-F', '-c', confFile], { stdio: 'ignore' });
  await waitForPort(port, child, log);
  const tls = { ca: readFileSync(ca.caFile, 'utf8') };
  const connect = async () => {
    const c = new ImapFlow({ host: '127.0.0.1', port, secure: true, auth: { user, pass }, tls, logger: false, disableAutoIdle: true });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };
  let seq = 0;
  return {
    port,
    user,
    pass,
    dir,
    maildir,
    async append(raw, flags = [], internalDate) {
      const c = await connect();
      try {
        // The arrival date (what IMAP SINCE looks at) defaults to the Date header, so old test mail looks old.
        const idate = internalDate ?? (/^Date: (.+)$/m.exec(raw)?.[1] ? new Date(/^Date: (.+)$/m.exec(raw)![1]!) : undefined);
        const r = await c.append('INBOX', raw, flags, idate);
        if (!r || !r.uid) throw new Error('APPEND returned no UID');
        return r.uid;
      } finally {
        await c.logout().catch(() => c.close());
      }
    },
    deliverToMaildir(raws) {
      for (const raw of raws) {
        const name = `${Date.now()}.P${process.pid}Q${++seq}.keeltest`;
        const file = join(maildir, 'new', name);
        writeFileSync(file, raw.replace(/\r?\n/g, '\n'));
        if (root) chownSync(file, uid, gid);
      }
    },
    client: connect,
    async stop() {
      if (child.exitCode === null) {
        const done = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  };
}

// ---------------------------------------------------------------- a proxy that can hang

export interface HangingProxy {
  port: number;
  /** Connections open now stop passing bytes either way (new ones still pass). */
  freeze(): void;
  connections(): number;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<HangingProxy> {
  const pairs: Array<[Socket, Socket]> = [];
  const frozen: Socket[] = [];
  let total = 0;
  const server: Server = createServer((client) => {
    total++;
    const upstream = createConnection({ port: targetPort, host: '127.0.0.1' });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    freeze() {
      for (const [a, b] of pairs.splice(0)) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
        // Keep the sockets open but silent: a hung server, not a closed one.
        a.removeAllListeners('data');
        b.removeAllListeners('data');
        frozen.push(a, b);
      }
    },
    connections: () => total,
    async close() {
      for (const s of [...frozen, ...pairs.flat()]) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
/** A plain RFC 5322 message. */
export function rawMail(o: {
  from: string;
  to?: string;
  subject: string;
  body?: string;
  messageId?: string;
  headers?: Record<string, string>;
  html?: string;
  date?: Date;
}): string {
  const id = o.messageId ?? `<${Math.random().toString(36).slice(2)}.${Date.now()}@sender.test>`;
  const head = [
    `From: ${o.from}`,
    `To: ${o.to ?? 'keel@example.org'}`,
    `Subject: ${o.subject}`,
    `Date: ${(o.date ?? new Date()).toUTCString()}`,
    `Message-ID: ${id}`,
    'MIME-Version: 1.0',
    ...Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  if (o.html) return [...head, 'Content-Type: text/html; charset=utf-8', '', o.html, ''].join('\r\n');
  if (!o.headers || !Object.keys(o.headers).some((k) => k.toLowerCase() === 'content-type'))
    head.push('Content-Type: text/plain; charset=utf-8');
  return [...head, '', o.body ?? 'Hello Keel.', ''].join('\r\n');
}
