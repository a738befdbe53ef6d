/**
 * chatA's button routes (which action sent which keyboard, in the channel store) and the routing of one press.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ButtonRoutes, routePress } from '../../../plugins/chatA/src/buttons.js';
import { ChannelStore, HandedInputs } from '../../../sdk/channel-kit/index.js';
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
  const later: InboundMessage[] = [];
  let refuse = false;
  const make = () =>
    new HandedInputs(store, log, async (m) => {
      if (refuse) throw new Error('the queue is closed');
      later.push(m);
    });
  return { store, routes: new ButtonRoutes(store), handed: make(), later, make, refuse: (v: boolean) => (refuse = v) };
}

/** Lets the promise chains of `later` settle. */
const settle = () => new Promise((r) => setImmediate(r));

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
    for (const admin of [false, 'throws', true] as const) {
      const { routes: r, handed, later } = routes();
      r.remember('42', ['77'], 'act_a');
      const { ctx, offered } = ctxWith({ running: true, admin });
      const out = routePress(ctx, r, handed, press, '77');
      expect(out).toEqual({ handedTo: 'act_a' });
      expect(offered).toHaveLength(1);
      expect(offered[0]!.input).toMatchObject({
        text: '[button pressed] yes (by user 5 on message 77)',
        untrusted: admin !== true,
        from: 'chatA:5',
      });
      // Unread when the action ends: it becomes the linked new message.
      offered[0]!.input.onUnread!();
      await settle();
      expect(later).toHaveLength(1);
      expect(later[0]!.replyTo).toMatchObject({ inResponseTo: 'act_a', callbackData: 'yes' });
    }
  });

  it('a press on a finished action becomes a linked message; on an unknown keyboard it stays as it is', () => {
    const { routes: r, handed, store } = routes();
    r.remember('42', ['77'], 'act_a');
    const { ctx, offered } = ctxWith({ running: false });
    const out = routePress(ctx, r, handed, press, '77');
    expect(offered).toHaveLength(0);
    expect(out).toEqual({
      inbound: {
        ...press,
        text: '[button pressed] yes\n[on a message sent by action act_a, which is no longer running]',
        replyTo: { messageId: '77', callbackData: 'yes', inResponseTo: 'act_a' },
      },
    });
    expect(routePress(ctx, r, handed, press, '999')).toEqual({ inbound: press });
    expect(routePress(ctx, r, handed, press, undefined)).toEqual({ inbound: press });
    // Nothing handed, nothing on record.
    expect(store.values('handed:')).toEqual([]);
  });
});

describe('chatA presses handed to a running action (durable until it settles for good)', () => {
  const linked = (action: string) => ({
    ...press,
    text: `[button pressed] yes\n[on a message sent by action ${action}, which is no longer running]`,
    replyTo: { messageId: '77', callbackData: 'yes', inResponseTo: action },
  });

  function handOff() {
    const t = routes();
    t.routes.remember('42', ['77'], 'act_a');
    const { ctx, offered } = ctxWith({ running: true, admin: true });
    expect(routePress(ctx, t.routes, t.handed, press, '77')).toEqual({ handedTo: 'act_a' });
    return { ...t, offered };
  }

  it('is on record from the hand-off; read by an action that completes (or fails for good), it is done with', async () => {
    for (const status of ['completed', 'failed', 'removed']) {
      const { store, handed, later } = handOff();
      expect(store.values('handed:')).toEqual([{ key: 'handed:act_a:cb:q1', value: JSON.stringify(linked('act_a')) }]);
      handed.settled('act_b', status); // another action: nothing changes
      expect(store.values('handed:')).toHaveLength(1);
      handed.settled('act_a', status);
      await settle();
      expect(store.values('handed:')).toEqual([]);
      expect(later).toEqual([]);
    }
  });

  it('unread when the action ends: it becomes the linked new message once, then is off the record', async () => {
    const { store, handed, later, offered } = handOff();
    offered[0]!.input.onUnread!();
    handed.settled('act_a', 'completed'); // the settle after the loop's end does not clear it before it is queued
    await settle();
    expect(later).toEqual([linked('act_a')]);
    expect(store.values('handed:')).toEqual([]);
  });

  it('read by an action that will be retried: the next run will not see it, so it becomes the new message', async () => {
    const { store, handed, later } = handOff();
    handed.settled('act_a', 'retry');
    await settle();
    expect(later).toEqual([linked('act_a')]);
    expect(store.values('handed:')).toEqual([]);
  });

  it('a store that refuses the record: the press is still handed (once), and the loss risk is reported', () => {
    const dir = tmp('keel-btn-');
    const store = ChannelStore.open(dir, 'chatA');
    open.push({ store, dir });
    const r = new ButtonRoutes(store);
    r.remember('42', ['77'], 'act_a');
    const warned: string[] = [];
    const handed = new HandedInputs(store, { warn: (m: string) => void warned.push(m) }, async () => {});
    const { ctx, offered } = ctxWith({ running: true, admin: true });
    store.db.exec('CREATE TRIGGER no_kv BEFORE INSERT ON kv BEGIN SELECT RAISE(ABORT, "disk full"); END;');
    expect(routePress(ctx, r, handed, press, '77')).toEqual({ handedTo: 'act_a' });
    expect(offered).toHaveLength(1);
    expect(warned).toEqual([expect.stringMatching(/^Input handed to action act_a could not be put on record \(.*disk full.*\)/)]);
    expect(store.values('handed:')).toEqual([]);
  });

  it('drain() waits for the new messages on their way, so the store closes with them off the record', async () => {
    const { store, offered } = handOff();
    let queued: () => void = () => {};
    const slow = new HandedInputs(store, log, () => new Promise<void>((r) => (queued = r)));
    expect(slow.recover()).toBe(1);
    const drained = slow.drain();
    await settle();
    expect(store.values('handed:')).toHaveLength(1);
    queued();
    await drained;
    expect(store.values('handed:')).toEqual([]);
    expect(offered).toHaveLength(1);
    await slow.drain(); // nothing on its way: returns at once
  });

  it('left by a process that died (or stopped) before the action settled: the next start makes the new message', async () => {
    const { store, later, make, refuse } = handOff();
    // The next start, while the queue refuses: kept for the start after.
    refuse(true);
    expect(make().recover()).toBe(1);
    await settle();
    expect(later).toEqual([]);
    expect(store.values('handed:')).toHaveLength(1);
    refuse(false);
    expect(make().recover()).toBe(1);
    await settle();
    expect(later).toEqual([linked('act_a')]);
    expect(store.values('handed:')).toEqual([]);
    expect(make().recover()).toBe(0);
  });
});
