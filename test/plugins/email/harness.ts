/**
 * Boots a real kernel with the email plugin (and, on demand, the knowledge plugin and a fake `llm` capability
 * that records what it was asked) against the test servers of servers.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import type { Action, ChannelCapability } from '../../../sdk/index.js';
import { rm, tmp, waitFor, writePlugin } from '../../helpers.js';
import type { TestCa, TestImap, TestSmtp } from './servers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

async function candidate(id: 'email' | 'knowledge'): Promise<PluginCandidate> {
  const mods =
    id === 'email'
      ? { manifest: () => import('../../../plugins/email/manifest.js'), index: () => import('../../../plugins/email/index.js') }
      : { manifest: () => import('../../../plugins/knowledge/manifest.js'), index: () => import('../../../plugins/knowledge/index.js') };
  return {
    id,
    origin: 'builtin',
    dir: join(ROOT, 'plugins', id),
    manifest: (await mods.manifest()).default,
    load: async () => (await mods.index()).default,
  };
}

/** The fake model: answers with the UIDs it saw and writes each request to $home/llm.log (JSON lines). */
const FAKE_LLM = `
    const { appendFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    ctx.provide('llm', {
      current: () => ({ provider: 'fake', model: 'fake-fast' }),
      canEmbed: () => false,
      embed: async () => undefined,
      chat: async (req) => {
        appendFileSync(join(ctx.home, 'llm.log'), JSON.stringify({ purpose: req.purpose, messages: req.messages }) + '\\n');
        const uids = [...req.messages.map((m) => m.content).join('\\n').matchAll(/<email uid="(\\d+)">/g)].map((m) => m[1]);
        return { text: 'Summary: ok.\\nKey action items: ship it [UID ' + uids.join('] [UID ') + ']', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, model: 'fake-fast', provider: 'fake' };
      },
    });
`;

export interface EmailKernel {
  kernel: Kernel;
  home: string;
  channel(): ChannelCapability;
  /** Actions pushed by the email channel, oldest first. */
  actions(): Action[];
  /** Runs a skill as the operator; resolves with the result text or rejects with the failure text. */
  call(name: string, args: Record<string, unknown>): Promise<string>;
  fail(name: string, args: Record<string, unknown>): Promise<{ result: string; code?: string }>;
  logs(): string[];
  stop(): Promise<void>;
}

export function emailConfig(o: {
  ca: TestCa;
  smtp?: TestSmtp;
  smtpImplicit?: boolean;
  imap?: TestImap;
  imapPort?: number;
}): Record<string, unknown> {
  return {
    emailAddress: 'keel@example.org',
    emailFromName: 'Keel',
    emailCaFile: o.ca.caFile,
    ...(o.smtp
      ? {
          smtpHost: '127.0.0.1',
          smtpPort: o.smtp.port,
          smtpSecure: o.smtpImplicit === true,
          smtpStartTls: true,
          smtpUsername: o.smtp.user,
          smtpPassword: o.smtp.pass,
        }
      : {}),
    ...(o.imap
      ? {
          imapHost: '127.0.0.1',
          imapPort: o.imapPort ?? o.imap.port,
          imapSecure: true,
          imapUsername: o.imap.user,
          imapPassword: o.imap.pass,
        }
      : {}),
  };
}

const homes: string[] = [];
const running: EmailKernel[] = [];

export async function bootEmail(o: {
  config: Record<string, unknown>;
  home?: string;
  knowledge?: boolean;
  llm?: boolean;
  configYaml?: string;
}): Promise<EmailKernel> {
  const home = o.home ?? tmp('keel-email-');
  if (!o.home) homes.push(home);
  const builtins = tmp('keel-builtins-');
  homes.push(builtins);
  if (o.configYaml) writeFileSync(join(home, 'keel.config.yaml'), o.configYaml, { mode: 0o600 });
  if (o.llm) writePlugin(join(home, 'plugins'), { id: 'fake-llm', manifest: { provides: ['llm'] }, setup: FAKE_LLM });
  const logs = new LogSink({ quiet: true });
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [await candidate('email'), ...(o.knowledge ? [await candidate('knowledge')] : [])],
    env: {},
    overrides: o.config,
    watchSkills: false,
    logs,
  });
  const status = kernel.host.status('email');
  if (status?.state !== 'loaded') throw new Error(`email plugin not loaded: ${status?.reason}`);
  const k: EmailKernel = {
    kernel,
    home,
    channel: () => kernel.registry.use<ChannelCapability>('channel:email')!,
    actions: () => {
      const l = kernel.queue.list();
      return [...l.pending, ...l.completed, ...l.failed]
        .filter((a) => a.source === 'email')
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    },
    async call(name, args) {
      const r = await kernel.execute(name, args, kernel.operator);
      if (!r.success) throw new Error(`${name} failed: ${r.result}`);
      return r.result;
    },
    async fail(name, args) {
      const r = await kernel.execute(name, args, kernel.operator);
      if (r.success) throw new Error(`${name} succeeded: ${r.result}`);
      return { result: r.result, ...(r.code ? { code: r.code } : {}) };
    },
    logs: () => logs.recent({ limit: 1000 }).map((e) => `${e.level} ${e.message}`),
    async stop() {
      const i = running.indexOf(k);
      if (i >= 0) running.splice(i, 1);
      await kernel.stop();
    },
  };
  running.push(k);
  return k;
}

export async function waitForActions(k: EmailKernel, n: number, what = `${n} email actions`, timeoutMs = 15_000): Promise<Action[]> {
  return waitFor(() => (k.actions().length >= n ? k.actions() : undefined), what, timeoutMs);
}

export function llmLog(home: string): Array<{ purpose?: string; messages: Array<{ role: string; content: string }> }> {
  return readFileSync(join(home, 'llm.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

export async function cleanup(): Promise<void> {
  for (const k of running.splice(0)) await k.kernel.stop().catch(() => undefined);
  for (const h of homes.splice(0)) rm(h);
}
