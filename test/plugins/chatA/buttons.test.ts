/**
 * chatA's button routes (which action sent which keyboard, in the channel store) and the routing of one press.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ButtonRoutes, routePress } from '../../../plugins/chatA/src/buttons.js';
import { ChannelStore } from '../../../sdk/channel-kit/index.js';
import type { AgentInput, InboundMessage } from '../../../sdk/index.js';
import { rm, tmp } from '../../helpers.js';

const open: Array<{ store: ChannelStore; dir: string }> = [];
afterEach(() => {
  for (const o of open.splice(0)) {
    o.store.close();
    rm(o.dir);
  }
});
function routes() {
  const dir = tmp('keel-btn-');
  const store = ChannelStore.open(dir, 'chatA');
  open.push({ store, dir });
  return { store, routes: new ButtonRoutes(store) };
}

const press: InboundMessage = {
  channel: 'chatA',
  messageId: 'cb:q1',
  chatId: '42',
  userId: '5',
  text: '[button pressed] yes',
  mentioned: true,
  replyTo: { messageId: '77', callbackData: 'yes' },
};
const log = { warn: () => {}, info: () => {}, debug: () => {}, error: () => {} } as never;

function ctxWith(o: { running?: boolean; admin?: boolean | 'throws' }) {
  const offered: Array<{ id: string; input: AgentInput }> = [];
  const caps: Record<string, unknown> = {
    'agent:inbox': {
      running: () => o.running === true,
      offer: (id: string, input: AgentInput) => {
        if (!o.running) return false;
        offered.push({ id, input });
        return true;
      },
    },
    'kernel:policy': {
      isAdmin: () => {
        if (o.admin === 'throws') throw new Error('policy broken');
        return o.admin === true;
      },
    },
  };
  return { ctx: { use: ((n: string) => caps[n]) as never, log }, offered };
}

describe('chatA button routes', () => {
  it('remembers the action of each message with buttons, durably, and prunes old links', () => {
    const { store, routes: r } = routes();
    r.remember('42', ['77', '78'], 'act_a', 1_000);
    r.remember('42', ['90'], 'act_b', 50_000);
    expect(r.actionOf('42', '77')).toBe('act_a');
    expect(r.actionOf('42', '78')).toBe('act_a');
    expect(r.actionOf('43', '77')).toBeUndefined();
    expect(new ButtonRoutes(store).actionOf('42', '90')).toBe('act_b');
    store.setValue('btn:42:91', 'not json');
    r.prune(10_000, 55_000);
    expect(r.actionOf('42', '77')).toBeUndefined();
    expect(r.actionOf('42', '90')).toBe('act_b');
    expect(store.values('btn:').map((v) => v.key)).toEqual(['btn:42:90']);
    // Other values of the store are not touched.
    store.setValue('offset', '12');
    r.prune(0, 1e12);
    expect(store.getValue('offset')).toBe('12');
  });

  it('a press on a running action is handed to it; the presser not being an admin (or no policy answer) makes it untrusted', async () => {
    const { routes: r } = routes();
    r.remember('42', ['77'], 'act_a');
    for (const admin of [false, 'throws', true] as const) {
      const { ctx, offered } = ctxWith({ running: true, admin });
      const later: InboundMessage[] = [];
      const out = routePress(ctx, r, press, '77', async (m) => void later.push(m));
      expect(out).toEqual({ handedTo: 'act_a' });
      expect(offered).toHaveLength(1);
      expect(offered[0]!.input).toMatchObject({
        text: '[button pressed] yes (by user 5 on message 77)',
        untrusted: admin !== true,
        from: 'chatA:5',
      });
      // Unread when the action ends: it becomes the linked new message.
      offered[0]!.input.onUnread!();
      await Promise.resolve();
      expect(later).toHaveLength(1);
      expect(later[0]!.replyTo).toMatchObject({ inResponseTo: 'act_a', callbackData: 'yes' });
    }
  });

  it('a press on a finished action becomes a linked message; on an unknown keyboard it stays as it is', () => {
    const { routes: r } = routes();
    r.remember('42', ['77'], 'act_a');
    const { ctx, offered } = ctxWith({ running: false });
    const out = routePress(ctx, r, press, '77', async () => {});
    expect(offered).toHaveLength(0);
    expect(out).toEqual({
      inbound: {
        ...press,
        text: '[button pressed] yes\n[on a message sent by action act_a, which is no longer running]',
        replyTo: { messageId: '77', callbackData: 'yes', inResponseTo: 'act_a' },
      },
    });
    expect(routePress(ctx, r, press, '999', async () => {})).toEqual({ inbound: press });
    expect(routePress(ctx, r, press, undefined, async () => {})).toEqual({ inbound: press });
  });
});
