/**
 * Real mail servers on 127.0.0.1 for the email tests and the bench:
 * - a test CA and a server certificate (SAN 127.0.0.1, localhost) made with openssl in a temp dir;
 * - SMTP: nodemailer's smtp-server library, STARTTLS (AUTH only after TLS) or implicit TLS, AUTH PLAIN/LOGIN;
 * - IMAP: Debian's dovecot-imapd (`dovecot -F -c <conf>`) with its own config in a temp dir, TLS with the test
 *   CA's certificate. One is shared by the run (started with its CA by test/global-setup.ts, provided as
 *   `keelDovecot`); `fileDovecot()` gives each file a user of its own there (appended to the passwd-file, its own
 *   Maildir), or a private instance where the set-up did not run (one file by path in the unit tier, the bench).
 *   `startDovecot()` is always a private instance. When dovecot is missing the set-up installs it (`apt-get
 *   install -y dovecot-imapd`, as root); where it cannot, `dovecotProblem` says why and the IMAP tests skip;
 * - a TCP proxy that can stop answering, to play a server that hangs.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { debianPackageProblem } from '../../debian-package.js';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { inject } from 'vitest';
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
  /** The login name (the same for every file: the tests' address); dovecot tells the files apart by password. */
  user: string;
  pass: string;
  /** The dovecot instance's directory (its log is dovecot.log there). */
  dir: string;
  maildir: string;
  /** Appends a raw message to INBOX over IMAP (a separate connection) and returns its UID. */
  append(raw: string, flags?: string[], internalDate?: Date): Promise<number>;
  /** Writes messages straight into the Maildir (fast bulk delivery; dovecot assigns UIDs at its next look). */
  deliverToMaildir(raws: string[]): void;
  /** A connected client for assertions (caller logs out). */
  client(): Promise<ImapFlow>;
  /** A private instance: stops dovecot. A user of the shared one: removes its mailbox (dovecot goes on). */
  stop(): Promise<void>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's shared dovecot and test CA (test/global-setup.ts); unset when it could not start. */
    keelDovecot: KeelDovecot | undefined;
  }
}

/** A running dovecot as the files see it: where it listens, the CA its certificate is from, its passwd-file. */
export interface KeelDovecot {
  host: string;
  port: number;
  /** The instance's directory (config, log, the users' homes). */
  dir: string;
  /** The test CA's directory (makeCa's files) and its certificate. */
  caDir: string;
  caFile: string;
  /** Users are appended here; dovecot reads the file again when it changes. */
  passwdFile: string;
}

/** A dovecot started by this process. */
interface OwnDovecot extends KeelDovecot {
  stop(): Promise<void>;
}

/**
 * Starts a dovecot with no users yet (add them with `addDovecotUser`). Every user logs in as keel@example.org (the
 * tests' address, which their error messages name) with a password of its own: the passdb is keyed by name and
 * password, and the entry found renames the login to the user's own name, whose home and Maildir are its own. So
 * files sharing one instance never see each other's mail, and a wrong password finds no entry (a failed login).
 */
async function startDovecotServer(ca: TestCa): Promise<OwnDovecot> {
  const bin = findDovecot();
  if (!bin) throw new Error(dovecotProblem() ?? 'dovecot missing');
  const dir = tmp('keel-dovecot-');
  chmodSync(dir, 0o755);
  const root = process.getuid?.() === 0;
  const me = userInfo().username;
  for (const d of ['run', 'state', 'users']) mkdirSync(join(dir, d), { recursive: true });
  const passwdFile = join(dir, 'passwd');
  writeFileSync(passwdFile, '');
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
    // %w: the password given (PLAIN and LOGIN only, the mechanisms allowed here).
    `passdb {\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u/%w ${passwdFile}\n}`,
    `userdb {\n  driver = passwd-file\n  args = username_format=%u ${passwdFile}\n}`,
    'mail_location = maildir:~/Maildir',
    `service imap-login {\n  inet_listener imap {\n    port = 0\n  }\n  inet_listener imaps {\n    port = ${port}\n    ssl = yes\n  }\n${root ? '' : '  chroot =\n'}}`,
    // No auth penalty (a delay of up to 15 s after failed logins from an IP, which would carry one file's
    // wrong-password tests over to the logins of every other file on a shared instance).
    `service anvil {\n${root ? '' : '  chroot =\n'}  unix_listener anvil-auth-penalty {\n    mode = 0\n  }\n}`,
    '',
  ].join('\n');
  const confFile = join(dir, 'dovecot.conf');
  writeFileSync(confFile, conf);
  const child = spawn(bin, ['-F', '-c', confFile], { stdio: 'ignore' });
  await waitForPort(port, child, log);
  return {
    host: '127.0.0.1',
    port,
    dir,
    caDir: ca.dir,
    caFile: ca.caFile,
    passwdFile,
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

/**
 * A user of its own on `server`: a home and Maildir under the instance's users/ directory, appended to its
 * passwd-file. Resolves once dovecot lets the user log in (it reads the changed file at its next login).
 */
export async function addDovecotUser(server: KeelDovecot): Promise<TestImap> {
  const root = process.getuid?.() === 0;
  // passwd-file refuses UID 0 for mail users: as root the mailbox belongs to nobody; otherwise to this user.
  const uid = root ? 65534 : process.getuid!();
  const gid = root ? 65534 : process.getgid!();
  const id = `keel-${process.pid}-${randomBytes(4).toString('hex')}`;
  const home = join(server.dir, 'users', id);
  const maildir = join(home, 'Maildir');
  for (const d of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, d), { recursive: true });
  if (root) for (const d of [home, maildir, join(maildir, 'cur'), join(maildir, 'new'), join(maildir, 'tmp')]) chownSync(d, uid, gid);
  const user = 'keel@example.org';
  const pass = `imap-secret-${randomBytes(8).toString('hex')}`;
  // One write (O_APPEND) of both lines: files adding users at once do not interleave.
  appendFileSync(server.passwdFile, `${user}/${pass}:{PLAIN}${pass}::::::user=${id}\n${id}::${uid}:${gid}::${home}::\n`);
  const tls = { ca: readFileSync(server.caFile, 'utf8') };
  // dovecot looks at the passwd-file at most once a second: the next second sees the new lines.
  await new Promise((r) => setTimeout(r, 1050 - (Date.now() % 1000)));
  const connect = async () => {
    const c = new ImapFlow({
      host: server.host,
      port: server.port,
      secure: true,
      auth: { user, pass },
      tls,
      logger: false,
      disableAutoIdle: true,
    });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };
  for (const deadline = Date.now() + 15_000; ; ) {
    try {
      await (await connect()).logout();
      break;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`dovecot did not take the new user ${id}: ${String(e)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let seq = 0;
  return {
    port: server.port,
    user,
    pass,
    dir: server.dir,
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
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** A private dovecot with one user, stopped by `stop()`: for the bench, and a file that must kill or hang dovecot. */
export async function startDovecot(ca: TestCa): Promise<TestImap> {
  const server = await startDovecotServer(ca);
  try {
    const imap = await addDovecotUser(server);
    return { ...imap, stop: () => server.stop() };
  } catch (e) {
    await server.stop();
    throw e;
  }
}

/** test/global-setup.ts: the run's test CA and dovecot (undefined: dovecot or openssl is missing). */
export async function startSharedDovecot(): Promise<(KeelDovecot & { stop(): Promise<void> }) | undefined> {
  if (!findDovecot()) return undefined;
  const ca = makeCa();
  const server = await startDovecotServer(ca).catch((e: unknown) => {
    rmSync(ca.dir, { recursive: true, force: true });
    throw e;
  });
  return {
    host: server.host,
    port: server.port,
    dir: server.dir,
    caDir: server.caDir,
    caFile: server.caFile,
    passwdFile: server.passwdFile,
    async stop() {
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
      rmSync(ca.dir, { recursive: true, force: true });
    },
  };
}

function provided(): KeelDovecot | undefined {
  // Outside vitest (the bench) there is nothing provided, and inject() would throw.
  return process.env.VITEST ? inject('keelDovecot') : undefined;
}

function caFrom(dir: string): TestCa {
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    cert: readFileSync(join(dir, 'server.crt'), 'utf8'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    otherCaFile: join(dir, 'other.crt'),
  };
}

/** The run's test CA (the shared dovecot's), or a new one where the global set-up did not run. */
export function testCa(): TestCa {
  const shared = provided();
  return shared ? caFrom(shared.caDir) : makeCa();
}

/**
 * The CA and the IMAP server for one test file: a user of its own (own Maildir) on the run's shared dovecot, or,
 * where the global set-up did not run or could not start one, a private dovecot as before. `imap.stop()` after.
 */
export async function fileDovecot(): Promise<{ ca: TestCa; imap: TestImap }> {
  const shared = provided();
  if (shared) return { ca: caFrom(shared.caDir), imap: await addDovecotUser(shared) };
  const ca = makeCa();
  return { ca, imap: await startDovecot(ca) };
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
