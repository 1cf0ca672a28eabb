/**
 * filespooler: ordered, distributed job queues on plain files.
 * The public API; the fspl CLI is built on these same functions.
 */
export * from './errors.js';
export * from './packet/index.js';
export { SeqFile, parseSeq } from './seqfile.js';
export { FileLock, isLocked } from './lock.js';
export {
  Queue,
  genFilename,
  isJobFilename,
  compareBySeq,
  compareByTimestamp,
  indexBySeq,
  type JobEntry,
  type QueueOptions,
  type ScanOptions,
  type QueuedJob,
  type JobDetails,
  type OpenJob,
  type Executor,
} from './queue.js';
export { openThroughDecoder, readHeaderThroughDecoder, checkedPayload, type DecodedJob, type ExitStatus } from './decoder.js';
export { runCommand, type RunOptions, type RunResult } from './exec.js';
export {
  processQueue,
  processFd,
  type Job,
  type CommandOptions,
  type ProcessQueueOptions,
  type JobContext,
  type JobFunction,
  type ProcessEvent,
  type WatchMode,
  type ProcessSummary,
  type OnError,
  type OrderBy,
  type OutputTo,
} from './process.js';
export {
  preparePacket,
  prepareHeader,
  captureEnv,
  takeSenderSeq,
  getSenderNext,
  setSenderNext,
  makeHeader,
  writePacketSync,
  type PrepareOptions,
  type PreparePacketOptions,
} from './prepare.js';
export { JobsWatcher, type WatchOptions } from './watch.js';
export { jobVariables, variablesRecord, formatInfo, jobEnvironment, type JobLocation, type JobVariable } from './jobenv.js';
export { rfc3339Utc, rfc3339Local, now } from './time.js';
export { createLogger, silentLogger, type Logger, type LogLevel } from './log.js';
export { queueStatus, sniffBytes, readFileHead, diagnoseUnreadable, describeKind, suggestedDecoder, toRanges, formatRanges, SNIFF_LENGTH, type QueueStatus, type QueueStatusOptions, type QueueState, type StatusProblem, type NextSeqInfo, type LockInfo, type StatusJob, type UndecodableFile, type TempFile, type OtherFile, type FileType, type SeqRange, type SniffKind } from './status.js';
export { bytesToJson, bytesFromJson, bigintToJson, ctimeToJson, headerToJson, jobEntryToJson, jobInfoToJson, nextseqToJson, rangesToJson, statusToJson, toJsonDocument, toJsonLine, type JsonValue, type JsonBytes, type JsonCtime, type JsonHeader } from './json.js';
export {
  Net,
  defineNet,
  loadNetFile,
  parseNetText,
  allocateWorkers,
  type NetDefinition,
  type NetModel,
  type TransitionDefinition,
  type FiringContext,
  type FiringInput,
  type TransitionFunction,
  type NetRunOptions,
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
  type HostRunOptions,
  sendPacket,
  sendPackets,
  type SendResult,
  type OutgoingPacket,
} from './net/index.js';
