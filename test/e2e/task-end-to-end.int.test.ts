/**
 * A task carried out end to end through real parts only: pushed over REST, streamed over the WebSocket,
 * reasoned by the agent with providerA (the real openai client) against a loopback server speaking OpenAI's
 * wire protocol, with a skill call in between.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { chatReply, startOpenAIFake, type ScriptedServer } from '../fakes/openai-server.js';
import { open, type Client } from '../plugins/gateway/ws-helpers.js';
import { rm, skillEntry, tmp, waitFor, writePlugin } from '../helpers.js';

let kernel: Kernel | undefined;
let fake: ScriptedServer | undefined;
let client: Client | undefined;
const dirs: string[] = [];
afterEach(async () => {
  client?.close();
  await kernel?.stop();
  await fake?.close();
  dirs.splice(0).forEach(rm);
});

describe('a task end to end', () => {
  it('REST push → agent → providerA over the OpenAI wire → skill → final answer, streamed over the WebSocket', async () => {
    fake = await startOpenAIFake();
    const home = tmp('keel-e2e-');
    dirs.push(home);
    writePlugin(`${home}/plugins`, {
      id: 'weather',
      manifest: { skills: [skillEntry('get_weather', { category: 'web', isParallelSafe: true })] },
      setup: `ctx.skills.register('get_weather', ({ text }) => 'Sunny, 21 C in ' + text);`,
    });
    const key = 'sk-test-e2e-0123456789abcdef';
    kernel = await startKernel({
      home,
      env: {},
      watchSkills: false,
      runAgent: true,
      runner: { maxIdleMs: 100 },
      logs: new LogSink({ quiet: true }),
      overrides: {
        gatewayAutoStart: true,
        gatewayPort: 0,
        gatewayHost: '127.0.0.1',
        gatewayApiKey: 'gw-key-e2e-123456',
        providerAApiKey: key,
        providerABaseUrl: fake.url,
        modelName: 'gpt-4o-mini',
      },
    });
    const address = kernel.registry.use<{ port: number }>('gateway:address');
    const port = (typeof address === 'function' ? (address as () => { port: number })() : address)!.port;
    const base = `http://127.0.0.1:${port}`;
    fake.script(
      chatReply({ text: 'I will look up the weather.', toolCalls: [{ name: 'get_weather', arguments: '{"text":"Lisbon"}' }] }),
      chatReply({ text: 'It is sunny and 21 C in Lisbon.' }),
    );
    client = await open(`ws://127.0.0.1:${port}/?apiKey=gw-key-e2e-123456`);
    const status = await client.next((m) => m.type === 'status', 'the initial status');
    expect(status.data).toMatchObject({ running: true, model: 'gpt-4o-mini' });

    const res = await fetch(`${base}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'gw-key-e2e-123456' },
      body: JSON.stringify({ task: 'What is the weather in Lisbon?', priority: 7 }),
    });
    const body = (await res.json()) as { success: boolean; taskId: string; message: string };
    expect(body.success).toBe(true);
    expect(body.message).toMatch(/priority 7/);

    const isFor = (event: string) => (m: { type: string; event?: string; data?: { actionId?: string } }) =>
      m.type === 'event' && m.event === event && m.data?.actionId === body.taskId;
    await client.next(isFor('action.started'), 'action.started');
    const thinking = await client.next(isFor('thinking'), 'thinking');
    expect(thinking.data.thought).toMatch(/look up the weather/);
    const action = await client.next(isFor('action'), 'the skill call');
    expect(action.data).toMatchObject({ skill: 'get_weather', parameters: { text: 'Lisbon' } });
    const observation = await client.next(isFor('observation'), 'the observation');
    expect(observation.data.result).toBe('Sunny, 21 C in Lisbon');
    const done = await client.next(isFor('action.completed'), 'action.completed');
    expect(done.data.result).toBe('It is sunny and 21 C in Lisbon.');

    const tasks = (await (await fetch(`${base}/api/tasks`, { headers: { 'x-api-key': 'gw-key-e2e-123456' } })).json()) as {
      completed: Array<{ id: string; result: string }>;
    };
    expect(tasks.completed.find((a) => a.id === body.taskId)?.result).toBe('It is sunny and 21 C in Lisbon.');

    // The model got the skill catalogue as native tools and the skill result back as an untrusted tool message.
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    expect(fake.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toContain('get_weather');
    const toolMsg = fake.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(toolMsg.content).toMatch(/untrusted/);
    expect(toolMsg.content).toMatch(/Sunny, 21 C in Lisbon/);
    await waitFor(() => kernel!.queue.counts().pending === 0, 'the queue to drain');
  });
});
