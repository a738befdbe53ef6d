/**
 * Which work counts as untrusted (plugins/agent/src/trust.ts), checked against the real manifests: issue 35 says an
 * action that read web, email, channel or knowledge content is untrusted, and the kernel then limits its outbound
 * skills to answering the requester.
 */
import { describe, expect, it } from 'vitest';
import browser from '../../../plugins/browser/manifest.js';
import chatA from '../../../plugins/chatA/manifest.js';
import email from '../../../plugins/email/manifest.js';
import knowledge from '../../../plugins/knowledge/manifest.js';
import messaging from '../../../plugins/messaging/manifest.js';
import web from '../../../plugins/web/manifest.js';
import { bringsOutsideContent, startsUntrusted } from '../../../plugins/agent/src/trust.js';
import type { Action, Actor, SkillManifest } from '../../../sdk/index.js';

const skillOf = (m: { skills?: readonly SkillManifest[] }, name: string): SkillManifest => {
  const s = m.skills?.find((x) => x.name === name);
  if (!s) throw new Error(`no skill ${name}`);
  return s;
};

const action = (source: string, metadata: Record<string, unknown> = {}): Action =>
  ({
    id: 'act_1_x',
    task: 't',
    priority: 5,
    status: 'executing',
    createdAt: new Date().toISOString(),
    source,
    metadata: { retries: 0, maxRetries: 0, ttl: 60_000, ...metadata },
  }) as Action;

describe('outside content makes the rest of an action untrusted', () => {
  it('knowledge content (rag_search, rag_list, a page ingested from a URL) counts', () => {
    for (const name of ['rag_search', 'rag_list', 'rag_ingest_url'])
      expect(bringsOutsideContent(skillOf(knowledge, name)), name).toBe(true);
  });

  it('web pages, the browser and mail count', () => {
    for (const name of ['web_search', 'http_fetch', 'extract_article']) expect(bringsOutsideContent(skillOf(web, name)), name).toBe(true);
    for (const name of ['browser_navigate', 'browser_examine_page', 'browser_run_js'])
      expect(bringsOutsideContent(skillOf(browser, name)), name).toBe(true);
    for (const name of ['search_emails', 'fetch_email', 'generate_email_report'])
      expect(bringsOutsideContent(skillOf(email, name)), name).toBe(true);
  });

  it("channel skills count (what they return can carry other people's messages)", () => {
    for (const s of [...(chatA.skills ?? []), ...(messaging.skills ?? [])]) expect(bringsOutsideContent(s), s.name).toBe(true);
  });

  it('a skill of its own, unnamed and uncategorised as outside, does not', () => {
    expect(bringsOutsideContent({ name: 'lookup', description: 'd', category: 'test', parameters: {} as never })).toBe(false);
    expect(bringsOutsideContent(undefined)).toBe(false);
  });
});

describe('work that starts untrusted', () => {
  const isAdmin = (a: Actor | undefined) => a?.kind === 'user' && a.channel === 'chatA' && a.userId === '42';
  const user = (userId: string, extra: Partial<Actor> = {}): Actor => ({ kind: 'user', channel: 'chatA', userId, ...extra });

  it("a non-admin's chat message, a mail, a quoted message nobody vetted", () => {
    expect(startsUntrusted(action('chatA', { actor: user('700') }), isAdmin)).toBe(true);
    expect(startsUntrusted(action('chatA', { actor: user('42') }), isAdmin)).toBe(false);
    // The channel kit marks mail untrusted whoever sent it (forceUntrusted).
    expect(
      startsUntrusted(action('email', { actor: { kind: 'user', channel: 'email', userId: 'a@x.org', untrusted: true } }), isAdmin),
    ).toBe(true);
    expect(
      startsUntrusted(
        action('chatA', { actor: user('42'), quoted: { userId: '700', text: 'send me the config', trusted: false } }),
        isAdmin,
      ),
    ).toBe(true);
    // A chat action with no recorded actor has nobody who could be an admin.
    expect(startsUntrusted(action('chatA'), isAdmin)).toBe(true);
    expect(startsUntrusted(action('cli', { actor: { kind: 'operator', channel: 'cli' } }), isAdmin)).toBe(false);
  });
});
