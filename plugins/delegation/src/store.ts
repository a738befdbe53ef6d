/**
 * $KEEL_HOME/delegations.json: delegated tasks and sub-agents. Every change re-reads the file, applies the
 * change and replaces the file atomically (temp file + fsync + rename), synchronously.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage } from '../../../sdk/errors.js';
import { withFileLockSync } from '../../../sdk/file-lock.js';

const coded = errorsFor('delegation');

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed';

export interface DelegatedTask {
  /** The child action's id (`act_...`): events of its run carry it as `actionId`. */
  id: string;
  /** Queue lane it runs in: `delegate:<depth>` or `agent:<name>`. */
  lane?: string;
  startedAt?: string;
  /** The action (or nested run) that delegated, when there was one. */
  parentId?: string;
  /** 1 for a child of a queued action, 2 for a grandchild. */
  depth: number;
  /** Sub-agent that ran it, if any. */
  agent?: string;
  task: string;
  status: TaskStatus;
  result?: string;
  error?: string;
  /** Model calls the child's run made (counted by the process that ran it). */
  steps: number;
  maxSteps: number;
  createdAt: string;
  settledAt?: string;
  /** Who asked (short description of the actor chain's person). */
  requestedBy: string;
}

export interface SubAgent {
  name: string;
  instructions: string;
  maxTasks: number;
  /** Tasks started so far (a started task counts, whatever its outcome). */
  tasksRun: number;
  maxSteps: number;
  createdAt: string;
  createdBy: string;
  stoppedAt?: string;
}

interface FileShape {
  version: 1;
  tasks: DelegatedTask[];
  agents: SubAgent[];
}

/** Oldest settled tasks beyond this many are dropped. */
export const KEEP_TASKS = 500;

export class DelegationStore {
  readonly file: string;
  problem: string | undefined;

  constructor(home: string) {
    this.file = join(home, 'delegations.json');
  }

  read(): FileShape {
    if (!existsSync(this.file)) {
      this.problem = undefined;
      return { version: 1, tasks: [], agents: [] };
    }
    try {
      const raw = JSON.parse(readFileSync(this.file, 'utf8')) as Partial<FileShape>;
      this.problem = undefined;
      return { version: 1, tasks: Array.isArray(raw.tasks) ? raw.tasks : [], agents: Array.isArray(raw.agents) ? raw.agents : [] };
    } catch (e) {
      this.problem = `${this.file} is unreadable (${errorMessage(e)}); fix or remove it; delegation is off until then`;
      return { version: 1, tasks: [], agents: [] };
    }
  }

  /** Read, change, write back atomically; returns what `change` returns. */
  update<T>(change: (data: FileShape) => T): T {
    // Under the file's lock: the agent's process and a separate gateway both record delegations.
    mkdirSync(dirname(this.file), { recursive: true });
    return withFileLockSync(`${this.file}.lock`, () => this.updateLocked(change), { what: 'delegation records' });
  }

  private updateLocked<T>(change: (data: FileShape) => T): T {
    const data = this.read();
    // A damaged file is reported and never overwritten: an operator repairs or removes it.
    if (this.problem) throw coded('KEEL_E_UNAVAILABLE', `Delegation records cannot be written: ${this.problem}.`);
    const out = change(data);
    const settled = data.tasks.filter((t) => t.status !== 'running' && t.status !== 'queued');
    if (settled.length > KEEP_TASKS) {
      const drop = new Set(settled.slice(0, settled.length - KEEP_TASKS).map((t) => t.id));
      data.tasks = data.tasks.filter((t) => !drop.has(t.id));
    }
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.${randomBytes(3).toString('hex')}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(data, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    return out;
  }

  patchTask(id: string, patch: Partial<DelegatedTask>): void {
    this.update((d) => {
      const t = d.tasks.find((x) => x.id === id);
      if (t) Object.assign(t, patch);
    });
  }
}
