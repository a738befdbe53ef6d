/**
 * A real kernel with the agent, the chatB plugin and the scripted fake provider, linked as a device to the loopback
 * WhatsApp (test/fakes/whatsapp-server.ts) through the real baileys.
 */
import '../../fakes/whatsapp-trust.js';
import { startWhatsAppFake, type WhatsAppFake } from '../../fakes/whatsapp-server.js';
import type { Actor } from '../../../sdk/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { bootChannelKernel, type ChannelKernel } from '../channel-harness.js';

/** The account Keel is linked to. */
export const BOT = '4915100000001';
export const BOT_JID = `${BOT}@s.whatsapp.net`;
/** chatBOwnerJID. */
export const OWNER = '4917600000002';
export const OWNER_JID = `${OWNER}@s.whatsapp.net`;
/** In adminUsers.chatB. */
export const ADMIN = '4917600000003';
export const ADMIN_JID = `${ADMIN}@s.whatsapp.net`;
/** Anyone else. */
export const USER = '4917600000004';
export const USER_JID = `${USER}@s.whatsapp.net`;

export interface ChatBHarness extends ChannelKernel {
  wa: WhatsAppFake;
  session: string;
}

// libsignal prints its session changes on the console; chatB filters them in the process it runs in (the same here).

export async function bootChatB(
  o: { config?: Record<string, unknown>; runAgent?: boolean; plugins?: string[]; link?: boolean } = {},
): Promise<ChatBHarness> {
  const wa = await startWhatsAppFake();
  const session = tmp('keel-chatb-session-');
  if (o.link !== false) await wa.linkDevice(session, BOT);
  const h = await bootChannelKernel({
    channel: 'chatB',
    config: {
      chatBEnabled: true,
      chatBSessionPath: session,
      chatBWebSocketUrl: wa.url,
      chatBOwnerJID: OWNER_JID,
      adminUsers: { chatB: [ADMIN_JID] },
      ...o.config,
    },
    runAgent: o.runAgent,
    plugins: o.plugins,
    closeFake: async () => {
      await wa.close();
      rm(session);
    },
  });
  return Object.assign(h, { wa, session });
}

const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };

/** Runs a skill as the operator (outside any action). */
export const runSkill = (h: ChatBHarness, name: string, args: unknown) => h.kernel.execute(name, args, OPERATOR, {});

/** Resolves once chatB is connected. */
export const whenConnected = (h: ChatBHarness) => waitFor(() => h.channel().status().connected, 'connected', 10_000);
