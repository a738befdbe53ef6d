/**
 * Which channel a messaging skill sends on (SPEC "Channel detection for send_file"), and the clear error when that
 * channel is not running or not configured.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { ChannelCapability, PluginContext } from '../../../sdk/index.js';

const coded = errorsFor('messaging');

/** SPEC order: the explicit parameter, then the source of the current action, then the form of the id (shared with the kernel's policy). */
export { detectChannel } from '../../../sdk/outbound.js';

/** What to set to turn a channel on, for the error message. */
const SETUP: Record<string, string> = {
  chatA: 'chatAToken (environment CHATA_TOKEN)',
  chatB: 'chatBEnabled',
  chatC: 'chatCToken (environment CHATC_TOKEN)',
  chatD: 'chatDBotToken and chatDAppToken (environment CHATD_BOT_TOKEN, CHATD_APP_TOKEN)',
  email: 'emailEnabled and the SMTP settings',
  'gateway-chat': 'gatewayAutoStart (the gateway chat runs on the gateway)',
};

/** The running channel, or an error naming what to configure. */
export function channelFor(ctx: PluginContext, name: string): ChannelCapability {
  const running = ctx.capabilities('channel:');
  const found = running.find((c) => c.name === `channel:${name}`)?.impl;
  if (!found) {
    const names = running.map((c) => c.name.slice('channel:'.length));
    throw coded(
      'KEEL_E_CHANNEL_NOT_CONNECTED',
      `Channel "${name}" is not running${SETUP[name] ? `; set ${SETUP[name]}` : ''}. Running channels: ${names.join(', ') || 'none'}.`,
    );
  }
  if (found.status().enabled === false)
    throw coded('KEEL_E_CHANNEL_NOT_CONNECTED', `Channel "${name}" is not configured${SETUP[name] ? `: set ${SETUP[name]}` : ''}.`);
  return found;
}
