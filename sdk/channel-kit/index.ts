/**
 * The channel kit: what every chat channel plugin shares so that none of them loses, doubles or mangles a message.
 * Imported by channel plugins as `sdk/channel-kit/index.js` (a subpath of the SDK, kept out of `sdk/index.ts` so
 * that plugins without a channel never load SQLite or the Markdown parser). Prose: docs/channels-kit.md.
 *
 * @example
 * import { ChannelStore, Ingress, DeliveryLedger, Outbox, RateLimiter, RATE_POLICIES, renderTelegram } from '../../sdk/channel-kit/index.js';
 * const store = ChannelStore.open(ctx.home, 'chatA');
 * const outbox = new Outbox({ ledger: new DeliveryLedger(store), limiter: new RateLimiter(RATE_POLICIES.telegram), classify, log: ctx.log });
 */
export { ChannelStore } from './store.js';
export { Ingress, type IngressItem, type IngressOptions, type IngressTurn } from './ingress.js';
export { HistoryGates } from './history-gates.js';
export { ThreadFollow, partKey } from './thread-follow.js';
export { TtlCache } from './ttl-cache.js';
export { HandedInputs } from './handed.js';
export { EDIT_WINDOW_MS, editKey, latestActionOf, routeDelete, routeEdit, type EditedMessage } from './edits.js';
export { AliveMark, ALIVE_KEY, ALIVE_EVERY_MS, ALIVE_MARGIN_MS, type AliveMarkOptions } from './alive.js';
export {
  HistoryRounds,
  HISTORY_CALL_TIMEOUT_MS,
  SWEEP_ACTIVE_MS,
  SWEEP_CHATS,
  UNDELIVERED_AFTER_MS,
  type HistoryRound,
  type HistoryRoundsOptions,
} from './history-rounds.js';
export {
  HistoryCatchUp,
  historyCursorKey,
  type CatchUpAdapter,
  type CatchUpContext,
  type CatchUpNewcomers,
  type CatchUpRecorded,
  type CatchUpSummary,
  type HistoryCatchUpOptions,
  type HistoryPage,
} from './catch-up.js';
export { DeliveryLedger, platformNonce, type ChunkSender } from './ledger.js';
export { WriteBehind } from './write-behind.js';
export { Outbox, type OutboxOptions } from './outbox.js';
export {
  RateLimiter,
  TokenBucket,
  RATE_POLICIES,
  type BucketSpec,
  type RatePolicy,
  type RunOptions,
  type SendErrorDecision,
} from './rate-limit.js';
export { type ConnectionHooks, ConnectionSupervisor, StallError, type ConnectionState, type SupervisorOptions } from './supervisor.js';
export {
  type ConnectionLock,
  connectionLock,
  type LeaseHold,
  LeaseLostError,
  RedisLease,
  type RedisLeaseOptions,
  type SendFence,
} from './lease.js';
export { OwnerLock, type LockResult } from './owner-lock.js';
export { RedisSharedLedger, type SharedLedger, sharedLedger } from './shared-ledger.js';
export { BUILTIN_COMMANDS, isBuiltin, runCommand } from './commands.js';
export { setting } from '../channel.js';
export {
  defineChannel,
  startChannel,
  type ChannelAdapter,
  type ChannelDefinition,
  type ChannelKit,
  type RunningChannel,
} from './define.js';
export {
  createChannelRuntime,
  skillSendKey,
  type ChannelRuntime,
  type ChannelRuntimeOptions,
  type ReplyTarget,
  type ChunkOptions,
} from './runtime.js';
export { DOWNLOAD_LIMIT_BYTES, downloadTo, safeFileName, saveInboundFiles, type DownloadRequest, type InboundFile } from './download.js';
export { makeTranscriber, SPEECH_PROVIDERS, transcriptNote, type Transcribe } from './transcribe.js';
export {
  ProgressFeedback,
  failureNotice,
  statusLine,
  INTERRUPTED_LINE,
  FINISHED_LINE,
  type ProgressOptions,
  type ProgressTransport,
} from './progress.js';
export {
  renderChunks,
  renderTelegram,
  renderEmail,
  parseMarkdown,
  telegramHtmlToPlain,
  PLATFORM_LIMITS,
  type Platform,
  type TelegramChunk,
} from './render/index.js';
