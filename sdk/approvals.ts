/**
 * Approvals in the chat (docs/approvals.md): a request a human admin must decide (a command waiting for
 * confirmation, an APPROVAL configuration change the agent asked for), kept durably in
 * `$KEEL_HOME/approvals.json` and sent with Approve / Refuse buttons to the chat the action came from.
 *
 * The file is shared by every process on the KEEL_HOME (the daemon, a gateway, `keel commands`): every change takes
 * its lock (`approvals.json.lock`, withFileLock), re-reads it, and replaces it atomically (temp file + rename,
 * 0600). A request leaves `pending` exactly once (approved, refused or expired) and that transition is written
 * before anything is carried out, so a tap delivered twice, two admins tapping at once or a restart in between
 * never run the command twice.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeActor, humanBehind, isUntrusted } from './actor.js';
import { errorMessage } from './errors.js';
import { withFileLock } from './file-lock.js';
import type { Action, Actor, Logger } from './types.js';

export const APPROVALS_FILE = 'approvals.json';

/** What is asked: a command confirmation, a configuration change, a privileged skill call on untrusted work. */
export type ApprovalKind = 'command' | 'config' | 'skill';
export type ApprovalState = 'pending' | 'approved' | 'refused' | 'expired';
export type ApprovalDecision = 'approve' | 'refuse';

/**
 * One request.
 * @example const r: ApprovalRequest = { id: 'cmd_1_ab12cd', kind: 'command', ask: 'Run `ls -la` in /srv', ... };
 */
export interface ApprovalRequest {
  /** The id of the thing waiting (the pending command `cmd_...` or configuration change `cfg_...`). */
  id: string;
  kind: ApprovalKind;
  /** What is asked, in plain words (the command line and folder; the key and masked value). Never a secret. */
  ask: string;
  requestedBy?: Actor;
  /** The channel and chat the action came from: the buttons go there, and so does the outcome. */
  origin: { channel: string; chatId?: string };
  requestedAt: string;
  expiresAt: string;
  state: ApprovalState;
  /**
   * A privileged skill call waiting (kind `skill`): the skill and its exact, validated arguments, run once when an
   * admin approves. Kept only while the request is pending (dropped from the file once it is decided or expired);
   * never shown (the gateway's view leaves it out: `ask` shows the arguments in words, secrets masked).
   */
  call?: { skill: string; args: Record<string, unknown> };
  /** Who decided, in words (`chatA user 42`), and when. */
  decidedBy?: string;
  decidedAt?: string;
  /** What came of it, as told to the requester. */
  outcome?: string;
}

/** The answer to a tap or a REST decision. `message` is what the tapping person is shown. */
export type DecideOutcome =
  | { status: 'decided'; request: ApprovalRequest; message: string }
  | { status: 'not-admin' | 'already-decided' | 'expired' | 'unknown'; request?: ApprovalRequest; message: string };

/** Carries out the decision on the thing waiting; the string is its result (the command's output). */
export interface ApprovalExecutor {
  approve(r: ApprovalRequest, by: Actor): Promise<string>;
  refuse(r: ApprovalRequest, by: Actor): Promise<void>;
  /** Nobody answered in time: drop the thing waiting. */
  expire(r: ApprovalRequest): Promise<void>;
}

/**
 * Capability `approvals` (the system plugin): asks, decides, lists. Channels call `decide` when a button is tapped.
 * @example
 * const out = await ctx.use('approvals')?.decide('cmd_1_ab12cd', 'approve', { kind: 'user', channel: 'chatA', userId: '42' });
 * await api.answerCallbackQuery(queryId, { text: out.message });
 */
export interface ApprovalsCapability {
  decide(id: string, decision: ApprovalDecision, by: Actor): Promise<DecideOutcome>;
  /**
   * A privileged skill the policy refused because the work is untrusted (the kernel's dispatch asks, once per
   * refused call): record a `skill` request and send it to the admins of the chat the action came from. Fails
   * closed (`sent: false`, `message` says why): no chat with buttons, no admin there, arguments too large.
   */
  requestSkill?(input: SkillApprovalInput): Promise<SkillApprovalAnswer>;
  get(id: string): ApprovalRequest | undefined;
  /** Pending first, then the recently decided (newest first). */
  list(): ApprovalRequest[];
}

/** The refused call dispatch hands to `requestSkill`: validated arguments, the untrusted actor, its action. */
export interface SkillApprovalInput {
  skill: string;
  args: Record<string, unknown>;
  actor: Actor;
  action?: Action;
}

/** `message` is added to the refusal the model reads (it tells it not to call again). */
export type SkillApprovalAnswer = { sent: true; request: ApprovalRequest; message: string } | { sent: false; message: string };

/** Callback data of the buttons: `apr:<y|n>:<id>` (Telegram allows 64 bytes; ids are about 24). */
export function approvalButtonData(id: string, decision: ApprovalDecision): string {
  return `apr:${decision === 'approve' ? 'y' : 'n'}:${id}`;
}

/**
 * The request id and decision of an approval button, or undefined for any other button.
 * @example parseApprovalButton('apr:y:cmd_1_ab12cd') // { id: 'cmd_1_ab12cd', decision: 'approve' }
 */
export function parseApprovalButton(data: string | undefined): { id: string; decision: ApprovalDecision } | undefined {
  const m = /^apr:([yn]):([A-Za-z0-9_-]{1,58})$/.exec(data ?? '');
  return m ? { id: m[2]!, decision: m[1] === 'y' ? 'approve' : 'refuse' } : undefined;
}

/** The line that replaces a request's buttons once it is no longer pending (every channel's edit). */
export function approvalOutcomeLine(r: ApprovalRequest): string {
  if (r.state === 'approved') return `Approved by ${r.decidedBy ?? 'an admin'}.`;
  if (r.state === 'refused') return `Refused by ${r.decidedBy ?? 'an admin'}.`;
  if (r.state === 'expired') return 'Expired: nobody answered in time.';
  return 'Waiting for an admin.';
}

/** The request message as edited once it is decided: what was asked and what became of it, no buttons. */
export function approvalOutcomeText(r: ApprovalRequest): string {
  return `Approval ${r.id}: ${r.ask}\n${approvalOutcomeLine(r)}`;
}

/**
 * A tap on an Approve / Refuse button on `channel` by platform user `userId`, decided by the approvals capability
 * (which checks the admin, fail closed, and decides once). Never throws: a failure is an outcome with a message.
 * `edit` tells the channel whether to edit the request message to the outcome (it is no longer pending, and the
 * tap was not a stranger's: a non-admin's tap changes nothing, not even the message).
 * @example const { out, edit } = await decideTap(ctx, 'chatC', userId, parseApprovalButton(customId)!);
 */
export async function decideTap(
  ctx: { use(name: 'approvals'): ApprovalsCapability | undefined; log: Logger },
  channel: string,
  userId: string,
  tap: { id: string; decision: ApprovalDecision },
): Promise<{ out: DecideOutcome; edit: boolean }> {
  const approvals = ctx.use('approvals');
  let out: DecideOutcome;
  try {
    out = approvals
      ? await approvals.decide(tap.id, tap.decision, { kind: 'user', channel, userId })
      : { status: 'unknown', message: 'Approvals are not available here (the system plugin is not running).' };
  } catch (e) {
    ctx.log.warn(`approvals: the tap on ${tap.id} failed: ${errorMessage(e)}`);
    out = { status: 'unknown', message: `This could not be decided: ${errorMessage(e)}`.slice(0, 200) };
  }
  const edit = out.request !== undefined && out.request.state !== 'pending' && out.status !== 'not-admin';
  return { out, edit };
}

/** Where a request's messages go: a channel offering `send` (the kit's capability) and the gateway's events. */
export interface ApprovalDelivery {
  /** `buttons`: add Approve / Refuse (callback data from approvalButtonData). `key`: the ledger's idempotency key. */
  send(r: ApprovalRequest, text: string, buttons: boolean, key: string): Promise<void>;
  event(name: 'approval.requested' | 'approval.decided', r: ApprovalRequest): void;
}

export interface ApprovalServiceOptions {
  home: string;
  log: Logger;
  /** Whether this person is an admin (the kernel's decision: adminUsers per channel, fail closed). */
  isAdmin(actor: Actor): boolean;
  executors: Partial<Record<ApprovalKind, ApprovalExecutor>>;
  delivery: ApprovalDelivery;
  clock?: () => number;
}

/** How long decided requests are remembered, to answer a late tap with what became of them. */
const KEEP_DECIDED_MS = 7 * 24 * 3600 * 1000;

export class ApprovalService implements ApprovalsCapability {
  readonly path: string;
  #items: ApprovalRequest[] = [];
  readonly #now: () => number;

  constructor(private readonly o: ApprovalServiceOptions) {
    this.path = join(o.home, APPROVALS_FILE);
    this.#now = o.clock ?? Date.now;
    this.#read();
  }

  get(id: string): ApprovalRequest | undefined {
    this.#read();
    const r = this.#items.find((x) => x.id === id);
    return r ? { ...r } : undefined;
  }

  list(): ApprovalRequest[] {
    this.#read();
    const pending = this.#items.filter((r) => r.state === 'pending');
    const decided = this.#items.filter((r) => r.state !== 'pending').reverse();
    return [...pending, ...decided].map((r) => ({ ...r }));
  }

  /**
   * Records a request and sends it to the chat it came from with Approve / Refuse buttons (and to the gateway's
   * WebSocket stream for the dashboard and gateway chat clients). Asking again for the same id returns the request.
   */
  async request(input: Omit<ApprovalRequest, 'state' | 'requestedAt' | 'expiresAt'>, expiryMinutes: number): Promise<ApprovalRequest> {
    const at = this.#now();
    const made = await this.#edit((items) => {
      const same = items.find((r) => r.id === input.id);
      if (same) return { items, value: { r: same, fresh: false } };
      const r: ApprovalRequest = {
        ...input,
        state: 'pending',
        requestedAt: new Date(at).toISOString(),
        expiresAt: new Date(at + expiryMinutes * 60_000).toISOString(),
      };
      return { items: [...items, r], value: { r, fresh: true } };
    });
    if (made.fresh) {
      this.o.log.info(
        `approvals: ${made.r.id} (${made.r.kind}) waits for an admin on ${made.r.origin.channel}: ${made.r.ask} (expires ${made.r.expiresAt})`,
      );
      await this.#tell(
        made.r,
        `Approval needed (${made.r.id}): ${made.r.ask}\nRequested by ${describeActor(humanBehind(made.r.requestedBy) ?? made.r.requestedBy)}; expires ${made.r.expiresAt}.`,
        true,
        'ask',
      );
      this.o.delivery.event('approval.requested', made.r);
    }
    return { ...made.r };
  }

  /**
   * An admin's tap (or the operator's REST call). Only a human admin of the request's channel counts (the operator
   * counts everywhere); anyone else changes nothing. The first decision wins; later ones are told what happened.
   */
  async decide(id: string, decision: ApprovalDecision, by: Actor): Promise<DecideOutcome> {
    await this.sweep();
    // A tap is a person's own act: never the agent (even for an admin) and never work untrusted content started.
    const human = by.kind === 'agent' || isUntrusted(by) ? undefined : humanBehind(by);
    const known = this.get(id);
    if (!known) return { status: 'unknown', message: `No approval request ${id} is known here.` };
    if (!human || !this.#mayDecide(human, known)) {
      this.o.log.warn(`approvals: ${describeActor(by)} tried to ${decision} ${id} and is not an admin there: nothing changed`);
      return { status: 'not-admin', request: known, message: 'Only an admin can approve or refuse this.' };
    }
    const who = describeActor(human);
    type Taken = { r: ApprovalRequest; fresh: boolean; call?: ApprovalRequest['call'] };
    const taken = await this.#edit<Taken>((items) => {
      const r = items.find((x) => x.id === id);
      if (r?.state !== 'pending') return { items, value: { r: r ?? known, fresh: false } };
      // What waits (a skill call's arguments) leaves the file with `pending`: it is carried out from memory, once.
      const { call, ...rest } = r;
      const next: ApprovalRequest = {
        ...rest,
        state: decision === 'approve' ? 'approved' : 'refused',
        decidedBy: who,
        decidedAt: new Date(this.#now()).toISOString(),
      };
      return { items: items.map((x) => (x.id === id ? next : x)), value: { r: next, call, fresh: true } };
    });
    if (!taken.fresh) {
      const r = taken.r;
      if (r.state === 'expired')
        return { status: 'expired', request: r, message: `This request expired at ${r.expiresAt}; nothing was done.` };
      return { status: 'already-decided', request: r, message: `Already ${r.state} by ${r.decidedBy ?? 'someone else'}; nothing changed.` };
    }
    const r = taken.r;
    const ex = this.o.executors[r.kind];
    let outcome: string;
    if (decision === 'approve') {
      try {
        const withCall = taken.call ? { ...r, call: taken.call } : r;
        const result = ex ? await ex.approve(withCall, human) : `Nothing here can carry out a ${r.kind} request.`;
        outcome = `Approved by ${who}: ${r.ask}\n${result}`;
      } catch (e) {
        outcome = `Approved by ${who}, but it could not be carried out: ${errorMessage(e)}`;
      }
    } else {
      await ex?.refuse(r, human).catch((e) => this.o.log.warn(`approvals: refusing ${id}: ${errorMessage(e)}`));
      outcome = `Refused by ${who}: ${r.ask}. It was not done.`;
    }
    const done = await this.#settle(id, outcome);
    this.o.log.info(`approvals: ${id} ${done.state} by ${who}`);
    await this.#tell(done, outcome, false, 'outcome');
    this.o.delivery.event('approval.decided', done);
    return { status: 'decided', request: done, message: decision === 'approve' ? `Approved by ${who}.` : `Refused by ${who}.` };
  }

  /** Expires what nobody answered in time (each told in its chat once) and forgets long-decided requests. */
  async sweep(): Promise<ApprovalRequest[]> {
    const now = this.#now();
    this.#read();
    if (!this.#items.some((r) => (r.state === 'pending' && Date.parse(r.expiresAt) <= now) || this.#old(r, now))) return [];
    const expired = await this.#edit((items) => {
      const out: ApprovalRequest[] = [];
      const next = items
        .filter((r) => !this.#old(r, now))
        .map((r) => {
          if (r.state !== 'pending' || Date.parse(r.expiresAt) > now) return r;
          const minutes = Math.round((Date.parse(r.expiresAt) - Date.parse(r.requestedAt)) / 60_000);
          const { call: _dropped, ...rest } = r;
          const e: ApprovalRequest = {
            ...rest,
            state: 'expired',
            decidedAt: new Date(now).toISOString(),
            outcome: `Expired after ${minutes} minute${minutes === 1 ? '' : 's'}, nobody answered: ${r.ask}. It was not done.`,
          };
          out.push(e);
          return e;
        });
      return { items: next, value: out };
    });
    for (const r of expired) {
      this.o.log.info(`approvals: ${r.id} expired unanswered`);
      await this.o.executors[r.kind]?.expire(r).catch((e) => this.o.log.warn(`approvals: expiring ${r.id}: ${errorMessage(e)}`));
      await this.#tell(r, r.outcome!, false, 'outcome');
      this.o.delivery.event('approval.decided', r);
    }
    return expired;
  }

  #old(r: ApprovalRequest, now: number): boolean {
    return r.state !== 'pending' && now - Date.parse(r.decidedAt ?? r.requestedAt) > KEEP_DECIDED_MS;
  }

  /** The operator decides anywhere; anyone else only as an admin of the channel the request came from. */
  #mayDecide(human: Actor, r: ApprovalRequest): boolean {
    if (human.kind === 'operator') return true;
    if (human.kind !== 'user' || human.channel !== r.origin.channel) return false;
    try {
      return this.o.isAdmin(human) === true;
    } catch {
      return false;
    }
  }

  async #settle(id: string, outcome: string): Promise<ApprovalRequest> {
    return this.#edit((items) => {
      const r = items.find((x) => x.id === id)!;
      const next = { ...r, outcome };
      return { items: items.map((x) => (x.id === id ? next : x)), value: next };
    });
  }

  async #tell(r: ApprovalRequest, text: string, buttons: boolean, what: string): Promise<void> {
    if (!r.origin.chatId) return;
    try {
      await this.o.delivery.send(r, text, buttons, `approval:${r.id}:${what}`);
    } catch (e) {
      this.o.log.warn(`approvals: could not tell ${r.origin.channel} chat ${r.origin.chatId} about ${r.id}: ${errorMessage(e)}`);
    }
  }

  #read(): void {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#items = [];
        return;
      }
      throw e;
    }
    try {
      const parsed = JSON.parse(text) as { requests?: unknown };
      this.#items = Array.isArray(parsed.requests) ? parsed.requests.filter(isRequest) : [];
    } catch {
      // A torn file cannot happen (rename); a hand-edited one is kept for a human and read as empty: nothing runs.
      this.o.log.error(`approvals: ${this.path} is not valid JSON; no request in it can be decided until it is fixed`);
      this.#items = [];
    }
  }

  async #edit<T>(fn: (items: ApprovalRequest[]) => { items: ApprovalRequest[]; value: T }): Promise<T> {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    return withFileLock(
      `${this.path}.lock`,
      () => {
        this.#read();
        const { items, value } = fn(this.#items);
        if (items !== this.#items) {
          const tmp = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
          writeFileSync(tmp, `${JSON.stringify({ requests: items }, null, 2)}\n`, { mode: 0o600 });
          renameSync(tmp, this.path);
          this.#items = items;
        }
        return value;
      },
      { what: 'list of approval requests' },
    );
  }
}

function isRequest(v: unknown): v is ApprovalRequest {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r['id'] === 'string' &&
    typeof r['ask'] === 'string' &&
    typeof r['expiresAt'] === 'string' &&
    ['pending', 'approved', 'refused', 'expired'].includes(r['state'] as string) &&
    typeof (r['origin'] as { channel?: unknown } | undefined)?.channel === 'string'
  );
}
