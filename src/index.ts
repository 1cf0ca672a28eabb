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
  UnknownNameError,
  NetFileError,
  SendError,
  DestinationError,
  type FsplErrorCode,
  type NetNameKind,
} from './base/errors.js';
export type { PacketHeader } from './packet/types.js';
export { encodeHeader, decodeHeader } from './packet/codec.js';
export { readPacket, metadataOf, type PacketMetadata, type ReadPacket } from './packet/stream.js';
export { preparePacket, makeHeader, type PreparePacketOptions } from './packet/prepare.js';
export { Queue, type QueueOptions, type QueuedJob } from './queue/queue.js';
// Queue.process, declared and installed on Queue there (the queue never imports its consumer).
import './process/queue-process.js';
export type { JobContext, JobFunction, ProcessQueueOptions, ProcessEvent, ProcessSummary } from './process/process.js';
export type { StopOptions } from './process/stopping.js';
export { processQueues, type ProcessQueuesOptions, type ProcessQueuesSummary, type QueueResult, type QueuesEvent } from './process/process-many.js';
export { queueStatus, type QueueStatus } from './status/report.js';
export { createLogger } from './base/log.js';
export { sendQueue, type QueueSendOptions, type QueueSendSummary, type QueueSendEvent } from './send/queue-send.js';
export { parseDestination, type Destination, type SshDestination } from './send/destination.js';
export { Net, defineNet, parseNetText, type NetDefinition, type NetRunOptions, type NetEvent, type NetStatusReport } from './net/index.js';
