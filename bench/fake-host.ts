/**
 * Runs one loopback platform fake in a process of its own for the outbound benches (bench/outbound.ts): prints
 * one JSON line with what a client needs (URL, token), forgets what it recorded every second (a bench sends
 * thousands of messages), and exits when its stdin closes.
 *
 * `fake-host.ts telegram` · `fake-host.ts slack` · `fake-host.ts discord <channel id>...` (channels it knows) ·
 * `fake-host.ts whatsapp <session dir> <phone>` (links a device into the directory first) ·
 * `fake-host.ts minimal <body> <content type>` (any request answered 200 with that body: the floor a fake is
 * compared with).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeDiscord } from '../test/fakes/discord-server.js';
import { startFakeSlack } from '../test/fakes/slack-server.js';
import { startFakeTelegram } from '../test/fakes/telegram-server.js';
import { startWhatsAppFake } from '../test/fakes/whatsapp-server.js';

const [kind, ...args] = process.argv.slice(2);
let info: Record<string, string>;
let forget: () => void;
let close: () => Promise<void>;
if (kind === 'telegram') {
  const tg = await startFakeTelegram();
  info = { apiRoot: tg.apiRoot, token: tg.token };
  forget = () => {
    tg.calls.length = 0;
    tg.sent.length = 0;
  };
  close = () => tg.close();
} else if (kind === 'slack') {
  const sl = await startFakeSlack();
  info = { apiUrl: sl.apiUrl, botToken: sl.botToken };
  forget = () => {
    sl.calls.length = 0;
    sl.posted.length = 0;
  };
  close = () => sl.close();
} else if (kind === 'discord') {
  const dc = await startFakeDiscord();
  // The fake knows a channel once something was said in it.
  for (const id of args) dc.pushMessage('hello', { channelId: id });
  info = { apiUrl: dc.apiUrl, token: dc.token };
  forget = () => {
    dc.calls.length = 0;
    dc.sent.length = 0;
  };
  close = () => dc.close();
} else if (kind === 'whatsapp') {
  // args: the session directory to link (as `linkDevice` writes it) and the account's phone number.
  const wa = await startWhatsAppFake();
  await wa.linkDevice(args[0]!, args[1]);
  info = { url: wa.url };
  forget = () => undefined;
  close = () => wa.close();
} else if (kind === 'minimal') {
  const [body = '{}', type = 'application/json'] = args;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  info = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  forget = () => undefined;
  close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
} else {
  console.error('usage: fake-host.ts telegram|slack|discord [channel ids] | minimal <body> <content type>');
  process.exit(2);
}
setInterval(forget, 1000).unref();
process.stdout.write(`${JSON.stringify(info)}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void close().finally(() => process.exit(0));
});
