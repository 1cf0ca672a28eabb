/**
 * filespooler: ordered, distributed job queues on plain files.
 * The public API; the fspl CLI is built on these same functions.
 */
export * from './errors.js';
export * from './packet/index.js';
export { SeqFile, parseSeq } from './seqfile.js';
export { FileLock, isLocked } from './lock.js';
export { Queue, genFilename, isJobFilename, compareBySeq, compareByTimestamp, type JobEntry, type QueueOptions } from './queue.js';
export { openThroughDecoder, readHeaderThroughDecoder, type DecodedJob, type ExitStatus } from './decoder.js';
export { runCommand, type RunOptions, type RunResult } from './exec.js';
export {
  processQueue,
  processFd,
  type Job,
  type CommandOptions,
  type ProcessQueueOptions,
  type ProcessSummary,
  type OnError,
  type OrderBy,
  type OutputTo,
} from './process.js';
export { captureEnv, takeSenderSeq, getSenderNext, setSenderNext, makeHeader, writePacketSync } from './prepare.js';
export { jobVariables, formatInfo, jobEnvironment, type JobLocation, type JobVariable } from './jobenv.js';
export { rfc3339Utc, rfc3339Local, now } from './time.js';
export { createLogger, silentLogger, type Logger, type LogLevel } from './log.js';
