/**
 * Answering slash commands within Discord's 3-second window: each interaction is acknowledged with a deferred
 * response (callback type 5, "keel-test is thinking…") as soon as it is recorded, before it waits behind anything
 * else of its channel in the ingress; the answer then replaces that response (`PATCH
 * /webhooks/:application/:token/messages/@original`, allowed for 15 minutes). Both steps may run again after a
 * crash: a second acknowledgement is refused by Discord (40060) and counts as done, an edit just edits again.
 */
import { DiscordAPIError, type REST } from 'discord.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';
import type { DcInteraction } from './inbound.js';

/** Discord's "Interaction has already been acknowledged". */
const ALREADY_ACKNOWLEDGED = 40060;
const DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE = 5;
const DEFERRED_UPDATE_MESSAGE = 6;

export class SlashAnswers {
  private readonly acks = new Map<string, Promise<boolean>>();

  constructor(
    private readonly rest: REST,
    private readonly log: Logger,
  ) {}

  /** Acknowledges a newly recorded interaction at once (not awaited: the answer waits for it). */
  defer(i: DcInteraction): void {
    const p = this.ack(i);
    this.acks.set(i.id, p);
  }

  /**
   * Acknowledges a tap on a button of one of the bot's messages at once, without a visible answer (callback type 6,
   * DEFERRED_UPDATE_MESSAGE): the message is edited later through `@original` (approval-tap.ts).
   */
  deferUpdate(i: DcInteraction): void {
    this.acks.set(i.id, this.ack(i, DEFERRED_UPDATE_MESSAGE));
  }

  /** Whether the interaction is acknowledged (waiting for the acknowledgement `defer`/`deferUpdate` started). */
  async acknowledged(i: DcInteraction, type = DEFERRED_UPDATE_MESSAGE): Promise<boolean> {
    const acked = await (this.acks.get(i.id) ?? this.ack(i, type));
    this.acks.delete(i.id);
    return acked;
  }

  /**
   * Replaces the deferred response with `content`. Returns false when the user cannot get an answer any more (the
   * acknowledgement failed, or the 15-minute token expired); throws on what a retry may fix (5xx, 429, network).
   */
  async answer(i: DcInteraction, applicationId: string | undefined, content: string, command: string): Promise<boolean> {
    const acked = await (this.acks.get(i.id) ?? this.ack(i));
    this.acks.delete(i.id);
    if (!acked) return false;
    const app = i.application_id ?? applicationId;
    if (!app) {
      this.log.warn(`Slash command /${command}: no application id to answer with.`);
      return false;
    }
    try {
      await this.rest.patch(`/webhooks/${app}/${i.token}/messages/@original`, {
        body: { content, allowed_mentions: { parse: [] } },
        auth: false,
      });
      return true;
    } catch (e) {
      if (e instanceof DiscordAPIError && e.status >= 400 && e.status < 500 && e.status !== 429) {
        this.log.warn(`Slash command /${command}: the answer could not replace the deferred response: ${errorMessage(e)}`);
        return false;
      }
      throw e;
    }
  }

  private async ack(i: DcInteraction, type = DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE): Promise<boolean> {
    try {
      await this.rest.post(`/interactions/${i.id}/${i.token}/callback`, {
        body: { type },
        auth: false,
      });
      return true;
    } catch (e) {
      // Acknowledged before a crash: the answer is still owed, and the edit delivers it.
      if (e instanceof DiscordAPIError && e.code === ALREADY_ACKNOWLEDGED) return true;
      // Unknown interaction: more than 3 s passed (Keel was down) and Discord told the user it did not respond.
      this.log.warn(`Interaction ${i.id} could not be acknowledged: ${errorMessage(e)}`);
      return false;
    }
  }
}
