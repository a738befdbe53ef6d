/**
 * `keel ui`: the screens (ink + React through htm, so no JSX build step). Five tabs: overview, queue, activity,
 * chat, models; `?` shows the keys; `q` quits and restores the terminal. Everything fits 80x24.
 */
import { spawn } from 'node:child_process';
import htmModule from 'htm';
import { Box, render, Text, useApp, useInput, useStdout } from 'ink';
import { createElement, useEffect, useRef, useState } from 'react';
import { errorMessage } from '../../../sdk/index.js';
import { GatewayClient, type GatewayMessage, type LinkState } from './api.js';
import { ChatTracker } from './chat.js';
import { bar, Runner, type PullProgress, type RunnerState } from './runner.js';
import { describeEvent, fit, wrap, type ChatLine, type Status, type TaskList } from './views.js';

// htm ships CommonJS types for an ES module: the default export is the module itself at run time.
const htm = (htmModule as unknown as { default?: typeof htmModule.default }).default ?? (htmModule as unknown as typeof htmModule.default);
const html = htm.bind(createElement);

export interface UiOptions {
  base: string;
  apiKey?: string;
  runnerUrl: string;
  version: string;
}

const TABS = ['Overview', 'Queue', 'Activity', 'Chat', 'Models'] as const;
type Prompt = { kind: 'task' | 'pull'; label: string } | undefined;

const HELP = [
  '1-5 / Tab    switch screen          ?   this help',
  'q / Ctrl+C   quit                   r   refresh now',
  'Overview: c check the model (one real call: does the key work, is the name right)',
  'Queue:   n new task (then priority 1-10), Up/Down choose, x cancel or stop it',
  'Chat:    type a message, Enter sends, Esc clears',
  'Models:  Up/Down choose, Enter use as modelName, p pull a model, Esc stop pull',
  'Offline: s starts the agent with its gateway in the background',
];

/** The chosen row's index: the task with that id, else the first row. */
function chosenIndex(list: readonly { id: string }[], id: string | undefined): number {
  const i = id === undefined ? -1 : list.findIndex((a) => a.id === id);
  return i < 0 ? 0 : i;
}

function App({ o }: { o: UiOptions }) {
  const { exit } = useApp();
  const stdout = useStdout().stdout as NodeJS.WriteStream;
  const width = Math.max(40, Math.min(stdout.columns ?? 80, 120));
  const height = Math.max(16, stdout.rows ?? 24);
  const client = useRef(new GatewayClient(o.base, o.apiKey)).current;
  const runner = useRef(new Runner(o.runnerUrl)).current;
  const [tab, setTab] = useState(0);
  const [help, setHelp] = useState(false);
  const [link, setLink] = useState<{ state: LinkState; why?: string }>({ state: 'connecting' });
  const [status, setStatus] = useState<Status | undefined>();
  const [connections, setConnections] = useState<Record<string, { enabled?: boolean; connected?: boolean }>>({});
  const [tasks, setTasks] = useState<TaskList | undefined>();
  const [events, setEvents] = useState<string[]>([]);
  const [chat, setChat] = useState<ChatLine[]>([]);
  const [input, setInput] = useState('');
  const [prompt, setPrompt] = useState<Prompt>();
  const [pendingTask, setPendingTask] = useState<string | undefined>();
  const [notice, setNotice] = useState('');
  /** The last model check (key c on the overview), shown there. */
  const [checked, setChecked] = useState('');
  const [models, setModels] = useState<RunnerState | undefined>();
  const [pick, setPick] = useState(0);
  /** The chosen row of the queue's pending list (by id, so it stays on its task when the list changes). */
  const [chosen, setChosen] = useState<string | undefined>();
  const [pull, setPull] = useState<{ model: string; p?: PullProgress } | undefined>();
  const chatTasks = useRef(new ChatTracker());

  const refresh = async () => {
    try {
      const [s, c, t] = await Promise.all([
        client.call<Status>('GET', '/api/status'),
        client.call<Record<string, { enabled?: boolean; connected?: boolean }>>('GET', '/api/connections'),
        client.call<TaskList>('GET', '/api/tasks'),
      ]);
      setStatus(s);
      setConnections(c);
      setTasks(t);
    } catch (e) {
      if (link.state === 'connected') setNotice(`Refresh failed: ${errorMessage(e)}`);
    }
  };
  const refreshModels = async () => setModels(await runner.state());

  const onMessage = (m: GatewayMessage) => {
    if (m.type === 'gap') void refresh();
    if (m.type !== 'event' || !m.event) return;
    const line = describeEvent(m.event, m.data ?? {});
    if (line) setEvents((ev) => [...ev.slice(-199), line]);
    if (m.event.startsWith('action.')) void refresh();
    const said = chatTasks.current.event(m.event, m.data ?? {});
    if (said) setChat((c) => [...c, said]);
  };
  const onState = (state: LinkState, why?: string) => {
    setLink(why ? { state, why } : { state });
    if (state === 'connected') void refresh();
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: runs once on mount; the handlers use functional state updates and refs.
  useEffect(() => {
    client.connect(onMessage, onState);
    void refreshModels();
    const t = setInterval(() => void refresh(), 5000);
    return () => {
      clearInterval(t);
      client.close();
      runner.abort();
    };
  }, []);

  const quit = () => {
    client.close();
    runner.abort();
    exit();
  };

  const submit = async (text: string) => {
    const value = text.trim();
    if (prompt?.kind === 'task') {
      if (pendingTask === undefined) {
        if (!value) return setPrompt(undefined);
        setPendingTask(value);
        setPrompt({ kind: 'task', label: 'Priority 1-10 (Enter: 5)' });
        return;
      }
      const priority = value ? Number(value) : 5;
      setPrompt(undefined);
      setPendingTask(undefined);
      if (!Number.isFinite(priority)) return setNotice('Priority must be a number from 1 to 10.');
      try {
        const r = await client.call<{ message?: string }>('POST', '/api/tasks', { task: pendingTask, priority });
        setNotice(r.message ?? 'Task queued.');
        void refresh();
      } catch (e) {
        setNotice(`Not queued: ${errorMessage(e)}`);
      }
      return;
    }
    if (prompt?.kind === 'pull') {
      setPrompt(undefined);
      if (value) void startPull(value);
      return;
    }
    if (TABS[tab] === 'Chat' && value) {
      setChat((c) => [...c, { who: 'you', text: value }]);
      try {
        const r = await client.call<{ taskId?: string }>('POST', '/api/tasks', { task: value, priority: 7 });
        // Its answer may have come already (a fast model): then it is shown now.
        const done = r.taskId ? chatTasks.current.sent(r.taskId) : undefined;
        if (done) setChat((c) => [...c, done]);
      } catch (e) {
        setChat((c) => [...c, { who: 'error', text: errorMessage(e) }]);
      }
    }
  };

  const startPull = async (model: string) => {
    setPull({ model });
    try {
      await runner.pull(model, (p) => setPull({ model, p }));
      setNotice(`Pulled ${model}.`);
    } catch (e) {
      setNotice(`Pull of ${model} failed: ${errorMessage(e)}`);
    }
    setPull(undefined);
    void refreshModels();
  };

  const chooseModel = async (name: string) => {
    try {
      await client.call('PUT', '/api/config/providerGEnabled', { value: true });
      await client.call('PUT', '/api/config/llmProvider', { value: 'providerG' });
      const r = await client.call<{ message?: string }>('PUT', '/api/config/modelName', { value: name });
      // The gateway says when an environment variable or a flag still overrides the saved value.
      setNotice(r.message && /overrides/.test(r.message) ? r.message : `modelName is now ${name} (providerG).`);
      void refresh();
    } catch (e) {
      setNotice(`Could not switch the model: ${errorMessage(e)}`);
    }
  };

  /** POST /api/agent/probe: one short real call to the model the agent uses; the answer, or the error and the fix. */
  const checkModel = async () => {
    setChecked('Calling the model...');
    try {
      const p = await client.call<{ ok: boolean; provider?: string; model?: string; ms?: number; error?: string; fix?: string }>(
        'POST',
        '/api/agent/probe',
      );
      setChecked(p.ok ? `${p.model} on ${p.provider} answered in ${p.ms} ms.` : `Failed: ${p.error}\nFix: ${p.fix}`);
    } catch (e) {
      setChecked(`Failed: ${errorMessage(e)}`);
    }
  };

  const startAgent = () => {
    const cli = process.argv[1];
    if (!cli) return;
    const child = spawn(process.execPath, [cli, 'run', '--daemon', '--with-gateway'], {
      stdio: 'ignore',
      detached: true,
      env: process.env,
    });
    child.unref();
    setNotice('Starting the agent with its gateway in the background...');
    setTimeout(() => client.kick(onMessage, onState), 1500);
  };

  useInput((ch, key) => {
    const typing = prompt !== undefined || TABS[tab] === 'Chat';
    if (key.ctrl && ch === 'c') return quit();
    if (typing) {
      // A paste (or a fast terminal) can deliver text and Enter in one chunk: the text before the line break is sent.
      if (!key.return && /[\r\n]/.test(ch)) {
        const v = input + (ch.split(/\r\n|\r|\n/)[0] ?? '');
        setInput('');
        void submit(v);
        return;
      }
      if (key.return) {
        const v = input;
        setInput('');
        void submit(v);
      } else if (key.escape) {
        setInput('');
        setPrompt(undefined);
        setPendingTask(undefined);
        if (TABS[tab] === 'Chat' && !input) setTab(0);
      } else if (key.backspace || key.delete) setInput((s) => s.slice(0, -1));
      else if (key.tab) setTab((t) => (t + 1) % TABS.length);
      else if (ch && !key.ctrl && !key.meta) setInput((s) => s + ch);
      return;
    }
    setNotice('');
    if (ch === 'q') return quit();
    if (ch === '?') return setHelp((h) => !h);
    if (key.tab || key.rightArrow) return setTab((t) => (t + 1) % TABS.length);
    if (key.leftArrow) return setTab((t) => (t + TABS.length - 1) % TABS.length);
    if (/^[1-5]$/.test(ch)) return setTab(Number(ch) - 1);
    if (ch === 'r') return void (refresh(), refreshModels());
    if (ch === 's' && link.state !== 'connected') return startAgent();
    const screen = TABS[tab];
    if (screen === 'Overview' && ch === 'c' && status) return void checkModel();
    if (screen === 'Queue' && ch === 'n') return setPrompt({ kind: 'task', label: 'New task' });
    if (screen === 'Queue') {
      const list = tasks?.pending ?? [];
      const at = chosenIndex(list, chosen);
      if (key.upArrow && list.length) return setChosen(list[Math.max(0, at - 1)]!.id);
      if (key.downArrow && list.length) return setChosen(list[Math.min(list.length - 1, at + 1)]!.id);
      if (ch === 'x') {
        const row = list[at];
        if (!row) return setNotice('Nothing pending.');
        return void client
          .call<{ outcome?: string; message?: string }>('POST', `/api/tasks/${encodeURIComponent(row.id)}/cancel`)
          .then((r) => {
            setNotice(
              r.outcome === 'stopping'
                ? `Stopping ${row.id}: it ends failed, not retried.`
                : r.outcome === 'removed'
                  ? `Cancelled ${row.id}.`
                  : `${row.id}: ${r.message ?? 'already settled'}`,
            );
            return refresh();
          })
          .catch((e: unknown) => setNotice(`Not cancelled: ${errorMessage(e)}`));
      }
    }
    if (screen === 'Models') {
      const n = models?.models.length ?? 0;
      if (key.upArrow) return setPick((p) => Math.max(0, p - 1));
      if (key.downArrow) return setPick((p) => Math.min(Math.max(0, n - 1), p + 1));
      if (key.return && models?.models[pick]) return void chooseModel(models.models[pick].name);
      if (ch === 'p' && !pull) return setPrompt({ kind: 'pull', label: 'Model to pull (e.g. llama3.2:1b)' });
      if (key.escape && pull) return runner.abort();
    }
  });

  const bodyRows = height - 5;
  const linkText =
    link.state === 'connected' ? 'connected' : link.state === 'connecting' ? 'connecting...' : `offline${link.why ? `: ${link.why}` : ''}`;
  const header = fit(`Keel ${status?.version ?? o.version}  ${o.base}  ${linkText}`, width);
  const tabs = TABS.map((t, i) => (i === tab ? `[${i + 1} ${t}]` : ` ${i + 1} ${t} `)).join(' ');

  let body: string[];
  if (help) body = ['Keys', '', ...HELP];
  else if (TABS[tab] === 'Overview') {
    if (!status) {
      body =
        link.state === 'connected'
          ? ['Loading...']
          : [
              'No Keel gateway answers at ' + o.base + '.',
              '',
              'Press s to start the agent with its gateway in the background',
              '(keel run --daemon --with-gateway), or run `npm start` elsewhere.',
            ];
    } else {
      body = [
        `Agent      ${status.running ? 'running' : 'stopped'}${status.safeMode ? '  (safe mode)' : ''}`,
        `Model      ${status.model || '(none: set modelName, or pick a local model on screen 5)'}  via ${status.provider || '-'}`,
        `Queue      ${status.queue?.pending ?? 0} pending, ${status.queue?.failed ?? 0} failed`,
        `Memory     ${status.memory?.short ?? 0} short, ${status.memory?.episodic ?? 0} episodic, ${status.memory?.long ?? 0} long`,
        `Autonomy   ${status.autonomy?.enabled ? `on, every ${Math.round((status.autonomy.interval ?? 0) / 1000)} s` : 'off'}`,
        ...(checked
          ? checked
              .split('\n')
              .flatMap((part, i) => wrap(part, width - 11).map((l, j) => `${i === 0 && j === 0 ? 'Check' : ''}`.padEnd(11) + l))
          : ['Check      press c to call the model once']),
        '',
        'Connections',
        ...(Object.keys(connections).length
          ? Object.entries(connections).map(
              ([name, c]) => `  ${name.padEnd(14)} ${c.connected ? 'connected' : c.enabled ? 'not connected' : 'off'}`,
            )
          : ['  (no channel configured)']),
      ];
    }
  } else if (TABS[tab] === 'Queue') {
    const p = tasks?.pending ?? [];
    const at = chosenIndex(p, chosen);
    // The chosen row stays in view: the window of eight rows slides with it.
    const from = Math.max(0, Math.min(at - 7, p.length - 8));
    body = [
      `Pending (${p.length}, in run order)`,
      ...p
        .slice(from, from + 8)
        .map((a, i) => `${from + i === at ? '>' : ' '} P${a.priority} ${a.id}  ${a.status === 'executing' ? '[running] ' : ''}${a.task}`),
      '',
      `Completed (${tasks?.completed.length ?? 0})`,
      ...(tasks?.completed ?? []).slice(-4).map((a) => `  ${a.id}  ${a.task}`),
      '',
      `Failed (${tasks?.failed.length ?? 0})`,
      ...(tasks?.failed ?? []).slice(-3).map((a) => `  ${a.id}  ${a.error ?? a.task}`),
    ];
  } else if (TABS[tab] === 'Activity') {
    body = events.length ? events.slice(-bodyRows) : ['Waiting for the agent to do something...'];
  } else if (TABS[tab] === 'Chat') {
    const lines = chat.flatMap((c) => [`${c.who === 'you' ? 'you' : c.who === 'agent' ? 'keel' : c.who}: ${c.text}`]);
    body = lines.length ? lines.slice(-(bodyRows - 1)) : ['Say something to the agent; Enter sends.'];
  } else {
    const m = models;
    body = !m
      ? ['Asking the local runner...']
      : !m.reachable
        ? [
            `The local model runner does not answer at ${o.runnerUrl}`,
            `(${m.error ?? 'no answer'}).`,
            '',
            'Install and start Ollama, or set providerGApiUrl; then press r.',
          ]
        : [
            `Runner ${o.runnerUrl}  version ${m.version ?? '?'}`,
            '',
            ...(m.models.length
              ? m.models.map(
                  (x, i) =>
                    `${i === pick ? '>' : ' '} ${x.name.padEnd(32)} ${(x.size / 1e9).toFixed(1)} GB${status?.model === x.name ? '  (in use)' : ''}`,
                )
              : ['  No models installed: press p to pull one.']),
            ...(pull
              ? [
                  '',
                  `Pulling ${pull.model}: ${pull.p?.status ?? 'starting'}`,
                  pull.p?.total ? bar(pull.p.completed ?? 0, pull.p.total) : '',
                ]
              : []),
          ];
  }
  const visible = body.slice(0, bodyRows);
  while (visible.length < bodyRows) visible.push('');
  const footer = prompt
    ? `${prompt.label}${pendingTask ? ` for "${fit(pendingTask, 20)}"` : ''}: ${input}_`
    : TABS[tab] === 'Chat'
      ? `> ${input}_`
      : notice || 'q quit  ? keys  1-5 screens  r refresh';

  return html`<${Box} flexDirection="column" width=${width}>
    <${Text} bold>${header}<//>
    <${Text} color="cyan">${fit(tabs, width)}<//>
    <${Text}>${'─'.repeat(width)}<//>
    ${visible.map((l, i) => html`<${Text} key=${i} wrap="truncate">${fit(l, width) || ' '}<//>`)}
    <${Text} color=${notice && !prompt ? 'yellow' : undefined} wrap="truncate">${fit(footer, width)}<//>
  <//>`;
}

/** Runs the UI until the user quits; resolves with the exit code. */
export async function runUi(o: UiOptions): Promise<number> {
  // keel ui runs only on a terminal (checked before); a CI variable in the environment must not turn it into a
  // print-the-last-frame program.
  const app = render(html`<${App} o=${o} />`, { exitOnCtrlC: false, interactive: true });
  await app.waitUntilExit();
  return 0;
}
