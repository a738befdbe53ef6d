/**
 * A real redis-server on 127.0.0.1 for the shared-queue tests and the bench: one shared by the whole run
 * (`sharedRedis()`, started by test/global-setup.ts; each file keeps to key prefixes of its own), or a private one
 * for a file that kills, restarts or reconfigures it (`privateRedis()`). Both are Debian's redis-server with
 * its own directory, a free port, no config file, and the append-only file synced on every write (the setting
 * docs/scaling.md recommends). When redis-server is missing the set-up installs it (`apt-get install -y
 * redis-server`, as root); where it cannot, `redisProblem()` says why and the tests skip with that message.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { debianPackageProblem } from './debian-package.js';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's shared redis-server (test/global-setup.ts); unset when it could not start. */
    keelRedisUrl: string | undefined;
  }
}

function findRedis(): string | undefined {
  for (const p of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) if (existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : undefined;
}

/** Why redis-server cannot run here (undefined: it can). Installs it first when missing and running as root. */
export function redisProblem(): string | undefined {
  return debianPackageProblem({ pkg: 'redis-server', service: 'redis-server', find: findRedis });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export interface TestRedis {
  port: number;
  url: string;
  dir: string;
  /** kill -9 (what Redis has acknowledged and synced to its append-only file survives). */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (after kill or stop). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a private redis-server in `dir`; `password` adds `requirepass`. */
export async function startRedis(
  dir: string,
  opts: { password?: string; appendfsync?: 'always' | 'everysec' | 'no' } = {},
): Promise<TestRedis> {
  const bin = findRedis();
  if (!bin) throw new Error(redisProblem() ?? 'redis-server is missing');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const log = join(dir, 'redis.log');
  let child: ChildProcess | undefined;
  const start = async () => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      opts.appendfsync ?? 'always',
      '--logfile',
      log,
      '--daemonize',
      'no',
      ...(opts.password ? ['--requirepass', opts.password] : []),
    ];
    child = spawn(bin, args, { stdio: 'ignore' });
    const deadline = Date.now() + 15_000;
    while (!(await listening(port))) {
      if (child.exitCode !== null)
        throw new Error(`redis-server exited with ${child.exitCode}: ${existsSync(log) ? readFileSync(log, 'utf8') : ''}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const waitExit = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r()));
  await start();
  const auth = opts.password ? `:${encodeURIComponent(opts.password)}@` : '';
  return {
    port,
    url: `redis://${auth}127.0.0.1:${port}`,
    dir,
    kill: async () => {
      if (!child) return;
      child.kill('SIGKILL');
      await waitExit(child);
    },
    restart: start,
    // SIGTERM can take Redis most of a minute here (its shutdown waits for a cron tick that the idle event loop
    // puts off); everything it acknowledged is on disk already (appendfsync always), so it is killed.
    stop: async () => {
      if (!child) return;
      child.kill('SIGKILL');
      await waitExit(child);
      child = undefined;
    },
  };
}

/** A private redis-server for the tests of one file, with a client of its own for what the tests inspect or break. */
export interface PrivateRedis extends TestRedis {
  /** A plain ioredis client on it (created on first use, closed with the server; it reconnects after a restart). */
  admin(): Redis;
}

/**
 * A private redis-server for the tests of one file: started before them, killed after; call the returned function
 * inside a test for it. Pair with `describe.skipIf(redisProblem())`, which says why when it cannot run here.
 * @example const redis = privateRedis(); it('...', async () => { const url = redis().url; await redis().admin().get(k); });
 */
export function privateRedis(): () => PrivateRedis {
  let r: PrivateRedis | undefined;
  let dir: string | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    if (redisProblem()) return;
    dir = mkdtempSync(join(tmpdir(), 'keel-redis-'));
    const server = await startRedis(dir);
    r = Object.assign(server, {
      admin: () => {
        if (!client) {
          client = new Redis(server.url);
          client.on('error', () => {}); // the tests kill the server on purpose
        }
        return client;
      },
    });
  });
  afterAll(async () => {
    client?.disconnect();
    await r?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!r) throw new Error('redis-server is not running (see redisProblem())');
    return r;
  };
}

/** The run's shared redis-server as a test file sees it: no kill, restart or stop (those need `privateRedis()`). */
export interface SharedRedis {
  port: number;
  url: string;
  /** A key prefix no other file uses (its process and random bytes); tests add their own part after it. */
  prefix: string;
  /** A plain ioredis client on it (created on first use, closed after the file). */
  admin(): Redis;
}

/**
 * The run's shared redis-server (started once by test/global-setup.ts, its URL provided as `keelRedisUrl`), for a
 * file whose tests neither kill, restart nor reconfigure Redis. Files stay apart by key prefix (never FLUSHALL,
 * KEYS * or CONFIG SET on it). Where the run has none (the set-up could not start it), a private one is started for
 * the file instead. Pair with `describe.skipIf(redisProblem())`, as for `privateRedis()`.
 */
export function sharedRedis(): () => SharedRedis {
  let r: SharedRedis | undefined;
  let own: TestRedis | undefined;
  let dir: string | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    if (redisProblem()) return;
    let url = inject('keelRedisUrl');
    if (!url) {
      dir = mkdtempSync(join(tmpdir(), 'keel-redis-'));
      own = await startRedis(dir);
      url = own.url;
    }
    r = {
      port: Number(new URL(url).port),
      url,
      prefix: `t${process.pid}-${randomBytes(4).toString('hex')}:`,
      admin: () => {
        if (!client) {
          client = new Redis(url);
          client.on('error', () => {});
        }
        return client;
      },
    };
  });
  afterAll(async () => {
    client?.disconnect();
    await own?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!r) throw new Error('redis-server is not running (see redisProblem())');
    return r;
  };
}

/** test/global-setup.ts: starts the run's shared redis-server; returns its URL and how to stop it (undefined: none). */
export async function startSharedRedis(): Promise<{ url: string; stop(): Promise<void> } | undefined> {
  if (!findRedis()) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'keel-redis-shared-'));
  const server = await startRedis(dir);
  return {
    url: server.url,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
