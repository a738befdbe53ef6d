/**
 * Contact profiles (chatB): one JSON file per contact, `$KEEL_HOME/contacts/<jid>.json` (characters outside
 * [A-Za-z0-9@._+-] in the JID become `_`). Fields:
 *
 * | field | meaning |
 * |---|---|
 * | jid | the contact's chatB JID (actor.userId) |
 * | displayName | the name the contact shows (message metadata `pushName` / `displayName`), when known |
 * | firstSeen, lastSeen | ISO UTC times of the first and latest message |
 * | messageCount | messages received from the contact |
 * | relationship | free text an admin or the contact's own facts set (e.g. "colleague"); empty by default |
 * | language | language hint from message metadata, when known |
 * | facts | up to 50 short facts (newest last), each {text, at}; `update_user_profile` from a non-admin contact adds here |
 * | lastTopics | the last 5 message texts, cut at 120 characters each |
 *
 * The profile goes into the agent's context when that contact writes (actor.channel 'chatB', userId = JID).
 * Profiles of people on other channels are kept the same way, keyed `<channel>_<userId>`, so a non-admin's
 * facts never reach the owner's USER.md.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withFileLockSync } from '../../../sdk/file-lock.js';
import { writeFileAtomicSync } from './atomic.js';

export interface ContactProfile {
  jid: string;
  channel: string;
  displayName?: string;
  firstSeen: string;
  lastSeen: string;
  messageCount: number;
  relationship: string;
  language?: string;
  facts: Array<{ text: string; at: string }>;
  lastTopics: string[];
}

export const MAX_FACTS = 50;

export function contactsDir(home: string): string {
  return join(home, 'contacts');
}

export function contactFile(home: string, channel: string, userId: string): string {
  const safe = userId.replace(/[^A-Za-z0-9@._+-]/g, '_').slice(0, 200);
  return join(contactsDir(home), channel === 'chatB' ? `${safe}.json` : `${channel}_${safe}.json`);
}

export function readContact(home: string, channel: string, userId: string): ContactProfile | undefined {
  const f = contactFile(home, channel, userId);
  if (!existsSync(f)) return undefined;
  try {
    return JSON.parse(readFileSync(f, 'utf8')) as ContactProfile;
  } catch {
    return undefined;
  }
}

let chain: Promise<unknown> = Promise.resolve();

export function updateContact(home: string, channel: string, userId: string, change: (p: ContactProfile) => void): Promise<ContactProfile> {
  // Under the profile's lock file too: a separate gateway (the skill console, a channel it owns) writes profiles.
  const next = chain.then(() => {
    mkdirSync(contactsDir(home), { recursive: true });
    const file = contactFile(home, channel, userId);
    return withFileLockSync(`${file}.lock`, () => changeContact(home, channel, userId, change), { what: `contact profile ${file}` });
  });
  chain = next.catch(() => undefined);
  return next;
}

function changeContact(home: string, channel: string, userId: string, change: (p: ContactProfile) => void): ContactProfile {
  const now = new Date().toISOString();
  const p: ContactProfile = readContact(home, channel, userId) ?? {
    jid: userId,
    channel,
    firstSeen: now,
    lastSeen: now,
    messageCount: 0,
    relationship: '',
    facts: [],
    lastTopics: [],
  };
  change(p);
  if (p.facts.length > MAX_FACTS) p.facts = p.facts.slice(-MAX_FACTS);
  if (p.lastTopics.length > 5) p.lastTopics = p.lastTopics.slice(-5);
  writeFileAtomicSync(contactFile(home, channel, userId), `${JSON.stringify(p, null, 2)}\n`);
  return p;
}

export function describeContact(p: ContactProfile): string {
  const lines = [
    `Contact ${p.displayName ? `${p.displayName} ` : ''}(${p.channel} ${p.jid}): ${p.messageCount} messages since ${p.firstSeen.slice(0, 10)}, last ${p.lastSeen}.`,
  ];
  if (p.relationship) lines.push(`Relationship: ${p.relationship}`);
  if (p.language) lines.push(`Language: ${p.language}`);
  for (const f of p.facts.slice(-20)) lines.push(`- ${f.text}`);
  if (p.lastTopics.length) lines.push(`Recent messages: ${p.lastTopics.map((t) => JSON.stringify(t)).join('; ')}`);
  return lines.join('\n');
}
