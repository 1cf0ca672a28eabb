/**
 * `filespooler/lowlevel`: everything `filespooler` exports, plus the pieces it is built from
 * (the header codec's parts, seqfiles and locks, decoders, the job-processing loop, job
 * variables, the --json conversions, queue-status's sniffing, the net layer's model and
 * scheduler), for tools that need them. The CLI is built on these. They are listed in
 * docs/api.md ("Lower-level pieces") and may change more often than the main entry point.
 */
export * from './index.js';
// The types and helpers the main entry leaves out, to stay one screen long.
export type { Bytes, Ctime, CommandType, Seal } from './packet/types.js';
export type { PacketSource } from './packet/stream.js';
export { prepareHeader, captureEnv, type PrepareOptions, type HeaderSpec } from './packet/prepare.js';
export type { JobEntry, ScanOptions, JobDetails, OpenJob, PlainOpenJob, DecodedOpenJob, Executor } from './queue/queue.js';
export type {
  Job,
  CommandOptions,
  CommandExecutor,
  FunctionExecutor,
  ExecutorOptions,
  RunSettings,
  QueueProcessOptions,
  WatchMode,
  OnError,
  OrderBy,
  OutputTo,
  QueueJobEvent,
  ProcessRunOptions,
} from './process/process.js';
export type { QueueStatusOptions, QueueState, StatusProblem } from './status/report.js';
export { silentLogger, type Logger, type LogLevel } from './base/log.js';
export type {
  TransitionDefinition,
  FiringContext,
  FiringInput,
  TransitionFunction,
  HostRunOptions,
  NetRunSummary,
  PlaceStatus,
  TransitionStatus,
  NetState,
  NetWarning,
  Leftover,
  PutOptions,
  PutResult,
  RetryOptions,
  RetryResult,
  RetryMove,
  PauseRecord,
  TokenListing,
  SetAsideResult,
} from './net/index.js';
export { namePath, describeSystemError } from './base/errors.js';
export { parseLogLevel, LEVELS, type LogSink } from './base/log.js';
export { writeAllSync } from './sys/io.js';
export { copySealedSync, writeSealedPacketSync } from './packet/sealed-copy.js';
export * from './packet/index.js';
export { SeqFile, parseSeq } from './sys/seqfile.js';
export { FileLock, isLocked } from './sys/lock.js';
export { genFilename, isJobFilename, compareBySeq, compareByTimestamp, indexBySeq } from './queue/jobs.js';
export { copy, type CopyOptions } from './sys/copy.js';
export { openThroughDecoder, readHeaderThroughDecoder, checkedPayload, type DecodedJob, type ExitStatus } from './queue/decoder.js';
export { runCommand, type RunOptions, type RunResult } from './sys/exec.js';
export { processQueue, processFd } from './process/process.js';
export { takeSenderSeq, getSenderNext, setSenderNext, writePacketSync, sealByDefault } from './packet/prepare.js';
export { JobsWatcher, type WatchOptions } from './queue/watch.js';
export { DirWatchSet, type DirWatchSetOptions, type DirWatchOptions } from './queue/watch-set.js';
export { listQueueDirs, queueDirKind, type QueueDirEntry } from './queue/queue-dirs.js';
export { jobVariables, variablesRecord, formatInfo, jobEnvironment, type JobLocation, type JobVariable } from './queue/jobenv.js';
export { rfc3339Utc, rfc3339Local, now } from './packet/time.js';
export { sniffBytes, readFileHead, diagnoseUnreadable, describeKind, suggestedDecoder, SNIFF_LENGTH, type FileType, type SniffKind } from './status/sniff.js';
export { toRanges, formatRanges, type SeqRange } from './status/ranges.js';
export { closest, didYouMean, editDistance } from './base/suggest.js';
export { type NextSeqInfo, type LockInfo, type StatusJob } from './status/report.js';
export { type UndecodableFile, type TempFile, type OtherFile } from './status/files.js';
export {
  bytesToJson,
  bytesFromJson,
  bigintToJson,
  ctimeToJson,
  headerToJson,
  jobEntryToJson,
  jobInfoToJson,
  nextseqToJson,
  rangesToJson,
  statusToJson,
  toJsonDocument,
  toJsonLine,
  type JsonValue,
  type JsonBytes,
  type JsonCtime,
  type JsonHeader,
} from './json.js';
export {
  loadNetFile,
  type NetModel,
  sendPacket,
  sendPackets,
  type SendResult,
  type OutgoingPacket,
} from './net/index.js';
export { schedule, type SchedulerInput, type SchedulerResult } from './net/plan/scheduler.js';
export { describeDestination } from './send/destination.js';
