/**
 * A chat completion request as Keel reads it: checked by hand so that every refusal is an OpenAI-shaped error
 * with a plain message (OpenAI clients show `error.message`), and turned into one task for the agent.
 *
 * OpenAI requests are stateless (the client sends the whole history each time). The task is the last user
 * message; the earlier messages (and the client's system prompt) follow it as the conversation so far, so the
 * agent answers in context, and the first line of the task (what memory keeps of it) is the user's question.
 */

/** The model ids Keel answers to: the agent itself. */
export const MODEL = 'keel';

/** The most of the earlier conversation given to the agent, in characters; older turns are left out, and it says so. */
export const HISTORY_CAP = 12_000;
/** The longest last user message accepted. */
export const MESSAGE_CAP = 100_000;

export interface ParsedRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The task for the agent. */
  task: string;
  /** The `user` field: whose memory session this is (absent: the operator's). */
  user?: string;
}

export class RequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = status === 404 ? 'not_found_error' : 'invalid_request_error',
  ) {
    super(message);
  }
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const USER_ID = /^[A-Za-z0-9_.:@-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a message's content: a string, or text parts; anything else is refused (Keel reads text only). */
function textOf(content: unknown, where: string, role: string): string {
  if (content === null || content === undefined) {
    if (role === 'assistant' || role === 'tool' || role === 'function') return '';
    throw new RequestError(`${where}.content is required: the text of the message.`, 400, where);
  }
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RequestError(`${where}.content must be a string or an array of text parts.`, 400, where);
  return content
    .map((part, j) => {
      if (!isObject(part) || typeof part.type !== 'string')
        throw new RequestError(`${where}.content[${j}] must be an object with a type.`, 400, `${where}.content`);
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
      if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
      throw new RequestError(
        `${where}.content[${j}] is of type "${part.type}": Keel's OpenAI endpoint reads text only (send images and files through a chat channel or the knowledge store).`,
        400,
        `${where}.content`,
        'unsupported_content',
      );
    })
    .join('\n');
}

/**
 * Checks a POST /v1/chat/completions body and builds the agent's task.
 * @example parseRequest({ model: 'keel', messages: [{ role: 'user', content: 'hi' }] }).task // 'hi'
 */
export function parseRequest(body: unknown): ParsedRequest {
  if (!isObject(body)) throw new RequestError('The body must be a JSON object with "model" and "messages".', 400);
  const { model, messages } = body;
  if (typeof model !== 'string' || !model)
    throw new RequestError(`"model" is required: use "${MODEL}" (GET /v1/models lists it).`, 400, 'model');
  if (model !== MODEL)
    throw new RequestError(`The model "${model.slice(0, 100)}" does not exist: use "${MODEL}".`, 404, 'model', 'model_not_found');
  if (!Array.isArray(messages) || messages.length === 0)
    throw new RequestError('"messages" is required: a non-empty array of {role, content}.', 400, 'messages');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw new RequestError('"stream" must be true or false.', 400, 'stream');
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw new RequestError('"n" must be 1: the agent gives one answer per request.', 400, 'n');
  if (Array.isArray(body.tools) && body.tools.length > 0)
    throw new RequestError(
      '"tools" is not supported: Keel calls its own skills (GET /api/skills). Send the request without tools.',
      400,
      'tools',
      'unsupported_parameter',
    );
  if (Array.isArray(body.functions) && body.functions.length > 0)
    throw new RequestError('"functions" is not supported: Keel calls its own skills. Send the request without them.', 400, 'functions');
  for (const k of ['max_tokens', 'max_completion_tokens', 'temperature', 'top_p'] as const) {
    const v = body[k];
    if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isFinite(v) || v < 0))
      throw new RequestError(`"${k}" must be a number of 0 or more.`, 400, k);
  }
  let user: string | undefined;
  if (body.user !== undefined && body.user !== null && body.user !== '') {
    if (typeof body.user !== 'string' || !USER_ID.test(body.user))
      throw new RequestError('"user" must be 1 to 64 letters, digits or _ . : @ -', 400, 'user');
    user = body.user;
  }
  const so = body.stream_options;
  const includeUsage = isObject(so) && so.include_usage === true;

  const turns = messages.map((m, i) => {
    const where = `messages[${i}]`;
    if (!isObject(m) || typeof m.role !== 'string')
      throw new RequestError(`${where} must be an object with a role and content.`, 400, where);
    if (!ROLES.has(m.role))
      throw new RequestError(`${where}.role "${m.role.slice(0, 40)}" is unknown: use system, user or assistant.`, 400, `${where}.role`);
    return { role: m.role, text: textOf(m.content, where, m.role).trim() };
  });
  let last = -1;
  for (let i = turns.length - 1; i >= 0; i--)
    if (turns[i]!.role === 'user') {
      last = i;
      break;
    }
  if (last < 0) throw new RequestError('"messages" has no user message: the last user message is the task.', 400, 'messages');
  const question = turns[last]!.text;
  if (!question) throw new RequestError(`messages[${last}] is empty: the last user message is the task.`, 400, 'messages');
  if (question.length > MESSAGE_CAP)
    throw new RequestError(`messages[${last}] is ${question.length} characters long; at most ${MESSAGE_CAP}.`, 400, 'messages');

  const instructions = turns.filter((t) => (t.role === 'system' || t.role === 'developer') && t.text).map((t) => t.text);
  const earlier = turns
    .slice(0, last)
    .filter((t) => t.role !== 'system' && t.role !== 'developer' && t.text)
    .map((t) => `[${t.role === 'function' ? 'tool' : t.role}] ${t.text}`);
  // The newest turns are kept whole; the oldest are dropped first.
  const kept: string[] = [];
  let size = 0;
  for (let i = earlier.length - 1; i >= 0; i--) {
    size += earlier[i]!.length + 1;
    if (size > HISTORY_CAP) break;
    kept.unshift(earlier[i]!);
  }
  const parts = [question];
  if (instructions.length) parts.push(`Instructions from the chat client (its system prompt):\n${instructions.join('\n').slice(0, 4000)}`);
  if (kept.length) {
    const left = earlier.length - kept.length;
    parts.push(
      `The conversation so far, oldest first, for context (answer the message above):${left ? `\n(${left} older messages left out)` : ''}\n${kept.join('\n')}`,
    );
  }
  return { model, stream: body.stream === true, includeUsage, task: parts.join('\n\n'), ...(user ? { user } : {}) };
}
