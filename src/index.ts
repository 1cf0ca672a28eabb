/**
 * filespooler: ordered, distributed job queues on plain files, and Petri nets of them.
 *
 * The main entry point: packets (make, read, encode a header), queues (write, list, read,
 * process with a command or an async function), queue diagnosis, nets, and the typed errors.
 * The pieces these are built from are in `filespooler/lowlevel`, the operator's tooling for nets
 * (serving, metrics, drawing, simulating) in `filespooler/net` (docs/api.md).
 */
export {
  FsplError,
  BadPacketError,
  ShortReadError,
  PayloadSealError,
  LockedError,
  NotFoundError,
  DuplicateSeqError,
  SeqOverflowError,
  BadSeqfileError,
  QueueError,
  ExecError,
  JobFailedError,
  DecoderError,
  NetError,
  NetRequestError,
  NetFileError,
  type FsplErrorCode,
} from './errors.js';
export type { Bytes, Ctime, CommandType, PacketHeader, Seal } from './packet/types.js';
export { encodeHeader, decodeHeader } from './packet/codec.js';
export { readPacket, metadataOf, type PacketMetadata, type ReadPacket, type PacketSource } from './packet/stream.js';
export { preparePacket, prepareHeader, captureEnv, makeHeader, type PrepareOptions, type PreparePacketOptions } from './prepare.js';
export {
  Queue,
  type JobEntry,
  type QueueOptions,
  type ScanOptions,
  type QueuedJob,
  type JobDetails,
  type OpenJob,
  type Executor,
} from './queue.js';
export type {
  Job,
  CommandOptions,
  ProcessQueueOptions,
  JobContext,
  JobFunction,
  ProcessEvent,
  WatchMode,
  ProcessSummary,
  OnError,
  OrderBy,
  OutputTo,
} from './process.js';
export { queueStatus, type QueueStatus, type QueueStatusOptions, type QueueState, type StatusProblem } from './status/report.js';
export { createLogger, silentLogger, type Logger, type LogLevel } from './log.js';
export {
  Net,
  defineNet,
  parseNetText,
  type NetDefinition,
  type TransitionDefinition,
  type FiringContext,
  type FiringInput,
  type TransitionFunction,
  type NetRunOptions,
  type HostRunOptions,
  type NetRunSummary,
  type NetEvent,
  type NetStatusReport,
  type PlaceStatus,
  type TransitionStatus,
  type NetState,
  type NetWarning,
  type Leftover,
  type PutOptions,
  type PutResult,
  type RetryOptions,
  type RetryResult,
  type RetryMove,
  type PauseRecord,
  type TokenListing,
  type SetAsideResult,
} from './net/index.js';
