import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import manifest from '../../../plugins/delegation/manifest.js';
import type { Actor } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { boot, bootAt, cleanup, cleanupKernelOnly, settle, taskOf, toolMessages } from './harness.js';

afterEach(cleanup);

const ROOT = join(import.meta.dirname, '..', '..', '..');
const operator: Actor = { kind: 'operator', channel: 'cli' };
interface Stored {
  tasks: Array<Record<string, unknown> & { id: string; status: string }>;
  agents: Array<Record<string, unknown> & { name: string; tasksRun: number }>;
}
const store = (home: string): Stored =>
  existsSync(join(home, 'delegations.json'))
    ? (JSON.parse(readFileSync(join(home, 'delegations.json'), 'utf8')) as Stored)
    : { tasks: [], agents: [] };
const toolsLog = (home: string): string[] =>
  existsSync(join(home, 'tools.log'))
    ? readFileSync(join(home, 'tools.log'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { name: string }).name)
    : [];

describe('delegation', () => {
  it('runs a delegated task as a queued action in its own lane, whose answer comes back to the parent as the tool result and is recorded', async () => {
    const { kernel: k, fake, home } = await boot();
    const thoughts: Array<string | undefined> = [];
    k.hooks.thinking.tap('test', (e) => void thoughts.push(e.actionId));
    fake.replies.push(
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'Look up alpha and report its value', maxSteps: 3 } }] }, // parent
      { toolCalls: [{ name: 'lookup', arguments: { text: 'alpha' } }] }, // child step 1
      { text: 'alpha is "value of alpha"' }, // child answer
      { text: 'The sub-agent says alpha is "value of alpha".' }, // parent answer
    );
    const a = await k.queue.push({ task: 'Find alpha with a helper', maxRetries: 0, actor: operator });
    const done = await settle(k, a.id);
    expect(done).toMatchObject({ status: 'completed', result: 'The sub-agent says alpha is "value of alpha".' });

    // The child saw its own task with the budget, not the parent's conversation.
    const childTask = taskOf(fake.calls[1]!);
    expect(childTask).toMatch(/sub-agent at delegation depth 1, working for action act_/);
    expect(childTask).toMatch(/at most 3 steps/);
    expect(childTask).toContain('Look up alpha and report its value');
    expect(childTask).not.toContain('Find alpha with a helper');
    expect(toolsLog(home)).toEqual(['lookup']);

    // The parent model saw the child's answer as the delegate_task result.
    const seen = toolMessages(fake.calls[3]!)[0]!;
    expect(seen).toMatch(/<tool_result skill="delegate_task" status="ok"/);
    const body = JSON.parse(seen.split('\n').slice(1, -1).join('\n')) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 'completed',
      result: 'alpha is "value of alpha"',
      steps: 2,
      maxSteps: 3,
      depth: 1,
      parentId: a.id,
    });
    expect(body.taskId).toMatch(/^act_\d+_/);
    expect(body.lane).toBe('delegate:1');

    // The child is an ordinary durable action of the queue, in lane delegate:1, without retries, with its budget.
    const child = k.queue.get(body.taskId as string)!;
    expect(child).toMatchObject({ status: 'completed', result: 'alpha is "value of alpha"', priority: a.priority });
    expect(child.metadata).toMatchObject({
      lane: 'delegate:1',
      maxRetries: 0,
      budget: { maxSteps: 3 },
      parentId: a.id,
      delegation: { depth: 1, parentId: a.id, lanes: ['main'] },
    });
    expect(k.queue.list().completed.map((x) => x.id)).toEqual([a.id, child.id]);

    // Events of the child's run carry its own id; the record is in the store.
    expect(thoughts).toEqual([a.id, body.taskId]);
    const rec = store(home).tasks.find((t) => t.id === body.taskId)!;
    expect(rec).toMatchObject({
      parentId: a.id,
      depth: 1,
      lane: 'delegate:1',
      status: 'completed',
      result: 'alpha is "value of alpha"',
      steps: 2,
      maxSteps: 3,
      requestedBy: 'operator',
    });
    expect(typeof rec.startedAt).toBe('string');
    const listed = await k.execute('list_delegations', { parentId: a.id }, k.operator);
    expect(listed.success).toBe(true);
    expect(JSON.parse(listed.result)).toMatchObject({ count: 1, tasks: [{ id: body.taskId }] });
  });

  it('ends a sub-task that uses up its step budget without running its last calls, and reports the failure to the parent', async () => {
    const { kernel: k, fake, home } = await boot();
    fake.replies.push(
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'Look things up forever', maxSteps: 2 } }] },
      { toolCalls: [{ name: 'lookup', arguments: { text: 'one' } }] },
      { toolCalls: [{ name: 'lookup', arguments: { text: 'two' } }] }, // second step reaches the budget: not run
      { text: 'The helper ran out of steps.' },
    );
    const a = await k.queue.push({ task: 'delegate', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'The helper ran out of steps.' });
    expect(fake.calls).toHaveLength(4);
    expect(toolsLog(home)).toEqual(['lookup']);
    const seen = toolMessages(fake.calls[3]!)[0]!;
    expect(seen).toMatch(/status="error"/);
    expect(seen).toMatch(/failed after 2 of 2 steps: step budget of 2 used up without a final answer/);
    expect(store(home).tasks[0]).toMatchObject({
      status: 'failed',
      steps: 2,
      maxSteps: 2,
      error: 'step budget of 2 used up without a final answer',
    });
  });

  it('refuses nesting deeper than two levels', async () => {
    const { kernel: k, fake, home } = await boot();
    fake.replies.push(
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'level one' } }] }, // parent
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'level two' } }] }, // child, depth 1
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'level three' } }] }, // grandchild, depth 2: refused
      { text: 'grandchild answer' },
      { text: 'child answer' },
      { text: 'parent answer' },
    );
    const a = await k.queue.push({ task: 'nest', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'parent answer' });
    expect(taskOf(fake.calls[2]!)).toMatch(/depth 2.*You cannot delegate further/s);
    const refusal = toolMessages(fake.calls[3]!)[0]!;
    expect(refusal).toMatch(/status="error" code="KEEL_E_FORBIDDEN"/);
    expect(refusal).toMatch(/sub-tasks may nest at most 2 levels deep/);
    expect(JSON.parse(toolMessages(fake.calls[4]!)[0]!.split('\n').slice(1, -1).join('\n'))).toMatchObject({
      result: 'grandchild answer',
      depth: 2,
    });
    expect(JSON.parse(toolMessages(fake.calls[5]!)[0]!.split('\n').slice(1, -1).join('\n'))).toMatchObject({
      result: 'child answer',
      depth: 1,
      parentId: a.id,
    });
    const tasks = store(home).tasks;
    expect(tasks.map((t) => [t.depth, t.status])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
    ]);
    expect(tasks[1]!.parentId).toBe(tasks[0]!.id);
  });

  it('runs a spawned sub-agent with its instructions and refuses tasks beyond its budget', async () => {
    const { kernel: k, fake, home } = await boot();
    fake.replies.push(
      {
        toolCalls: [
          {
            name: 'spawn_agent',
            arguments: { name: 'researcher', instructions: 'Answer in one word.', maxTasks: 2, tasks: ['first', 'second', 'third'] },
          },
        ],
      },
      { text: 'One' },
      { text: 'Two' },
      { toolCalls: [{ name: 'delegate_task', arguments: { agent: 'researcher', task: 'fourth' } }] },
      { text: 'The researcher is out of budget.' },
    );
    const a = await k.queue.push({ task: 'use a researcher', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'The researcher is out of budget.' });
    expect(fake.calls).toHaveLength(5);
    expect(taskOf(fake.calls[1]!)).toMatch(
      /Your name is researcher\. Your standing instructions:\nAnswer in one word\.[\s\S]*Task:\nfirst/,
    );

    const spawned = JSON.parse(toolMessages(fake.calls[3]!)[0]!.split('\n').slice(1, -1).join('\n')) as {
      agent: Record<string, unknown>;
      results: Array<Record<string, unknown>>;
    };
    expect(spawned.agent).toMatchObject({ name: 'researcher', maxTasks: 2, tasksRun: 2, tasksLeft: 0, status: 'exhausted' });
    expect(spawned.results.map((r) => [r.task, r.status, r.result ?? null])).toEqual([
      ['first', 'completed', 'One'],
      ['second', 'completed', 'Two'],
      ['third', 'refused', null],
    ]);
    expect(spawned.results[2]!.error).toMatch(/used its task budget \(2 of 2 tasks\)/);
    const later = toolMessages(fake.calls[4]!).at(-1)!;
    expect(later).toMatch(/<tool_result skill="delegate_task" status="error" code="KEEL_E_FORBIDDEN"/);
    expect(later).toMatch(/used its task budget/);

    const s = store(home);
    expect(s.agents).toHaveLength(1);
    expect(s.tasks.map((t) => [t.agent, t.status])).toEqual([
      ['researcher', 'completed'],
      ['researcher', 'completed'],
    ]);
    // A stopped sub-agent takes no tasks; a new one may take its name.
    expect((await k.execute('stop_agent', { name: 'researcher' }, k.operator)).success).toBe(true);
    const again = await k.execute('delegate_task', { agent: 'researcher', task: 'x' }, k.operator);
    expect(again).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    expect(again.result).toMatch(/was stopped/);
  });

  it('carries the caller\u2019s actor chain: the nested run acts for the same person, and untrusted stays untrusted', async () => {
    const { kernel: k, fake } = await boot();
    const actors: Actor[] = [];
    k.hooks.beforeSkill.tapPromise('test', async (c) => {
      if (c.name === 'lookup') actors.push(c.actor);
      return undefined;
    });
    fake.replies.push(
      { toolCalls: [{ name: 'fetch_page', arguments: { url: 'https://example.test' } }] }, // web content: the action turns untrusted
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'look up beta' } }] },
      { toolCalls: [{ name: 'lookup', arguments: { text: 'beta' } }] },
      { text: 'beta found' },
      { text: 'done' },
    );
    const a = await k.queue.push({ task: 'read a page then delegate', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'done' });
    expect(actors).toHaveLength(1);
    const chain = actors[0]!;
    expect(chain).toMatchObject({ kind: 'agent', untrusted: true, onBehalfOf: { kind: 'agent', untrusted: true, onBehalfOf: operator } });
  });

  it('is refused for a non-admin by the kernel, and nothing is recorded', async () => {
    const { kernel: k, fake, home } = await boot({ adminUsers: { chatA: ['1'] } });
    fake.replies.push({ toolCalls: [{ name: 'delegate_task', arguments: { task: 'anything' } }] }, { text: 'not allowed' });
    const a = await k.queue.push({
      task: 'delegate please',
      source: 'chatA',
      maxRetries: 0,
      actor: { kind: 'user', channel: 'chatA', userId: '99' },
    });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed' });
    expect(toolMessages(fake.calls[1]!)[0]).toMatch(/status="error" code="KEEL_E_FORBIDDEN"/);
    expect(store(home).tasks).toEqual([]);
  });

  it('never overwrites a damaged record file', async () => {
    const { kernel: k, home } = await boot();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(home, 'delegations.json'), '{ not json');
    const r = await k.execute('delegate_task', { task: 'x' }, k.operator);
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/delegations\.json is unreadable/);
    expect(readFileSync(join(home, 'delegations.json'), 'utf8')).toBe('{ not json');
  });

  it('documents every parameter of every skill in docs/delegation.md', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'delegation.md'), 'utf8');
    for (const s of manifest.skills ?? []) {
      expect(doc, s.name).toContain(`\`${s.name}\``);
      const props = Object.keys((s.parameters as { properties: Record<string, unknown> }).properties);
      const section = doc.slice(doc.indexOf(`### \`${s.name}\``));
      for (const p of props) expect(section, `${s.name}.${p}`).toContain(`\`${p}\``);
    }
  });

  it('stops waiting after waitMs: the child is cancelled and the parent sees the timeout', async () => {
    const { kernel: k, fake, home } = await boot();
    fake.replies.push({ toolCalls: [{ name: 'delegate_task', arguments: { task: 'take your time', waitMs: 1000 } }] });
    // Answered by who asks, not by call order: on a loaded machine the child may not reach its model call before
    // the parent's deadline. The child's call hangs (it honours the abort).
    fake.defaultReply = (req) =>
      taskOf(req).includes('take your time') ? { delayMs: 30_000, text: 'too late' } : { text: 'The helper timed out.' };
    const a = await k.queue.push({ task: 'delegate with a deadline', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'The helper timed out.' });
    const parentAgain = fake.calls.find((c) => taskOf(c).includes('delegate with a deadline') && toolMessages(c).length > 0);
    const seen = toolMessages(parentAgain!)[0]!;
    expect(seen).toMatch(/status="error"/);
    expect(seen).toMatch(/timed out after 1000 ms/);
    const rec = store(home).tasks[0]!;
    const child = await settle(k, rec.id);
    expect(child).toMatchObject({ status: 'failed', error: 'timed out after 1000 ms' });
    expect(rec).toMatchObject({ status: 'failed', error: 'timed out after 1000 ms' });
  });

  it('refuses to give a named sub-agent a task from its own chain (its lane would wait for itself)', async () => {
    const { kernel: k, fake } = await boot();
    fake.replies.push(
      { toolCalls: [{ name: 'spawn_agent', arguments: { name: 'loop', instructions: 'Delegate to yourself.', tasks: ['go'] } }] },
      { toolCalls: [{ name: 'delegate_task', arguments: { agent: 'loop', task: 'again' } }] }, // inside loop's own lane
      { text: 'I cannot.' },
      { text: 'done' },
    );
    const a = await k.queue.push({ task: 'self delegation', maxRetries: 0, actor: operator });
    expect(await settle(k, a.id)).toMatchObject({ status: 'completed', result: 'done' });
    const refusal = toolMessages(fake.calls[2]!)[0]!;
    expect(refusal).toMatch(/code="KEEL_E_FORBIDDEN"/);
    expect(refusal).toMatch(/sub-agent "loop" is already working on this chain/);
  });

  it('cancels sub-tasks left behind by a process that stopped while waiting', async () => {
    const first = await boot();
    const { kernel: k1, home } = first;
    first.fake.replies.push(
      { toolCalls: [{ name: 'delegate_task', arguments: { task: 'slow child' } }] },
      { delayMs: 30_000, text: 'never' },
    );
    const a = await k1.queue.push({ task: 'parent', maxRetries: 0, actor: operator });
    const rec = await waitFor(() => store(home).tasks.find((t) => t.status === 'running'), 'the child to run');
    await cleanupKernelOnly(k1);
    // A clean stop closes the record (the parent stopped waiting); the child action is back to pending in the queue
    // file. A crash would leave the record open: make it so, as a crash would.
    const { writeFileSync } = await import('node:fs');
    const raw = store(home);
    raw.tasks[0]!.status = 'running';
    delete raw.tasks[0]!.error;
    writeFileSync(join(home, 'delegations.json'), JSON.stringify({ version: 1, ...raw }));
    const second = await bootAt(home);
    second.fake.defaultReply = { text: 'parent again' };
    const after = store(home).tasks.find((t) => t.id === rec.id)!;
    // Either the parent's cancel at shutdown reached the queue (a stop: the child fails instead of running again at
    // the restart) or it did not (the child was pending again, and is removed as an orphan).
    expect(after.status).toBe('failed');
    expect(after.error).toMatch(/^(orphaned: the action that delegated it stopped waiting|the delegating action was cancelled)$/);
    const child = second.kernel.queue.get(rec.id);
    if (child) expect(child).toMatchObject({ status: 'failed', error: 'the delegating action was cancelled' });
    // The parent itself runs again (at-least-once) and settles.
    expect(await settle(second.kernel, a.id)).toMatchObject({ status: 'completed', result: 'parent again' });
  });

  it('refuses when no agent runner is running on this home (the sub-task would only wait)', async () => {
    const { kernel: k, home } = await boot({}, { runAgent: false });
    const r = await k.execute('delegate_task', { task: 'x' }, k.operator);
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/No agent runner is running/);
    expect(k.queue.counts().pending).toBe(0);
    expect(store(home).tasks).toEqual([]);
  });
});
