/**
 * filespooler: ordered, distributed job queues on plain files, and Petri nets of them.
 *
 * The main entry point: packets (make, read, encode a header), queues (write, list, read,
 * process with a command or an async function), queue diagnosis, nets, and the typed errors.
 * The pieces these are built from are in `filespooler/lowlevel`, the operator's tooling for nets
 * (serving, metrics, drawing, simulating) in `filespooler/net` (docs/api.md).
 *
 * It is kept to what a newcomer reads in one screen: the functions and classes, and the types
 * of the options and results a program names most often. Every other type (a job's details,
 * a status's parts, a net definition's pieces) is exported by `filespooler/lowlevel`.
 */
export {
  BadPacketError,
  BadSeqfileError,
  DecoderError,
  DestinationError,
  DuplicateSeqError,
  ExecError,
  ExecTooLargeError,
  FsplError,
  type FsplErrorCode,
  HeaderTooLargeError,
  JobFailedError,
  LockedError,
  NetError,
  NetFileError,
  type NetNameKind,
  NetRequestError,
  NotFoundError,
  PayloadSealError,
  QueueError,
  ReceiveError,
  ReceiveRefusedError,
  RetryDueError,
  SendError,
  SeqOverflowError,
  ShortReadError,
  SignatureError,
  UnknownNameError,
  UntrustedFileError,
} from './base/errors.js';
export { decodeHeader, encodeHeader } from './packet/codec.js';
export { makeHeader } from './packet/prepare.js';
export { metadataOf, type PacketMetadata, type ReadPacket, readPacket } from './packet/stream.js';
export type { PacketHeader } from './packet/types.js';
export { type RetriedJob, type RetryFailedOptions, retryFailedJobs } from './queue/failed-jobs.js';
export { Queue, type QueuedJob, type QueueOptions } from './queue/queue.js';
export { AllowedSigners } from './sign/allowed-signers.js';
export type { Signer } from './sign/packet-signature.js';
export { type PreparePacketOptions, preparePacket, type SignWith } from './sign/prepare-signed.js';
export { verifyPacket } from './sign/verify-packet.js';

// Queue.process, declared and installed on Queue there (the queue never imports its consumer).
import './process/queue-process-method.js';
// Queue.writeFromFd, declared and installed on Queue there (processing a queue does not load its checks).
import './queue/write-from-fd.js';

export { createLogger } from './base/log.js';
export {
  defineNet,
  Net,
  type NetDefinition,
  type NetEvent,
  type NetRunOptions,
  type NetStatusReport,
  parseNetText,
} from './net/index.js';
export { processQueues } from './process/many-queues.js';
export type { OnFinishOptions } from './process/on-finish.js';
export type { ProcessQueuesOptions, ProcessQueuesSummary, QueueResult, QueuesEvent } from './process/options.js';
export { OUTCOME_WORDS, type OutcomeWord } from './process/outcome.js';
export type { JobContext, JobFunction, ProcessEvent, ProcessQueueOptions, ProcessSummary } from './process/process.js';
export type { StopOptions } from './process/run-stop.js';
export { type Destination, parseDestination, type SshDestination } from './send/destination.js';
export { type QueueSendStatus, queueSendStatus } from './send/queue-send-status.js';
export {
  type QueueSendEvent,
  type QueueSendOptions,
  type QueueSendState,
  type QueueSendSummary,
  sendQueue,
} from './send/send-queue.js';
export { type QueueStatus, queueStatus } from './status/report.js';
