/**
 * The model provider contract. Each provider plugin (`providerA` ... `providerK`) provides the capability
 * `provider:<id>` with this interface; the agent plugin routes between them (model-name inference, fallback,
 * token accounting) and offers the result as the capability `llm`.
 */

/** A message in a chat with tools. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** Assistant turns: the tool calls the model asked for. */
  toolCalls?: ToolCall[];
  /** Tool turns: the id of the call this result answers. */
  toolCallId?: string;
  /** Tool turns: the tool's name (some vendors need it). */
  name?: string;
  /** User turns: images for vision-capable models. */
  images?: Array<{ mimeType: string; base64: string }>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Parsed arguments; when the model sent invalid JSON, `raw` holds its text and `arguments` is `{}`. */
  arguments: Record<string, unknown>;
  raw?: string;
}

/** A tool offered to the model (a skill: name, description, JSON schema of its parameters). */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  maxTokens?: number;
  signal?: AbortSignal;
  /** Per-call timeout in milliseconds (the provider's default otherwise). */
  timeoutMs?: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatResponse {
  /** Text of the reply (may be empty when the model only calls tools). */
  text: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** The model that answered, as the vendor names it. */
  model: string;
  finishReason?: string;
}

export interface EmbedRequest {
  texts: string[];
  model?: string;
  signal?: AbortSignal;
}

export interface ImageRequest {
  prompt: string;
  size?: string;
  quality?: string;
  model?: string;
  signal?: AbortSignal;
}

export interface SpeechRequest {
  text: string;
  voice?: string;
  model?: string;
  /**
   * `opus`: Ogg Opus, what WhatsApp and Telegram play as a voice note (asked for by `send_voice_note` on those
   * channels). A provider that cannot make it answers in its own format (the `mimeType` it returns says which).
   */
  format?: 'mp3' | 'opus';
  signal?: AbortSignal;
}

/**
 * Speech to text: an audio file (by path, or its bytes) to its transcript. The transcript is what a machine heard:
 * whoever uses it treats it as untrusted content, as any text from outside.
 * @example
 * const { text } = await provider.transcribe!({ path: '/home/keel/downloads/chatA/9_51_voice.ogg', mimeType: 'audio/ogg' });
 */
export interface TranscriptionRequest {
  /** The audio file to read; or give `data`. */
  path?: string;
  /** The audio bytes, when there is no file. */
  data?: Uint8Array;
  /** MIME type of the audio (e.g. `audio/ogg`); the vendor guesses from the file name without it. */
  mimeType?: string;
  /** ISO-639-1 language of the speech (e.g. `en`), a hint; the vendor detects it without one. */
  language?: string;
  /** The vendor's speech-to-text model (the provider's default otherwise, e.g. `whisper-1`). */
  model?: string;
  signal?: AbortSignal;
}

/** Capability `provider:<id>`. Optional methods exist only where the vendor offers them. */
export interface ProviderCapability {
  /** `providerA` ... `providerK`. */
  id: string;
  /** Whether the provider can be called, and if not exactly what to set (key name and env variable). */
  configured(): { ok: true } | { ok: false; missing: string };
  chat(req: ChatRequest): Promise<ChatResponse>;
  embed?(req: EmbedRequest): Promise<{ vectors: number[][]; usage?: TokenUsage; model: string }>;
  generateImage?(req: ImageRequest): Promise<{ mimeType: string; base64: string }>;
  speak?(req: SpeechRequest): Promise<{ mimeType: string; base64: string }>;
  /** Voices `speak` accepts. */
  voices?: string[];
  /** Speech to text (see {@link TranscriptionRequest}); the text is untrusted content. */
  transcribe?(req: TranscriptionRequest): Promise<{ text: string; model?: string }>;
  /** Whether chat accepts images. */
  vision: boolean;
}

/** An error from a provider, with what the router needs to decide on retry and fallback. Never holds a key. */
export interface ProviderErrorInfo {
  provider: string;
  status?: number;
  /** Milliseconds the vendor asked to wait (Retry-After). */
  retryAfterMs?: number;
  retryable: boolean;
}

export class ProviderError extends Error {
  readonly info: ProviderErrorInfo;
  constructor(message: string, info: ProviderErrorInfo, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderError';
    this.info = info;
  }
}

/** Capability `llm`: chat, embeddings and the fast model through the router (inference, fallback, usage log). */
export interface LlmCapability {
  /** The provider and model the agent uses now, or why there is none. */
  current(): { provider: string; model: string } | { provider?: string; model?: string; missing: string };
  chat(req: Omit<ChatRequest, 'model'> & { model?: string; purpose?: 'main' | 'fast' }): Promise<ChatResponse & { provider: string }>;
  /** Embeddings from the first configured provider that offers them (A, B, or G when enabled); undefined if none. */
  embed(req: EmbedRequest): Promise<{ vectors: number[][]; provider: string; model: string } | undefined>;
  canEmbed(): boolean;
  /**
   * One short real call to the model the agent uses, without fallback: does the key work, does the provider know
   * the model, how long does an answer take. Costs a few tokens (recorded in the usage log as purpose `probe`).
   */
  probe?(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ModelProbe>;
}

/** What a model probe found (`llm.probe`, `POST /api/agent/probe`, `keel doctor --probe`). Never holds a key. */
export type ModelProbe =
  | { ok: true; provider: string; model: string; ms: number; reply: string }
  | {
      ok: false;
      provider?: string;
      model?: string;
      ms?: number;
      /** HTTP status the provider answered with, when it answered. */
      status?: number;
      /** What went wrong, in the provider's words where it gave some (key-free). */
      error: string;
      /** What to change. */
      fix: string;
    };
