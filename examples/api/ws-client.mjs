#!/usr/bin/env node
// A small Keel gateway WebSocket client (plain Node + the `ws` package; protocol in docs/websocket.md).
// It pushes the task given on the command line and prints the events of that action until it completes or
// fails for good.
//
//   node examples/api/ws-client.mjs "summarise my inbox" [priority]
//   KEEL_URL=ws://127.0.0.1:3100 KEEL_API_KEY=... node examples/api/ws-client.mjs "..."
//
// Exit code: 0 completed, 1 failed or removed, 2 bad usage or connection problem.
import WebSocket from 'ws';

const [task, priorityArg] = process.argv.slice(2);
if (!task) {
  console.error('usage: node examples/api/ws-client.mjs "<task>" [priority 1-10]');
  process.exit(2);
}
const url = new URL(process.env.KEEL_URL ?? 'ws://127.0.0.1:3100/');
if (process.env.KEEL_API_KEY) url.searchParams.set('apiKey', process.env.KEEL_API_KEY);

const ws = new WebSocket(url);
let actionId;
const early = []; // events that arrive before the reply names our action

ws.on('unexpected-response', (_req, res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => {
    console.error(`connection refused: HTTP ${res.statusCode} ${body}`);
    process.exit(2);
  });
});
ws.on('error', (e) => {
  console.error(`connection failed: ${e.message}`);
  process.exit(2);
});

ws.on('open', () => {
  const data = { task, ...(priorityArg ? { priority: Number(priorityArg) } : {}) };
  ws.send(JSON.stringify({ action: 'pushTask', id: 'push-1', data }));
});

ws.on('close', (code, reason) => {
  if (actionId) console.error(`connection closed (${code} ${reason}) before ${actionId} settled`);
  process.exit(2);
});

function show(m) {
  const d = m.data;
  switch (m.event) {
    case 'thinking':
      return console.log(`thinking: ${d.thought}`);
    case 'action':
      return console.log(`action: ${d.skill} ${JSON.stringify(d.parameters)}`);
    case 'observation':
      return console.log(`observation${d.skill ? ` (${d.skill})` : ''}: ${d.result}`);
    default:
      return console.log(`${m.event}: ${JSON.stringify(d)}`);
  }
}

function handleEvent(m) {
  const mine = m.data.actionId === undefined || m.data.actionId === actionId;
  if (!mine || m.event === 'log' || m.event.startsWith('plugin.') || m.event === 'config.changed') return;
  show(m);
  if (m.data.actionId !== actionId) return;
  if (m.event === 'action.completed') {
    ws.removeAllListeners('close');
    ws.close(1000);
    process.exitCode = 0;
  } else if (m.event === 'action.failed' || m.event === 'action.removed') {
    ws.removeAllListeners('close');
    ws.close(1000);
    process.exitCode = 1;
  }
}

ws.on('message', (raw) => {
  const m = JSON.parse(raw.toString());
  if (m.type === 'status') {
    console.log(`connected: agent ${m.data.running ? 'running' : 'not running'}, model ${m.data.model || '(none)'}`);
  } else if (m.type === 'reply' && m.id === 'push-1') {
    if (!m.ok) {
      console.error(`pushTask refused: ${m.error.code}: ${m.error.message}`);
      ws.removeAllListeners('close');
      ws.close(1000);
      process.exitCode = 2;
      return;
    }
    actionId = m.result.taskId;
    console.log(`queued ${actionId}: ${m.result.message}`);
    for (const e of early.splice(0)) handleEvent(e);
  } else if (m.type === 'event') {
    if (actionId) handleEvent(m);
    else if (m.event.startsWith('action')) early.push(m);
  }
});
