/**
 * Slack user names for the agent: Slack's events name people by member id only (`U0123ABCD`, `<@U0123ABCD>` in
 * the text), which tells the agent nothing. chatD looks each one up with `users.info` (scope `users:read`, in SPEC's
 * list) for the messages that become actions, and keeps the answers an hour (5,000 people). The name is what Slack
 * shows: the profile's display name, else the real name, else the handle.
 *
 * A lookup never costs a message: it waits at most 3 s, and a failure leaves the id as it was. Without `users:read`
 * one info line says so and chatD stops asking.
 */
import type { WebClient } from '@slack/web-api';
import { TtlCache } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';
import { slackErrorCode } from './slack.js';

const KEEP_MS = 60 * 60_000;
const KEEP_MAX = 5000;
const WAIT_MS = 3000;
/** People looked up for one message at most (the sender, its quote's author, the first mentions). */
const PER_MESSAGE = 12;

interface SlackUser {
  name?: string;
  real_name?: string;
  profile?: { display_name?: string; real_name?: string };
}

/** The name Slack shows for a user. */
export function shownName(u: SlackUser): string | undefined {
  const pick = [u.profile?.display_name, u.profile?.real_name, u.real_name, u.name].find((x) => typeof x === 'string' && x.trim());
  return pick?.trim();
}

/**
 * `p`'s value, or undefined once `ms` passed without one (`p` goes on; its value is not waited for): a lookup that
 * adds to a message must not hold the chat's next messages behind a platform that does not answer.
 */
export async function within<T>(ms: number, p: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => {
    timer = setTimeout(() => r(undefined), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The member ids a Slack text mentions (`<@U…>`, `<@U…|name>`), in order, once each. */
export function mentionedIds(raw: string): string[] {
  return [...new Set([...raw.matchAll(/<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/g)].map((m) => m[1]!))];
}

export class SlackNames {
  /** id → name (undefined: Slack knows no such user). */
  private readonly kept = new TtlCache<string, string | undefined>(KEEP_MS, KEEP_MAX);
  private readonly asking = new Map<string, Promise<string | undefined>>();
  private off = false;

  constructor(private readonly o: { client: Pick<WebClient, 'users'>; log: Logger }) {}

  /** The names of `ids` that could be found within 3 s (the first 12 ids), as id → name. */
  async of(ids: Iterable<string>): Promise<Map<string, string>> {
    const want = [...new Set(ids)].filter((id) => /^[UW][A-Z0-9]+$/.test(id)).slice(0, PER_MESSAGE);
    const out = new Map<string, string>();
    if (this.off || !want.length) return out;
    await within(
      WAIT_MS,
      Promise.all(
        want.map(async (id) => {
          const name = await this.one(id);
          if (name) out.set(id, name);
        }),
      ),
    );
    return new Map(out);
  }

  private one(id: string): Promise<string | undefined> {
    const hit = this.kept.get(id);
    if (hit) return Promise.resolve(hit.value);
    const running = this.asking.get(id);
    if (running) return running;
    const p = this.ask(id).finally(() => this.asking.delete(id));
    this.asking.set(id, p);
    return p;
  }

  private async ask(id: string): Promise<string | undefined> {
    try {
      const r = await this.o.client.users.info({ user: id });
      const name = shownName((r.user ?? {}) as SlackUser);
      this.kept.set(id, name);
      return name;
    } catch (e) {
      const code = slackErrorCode(e);
      if (code === 'user_not_found') this.kept.set(id, undefined);
      else if (code === 'missing_scope' && !this.off) {
        this.off = true;
        this.o.log.info(
          'chatD: the bot token lacks users:read, so the agent sees Slack member ids instead of names. Add the scope and reinstall the app to fix it.',
        );
      } else this.o.log.debug(`chatD: the name of ${id} could not be read (${errorMessage(e)}).`);
      return undefined;
    }
  }
}
