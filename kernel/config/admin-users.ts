/**
 * `adminUsers` is an open record (channel name -> user ids). Each id must have the form its channel declares:
 * the `channel` field of the channel plugin's manifest, or SPEC's table (sdk/channel.ts) for the built-in names
 * whose plugin is not installed. A bad id makes the whole value invalid, so a typo can never half-grant admin.
 */
import { SPEC_CHANNELS } from '../../sdk/channel.js';

export interface ChannelIdForm {
  name: string;
  userIdPattern: string;
  userIdExample: string;
}

const compiled = new Map<string, RegExp | undefined>();

function regexOf(pattern: string): RegExp | undefined {
  if (!compiled.has(pattern)) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(pattern, 'u');
    } catch {
      re = undefined;
    }
    compiled.set(pattern, re);
  }
  return compiled.get(pattern);
}

/** Declared forms win over SPEC's table; SPEC's names are known even before their plugins exist. */
export function channelForms(declared: readonly ChannelIdForm[]): Map<string, ChannelIdForm> {
  const forms = new Map<string, ChannelIdForm>(Object.values(SPEC_CHANNELS).map((c) => [c.name, c]));
  for (const d of declared) forms.set(d.name, d);
  return forms;
}

/**
 * Why `value` is not a usable adminUsers (the schema already holds: an object of string lists), or undefined.
 * With `strict` an undeclared channel name is a problem too.
 */
export function adminUsersProblem(value: unknown, declared: readonly ChannelIdForm[], strict: boolean): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const forms = channelForms(declared);
  for (const [channel, ids] of Object.entries(value as Record<string, unknown>)) {
    const form = forms.get(channel);
    if (!form) {
      if (!strict) continue;
      return `unknown channel "${channel}" in adminUsers; known channels: ${[...forms.keys()].join(', ')} (a channel plugin declares its name in its manifest's channel field)`;
    }
    const re = regexOf(form.userIdPattern);
    if (!Array.isArray(ids)) continue;
    for (const id of ids) {
      if (typeof id !== 'string') continue;
      if (!re?.test(id.trim())) {
        return `adminUsers.${channel}: "${id}" is not a ${channel} user id (expected the form ${form.userIdPattern}, e.g. "${form.userIdExample}")`;
      }
    }
  }
  return undefined;
}
