/**
 * The chatB ack gate on its own: what the connection writes and what the Signal state writes wait for the record of
 * each message that arrived before them, in order, and are dropped together when the connection goes.
 */
import { EventEmitter } from 'node:events';
import type { SignalDataSet, SignalKeyStore, WASocket } from '@whiskeysockets/baileys';
import { describe, expect, it } from 'vitest';
import { AckGate } from '../../../plugins/chatB/src/ack-gate.js';

function fakeSocket() {
  const log: string[] = [];
  const ws = Object.assign(new EventEmitter(), {
    socket: { send: (data: unknown, cb?: () => void) => (log.push(`frame ${String(data)}`), cb?.()) },
  });
  const sock = { ws } as unknown as WASocket;
  const arrive = (id: string) => ws.emit('frame', { tag: 'message', attrs: { id } });
  const write = (data: string) => new Promise<void>((r) => ws.socket.send(data, () => r()));
  return { sock, log, arrive, write };
}

function memoryStore(log: string[]): SignalKeyStore & { data: Record<string, Record<string, unknown>> } {
  const data: Record<string, Record<string, unknown>> = {};
  return {
    data,
    get: (type, ids) => Object.fromEntries(ids.filter((i) => data[type]?.[i] !== undefined).map((i) => [i, data[type]![i]])) as never,
    set: (d: SignalDataSet) => {
      for (const [type, values] of Object.entries(d))
        for (const [id, v] of Object.entries(values ?? {})) {
          log.push(`write ${type}.${id}=${v === null ? 'null' : JSON.stringify(v)}`);
          data[type] ??= {};
          if (v === null) delete data[type]![id];
          else data[type]![id] = v;
        }
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('chatB ack gate', () => {
  it('holds frames and state writes from a message’s arrival to its record; the state is written before the frames', async () => {
    const s = fakeSocket();
    const gate = new AckGate();
    const keys = gate.wrapKeys(memoryStore(s.log));
    gate.attach(s.sock);
    await s.write('before');
    s.arrive('m1');
    await keys.set({ 'pre-key': { '1': null } } as never);
    await keys.set({ session: { a: 'v2' } } as never);
    // Baileys is told the receipt went out (it waits for that before handing the message on); it did not.
    await s.write('receipt m1');
    expect(s.log).toEqual(['frame before']);
    // The not-yet-written state is what baileys reads meanwhile.
    expect(await keys.get('session', ['a'])).toEqual({ a: 'v2' });
    gate.release('m1');
    await tick();
    expect(s.log).toEqual(['frame before', 'write pre-key.1=null', 'write session.a="v2"', 'frame receipt m1']);
  });

  it('what came before the earliest message still being recorded goes; what came after waits for it', async () => {
    const s = fakeSocket();
    const gate = new AckGate();
    const keys = gate.wrapKeys(memoryStore(s.log));
    gate.attach(s.sock);
    s.arrive('m1');
    await keys.set({ session: { a: '1' } } as never);
    await s.write('receipt m1');
    s.arrive('m2');
    await keys.set({ session: { b: '2' } } as never);
    await s.write('receipt m2');
    gate.release('m1');
    await tick();
    expect(s.log).toEqual(['write session.a="1"', 'frame receipt m1']);
    gate.release('m2');
    await tick();
    expect(s.log).toEqual(['write session.a="1"', 'frame receipt m1', 'write session.b="2"', 'frame receipt m2']);
  });

  it('a connection that goes drops what it held, frames and state: nothing of it is written or sent later', async () => {
    const s = fakeSocket();
    const gate = new AckGate();
    const store = memoryStore(s.log);
    const keys = gate.wrapKeys(store);
    gate.attach(s.sock);
    store.data.session = { a: 'old' };
    s.arrive('m1');
    await keys.set({ session: { a: 'new' } } as never);
    await s.write('receipt m1');
    gate.abandon();
    expect(await keys.get('session', ['a'])).toEqual({ a: 'old' });
    gate.release('m1');
    await tick();
    expect(s.log).toEqual([]);
    // The next connection's frames are its own.
    const next = fakeSocket();
    gate.attach(next.sock);
    await next.write('hello');
    expect(next.log).toEqual(['frame hello']);
  });

  it('a message never handed on is let go after maxHoldMs', async () => {
    const s = fakeSocket();
    const timedOut: string[] = [];
    const gate = new AckGate({ maxHoldMs: 30, onTimeout: (id) => timedOut.push(id) });
    gate.wrapKeys(memoryStore(s.log));
    gate.attach(s.sock);
    s.arrive('undecryptable');
    await s.write('nack');
    expect(s.log).toEqual([]);
    await new Promise((r) => setTimeout(r, 80));
    expect(timedOut).toEqual(['undecryptable']);
    expect(s.log).toEqual(['frame nack']);
  });

  it('a read while the held state is being written sees the newest value, not the store’s old one', async () => {
    const s = fakeSocket();
    const gate = new AckGate();
    const inner = memoryStore(s.log);
    inner.data.session = { a: 'old' };
    let finish: () => void = () => {};
    const slow: SignalKeyStore = {
      get: inner.get,
      set: (d) => new Promise<void>((r) => (finish = () => (inner.set(d), r()))),
    };
    const keys = gate.wrapKeys(slow);
    gate.attach(s.sock);
    s.arrive('m1');
    await keys.set({ session: { a: 'new' } } as never);
    gate.release('m1');
    await tick();
    // The drain is writing (the store has not finished): reads still get the new value.
    expect(inner.data.session).toEqual({ a: 'old' });
    expect(await keys.get('session', ['a'])).toEqual({ a: 'new' });
    finish();
    await tick();
    expect(inner.data.session).toEqual({ a: 'new' });
    expect(await keys.get('session', ['a'])).toEqual({ a: 'new' });
  });
});
