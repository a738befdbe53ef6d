/**
 * A loopback server that speaks the Bedrock Runtime Converse API (`POST /model/{modelId}/converse`, restJson) as
 * the real @aws-sdk/client-bedrock-runtime sends it. The client's default handler speaks HTTP/2, so this serves
 * cleartext HTTP/2 on 127.0.0.1; point the client at it with the `endpoint` override. Requests arrive SigV4-signed
 * with the test credentials and are recorded for assertions.
 */
import { startScriptedServer, type Scripted, type ScriptedServer } from './anthropic-server.js';

export type { Scripted, ScriptedServer };

/** A Converse reply. */
export function converseReply(o: {
  text?: string;
  toolUses?: Array<{ toolUseId: string; name: string; input: Record<string, unknown> }>;
  inputTokens?: number;
  outputTokens?: number;
  stopReason?: string;
}): Scripted {
  const content: unknown[] = [];
  if (o.text !== undefined) content.push({ text: o.text });
  for (const t of o.toolUses ?? []) content.push({ toolUse: t });
  const inputTokens = o.inputTokens ?? 13;
  const outputTokens = o.outputTokens ?? 5;
  return {
    status: 200,
    headers: { 'x-amzn-requestid': 'test-request' },
    body: {
      output: { message: { role: 'assistant', content } },
      stopReason: o.stopReason ?? (o.toolUses?.length ? 'tool_use' : 'end_turn'),
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      metrics: { latencyMs: 1 },
    },
  };
}

/** An AWS restJson error: the type in `x-amzn-errortype`, the message in the body. */
export function awsError(status: number, type: string, message: string, headers: Record<string, string> = {}): Scripted {
  return { status, headers: { 'x-amzn-errortype': type, ...headers }, body: { message } };
}

export async function startBedrockServer(): Promise<ScriptedServer> {
  return startScriptedServer({ http2: true });
}
