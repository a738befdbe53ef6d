/**
 * Issue 39.3: a channel failure reaches the client with a KEEL_E_* code and the name of the plugin whose error it
 * was, never as a generic error. The real gateway, messaging and chatA plugins run against a loopback Bot API that
 * refuses the upload; the client is a REST call to POST /api/skills/send_file/execute and a WebSocket executeSkill.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram-server.js';
import { startGateway, type Gw } from '../gateway/harness.js';
import { open } from '../gateway/ws-helpers.js';

let g: Gw;
let tg: FakeTelegram;
let file: string;

beforeAll(async () => {
  tg = await startFakeTelegram();
  g = await startGateway({
    fakeAgent: true,
    overrides: { chatAToken: tg.token, chatAApiRoot: tg.apiRoot, chatAPollTimeout: 1 },
    before: (home) => {
      mkdirSync(join(home, 'downloads'), { recursive: true });
      file = join(home, 'downloads', 'report.txt');
      writeFileSync(file, 'the weekly report');
    },
  });
});

afterAll(async () => {
  await g?.close();
  await tg?.close();
});

const BAD_CHAT = { code: 400, description: 'Bad Request: chat not found' };

describe('a channel failure at the client', () => {
  it('REST: send_file refused by Telegram answers with a KEEL_E_ code and the channel plugin', async () => {
    expect(g.kernel.host.status('chatA')?.state).toBe('loaded');
    tg.failNext('sendDocument', BAD_CHAT);
    const r = await g.req('/api/skills/send_file/execute', {
      method: 'POST',
      json: { parameters: { path: file, jid: '4242', channel: 'chatA' } },
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { success: boolean; result: string; code?: string; plugin?: string };
    expect(body.success).toBe(false);
    expect(body.result).toMatch(/chat not found/);
    // The Bot API's refusal is a library error inside chatA's send; the host codes it as a failed send.
    expect(body.code).toBe('KEEL_E_CHANNEL_SEND_FAILED');
    // The error is chatA's (the send failed there), not the messaging plugin's that called it.
    expect(body.plugin).toBe('chatA');
    expect(tg.callsOf('sendDocument').length).toBeGreaterThan(0);
  });

  it('REST: a channel that is not running is KEEL_E_CHANNEL_NOT_CONNECTED', async () => {
    const r = await g.req('/api/skills/send_file/execute', {
      method: 'POST',
      json: { parameters: { path: file, jid: '123456789012345678', channel: 'chatC' } },
    });
    const body = (await r.json()) as { success: boolean; code?: string; plugin?: string };
    expect(body).toMatchObject({ success: false, code: 'KEEL_E_CHANNEL_NOT_CONNECTED' });
    // messaging finds the channel stopped (chatC has no token) and says so before anything is sent.
    expect(body.plugin).toBe('messaging');
  });

  it('WebSocket: the executeSkill error reply carries the code and the plugin', async () => {
    tg.failNext('sendDocument', BAD_CHAT);
    const c = await open(`ws://127.0.0.1:${g.port}/`);
    try {
      const r = await c.request('executeSkill', { skill: 'send_file', parameters: { path: file, jid: '4242', channel: 'chatA' } });
      expect(r).toMatchObject({ action: 'executeSkill', ok: false, error: { plugin: 'chatA' } });
      expect(r.error.code).toBe('KEEL_E_CHANNEL_SEND_FAILED');
      expect(r.error.message).toMatch(/chat not found/);
    } finally {
      c.close();
    }
  });
});
