/**
 * `filespooler/lowlevel`: everything `filespooler` exports, plus the pieces it is built from
 * (the header codec's parts, seqfiles and locks, decoders, the job-processing loop, job
 * variables, the --json conversions, queue-status's sniffing, the net layer's model and
 * scheduler), for tools that need them. The CLI is built on these. They are listed in
 * docs/api.md ("Lower-level pieces") and may change more often than the main entry point.
 */

export { describeSystemError, namePath } from './base/errors.js';
export { LEVELS, type Logger, type LogLevel, type LogSink, parseLogLevel, silentLogger } from './base/log.js';
export { plural } from './base/plural.js';
export { closest, didYouMean, editDistance } from './base/suggest.js';
export * from './index.js';
export {
  bigintToJson,
  bytesFromJson,
  bytesToJson,
  ctimeToJson,
  headerToJson,
  type JsonBytes,
  type JsonCtime,
  type JsonHeader,
  type JsonValue,
  jobEntryToJson,
  jobInfoToJson,
  nextseqToJson,
  rangesToJson,
  statusToJson,
  toJsonDocument,
  toJsonLine,
} from './json.js';
export type {
  FiringContext,
  FiringInput,
  HostRunOptions,
  Leftover,
  NetRunSummary,
  NetState,
  NetWarning,
  PauseRecord,
  PlaceStatus,
  PutOptions,
  PutResult,
  RetryMove,
  RetryOptions,
  RetryResult,
  SetAsideResult,
  TokenListing,
  TransitionDefinition,
  TransitionFunction,
  TransitionStatus,
} from './net/index.js';
export {
  loadNetFile,
  type NetModel,
  type OutgoingPacket,
  type SendResult,
  sendPacket,
  sendPackets,
} from './net/index.js';
export { type SchedulerInput, type SchedulerResult, schedule } from './net/plan/scheduler.js';
export * from './packet/index.js';
export { NOT_BEFORE_KEY, notBeforeText, parseNotBefore } from './packet/not-before.js';
export {
  captureEnv,
  getSenderNext,
  type HeaderSpec,
  type PrepareOptions,
  prepareHeader,
  sealByDefault,
  setSenderNext,
  takeSenderSeq,
  writePacketSync,
} from './packet/prepare.js';
export { copySealedSync, writeSealedPacketSync } from './packet/seal/sealed-copy.js';
export type { PacketSource, ReadPacketOptions } from './packet/stream.js';
export { now, rfc3339Local, rfc3339Utc } from './packet/time.js';
// The types and helpers the main entry leaves out, to stay one screen long.
export type { Bytes, CommandType, Ctime, FailureFacts, Seal } from './packet/types.js';
export { settleEmptyQueue } from './process/empty-queue.js';
export { serveQueues } from './process/listen.js';
export {
  type JobFailure,
  type QueueFigures,
  QueueMonitor,
  type QueueRunState,
  type QueuesPage,
} from './process/monitor.js';
export type {
  CommandExecutor,
  CommandOptions,
  ExecutorOptions,
  FunctionExecutor,
  Job,
  OnError,
  OrderBy,
  OutputTo,
  ProcessRunOptions,
  QueueJobEvent,
  QueuePageOptions,
  QueueProcessOptions,
  RunSettings,
  WatchMode,
} from './process/process.js';
export { type ProcessFdOptions, processFd, processQueue } from './process/process.js';
export { QUEUE_METRIC_NAMES } from './process/queue-metrics.js';
export {
  checkedPayload,
  type DecodedJob,
  type ExitStatus,
  openThroughDecoder,
  readHeaderThroughDecoder,
  spoolDecoded,
} from './queue/decoder.js';
export {
  formatInfo,
  type JobLocation,
  type JobVariable,
  jobEnvironment,
  jobVariables,
  variablesRecord,
} from './queue/jobenv.js';
export { compareBySeq, compareByTimestamp, genFilename, indexBySeq, isJobFilename } from './queue/jobs.js';
export type {
  DecodedOpenJob,
  Executor,
  JobDetails,
  JobEntry,
  OpenJob,
  PlainOpenJob,
  ScanOptions,
} from './queue/queue.js';
export { listQueueDirs, noQueueUnder, type QueueDirEntry, queueDirKind, whyNotQueue } from './queue/queue-dirs.js';
export { JobsWatcher, type WatchOptions } from './queue/watch.js';
export { type DirWatchOptions, DirWatchSet, type DirWatchSetOptions } from './queue/watch-set.js';
export type { Delivery, DeliveryHooks } from './send/delivery.js';
export { describeDestination, type NncpDestination } from './send/destination.js';
export { type NncpWay, nncpDelivery } from './send/nncp-send.js';
export { describeQueueSendSummary, duplicatesText, packetsWait, sentLine } from './send/queue-send-words.js';
export { type ReceiveOptions, type ReceiveSummary, receivePackets } from './send/receive.js';
export { ReceivedLedger } from './send/received.js';
export { deliveryFor } from './send/send-queue.js';
export { sshDelivery } from './send/ssh-send.js';
export type { OtherFile, TempFile, UndecodableFile } from './status/files.js';
export { formatRanges, type SeqRange, toRanges } from './status/ranges.js';
export type {
  LockInfo,
  NextSeqInfo,
  QueueState,
  QueueStatusOptions,
  StatusJob,
  StatusProblem,
} from './status/report.js';
export {
  describeKind,
  diagnoseUnreadable,
  type FileType,
  readFileHead,
  SNIFF_LENGTH,
  type SniffKind,
  sniffBytes,
  suggestedDecoder,
} from './status/sniff.js';
export { type CopyOptions, copy } from './sys/copy.js';
export { type RunOptions, type RunResult, runCommand } from './sys/exec.js';
export { writeAllSync } from './sys/io.js';
export { FileLock, isLocked } from './sys/lock.js';
export { parseSeq } from './sys/seq-text.js';
export { SeqFile } from './sys/seqfile.js';
// The read-only pages' server (net serve, queue-process --listen) and its guards.
export { badAllowedHost, hostCheck } from './web/host-check.js';
export { formatMetrics, type MetricFamily, PROMETHEUS_CONTENT_TYPE, type Sample } from './web/prometheus.js';
export { type ListenOptions, type PageRoutes, type PageServer, type Reply, servePage } from './web/server.js';
