/**
 * A loopback server that speaks the Ollama REST API as the `ollama` package uses it: `POST /api/chat` with
 * `stream: false` (one JSON object back, tool calls with `function.arguments` as an object) and `POST /api/embed`.
 */
import { startScriptedServer, type Scripted, type ScriptedServer } from './anthropic-server.js';

export type { Scripted, ScriptedServer };

/** An /api/chat reply (non-streaming). */
export function ollamaChatReply(o: {
  text?: string;
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
  model?: string;
  promptEvalCount?: number;
  evalCount?: number;
}): Scripted {
  const message: Record<string, unknown> = { role: 'assistant', content: o.text ?? '' };
  if (o.toolCalls?.length) message.tool_calls = o.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments } }));
  return {
    status: 200,
    body: {
      model: o.model ?? 'llama3:8b',
      created_at: new Date(0).toISOString(),
      message,
      done: true,
      done_reason: 'stop',
      total_duration: 1,
      prompt_eval_count: o.promptEvalCount ?? 17,
      eval_count: o.evalCount ?? 4,
    },
  };
}

/** An /api/embed reply. */
export function ollamaEmbedReply(vectors: number[][], model = 'nomic-embed-text', promptEvalCount = 6): Scripted {
  return { status: 200, body: { model, embeddings: vectors, total_duration: 1, load_duration: 0, prompt_eval_count: promptEvalCount } };
}

/** An Ollama error reply (`{error}` JSON). */
export function ollamaError(status: number, error: string, headers: Record<string, string> = {}): Scripted {
  return { status, headers, body: { error } };
}

export async function startOllamaServer(): Promise<ScriptedServer> {
  return startScriptedServer();
}
