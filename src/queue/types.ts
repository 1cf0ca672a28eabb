/** The job's types, in one place. Types only: the modules that make these values re-export them. */
import type { Readable } from 'node:stream';
import type { PacketMetadata } from '../packet/stream.js';
import type { PacketHeader } from '../packet/types.js';
import type { Signer } from '../sign/packet-signature.js';

/** A job file and its header, as a scan reads them. */
export interface JobEntry {
  /** File name inside jobs/. */
  filename: string;
  header: PacketHeader;
  /** Who signed it, once a queue with allowed signers has checked it (src/sign/). */
  signer?: Signer;
}

/** Where a queue job is: FSPL_JOB_QUEUEDIR, FSPL_JOB_FILENAME and FSPL_JOB_FULLPATH come from it. */
export interface JobLocation {
  /** The queue directory exactly as the user gave it. */
  queuedir: string;
  /** The file name inside jobs/. */
  filename: string;
  /** Which try of the job this is, from 1, when the run retries failing jobs (FSPL_JOB_ATTEMPT). */
  attempt?: number;
}

/** One FSPL_* variable, its name and value as bytes. */
export type JobVariable = [name: Buffer, value: Buffer];

/** How a process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A job file read through its queue's decoder (openThroughDecoder). */
export interface DecodedJob {
  header: PacketHeader;
  /** The decoder's stdout, positioned just after the header: the payload. */
  payload: Readable;
  /** Resolves when the decoder has exited. */
  exited: Promise<ExitStatus>;
  /** Stop the decoder early (the payload is not wanted). */
  abort(): void;
  /**
   * Whether we stopped the decoder: abort() before its output ended, or SIGKILL because it had
   * not exited 5 s after its output ended. Its exit status then says nothing about the job.
   */
  readonly aborted: boolean;
}

/** A plain queue's job file, opened: its descriptor, positioned after the header. */
export interface PlainOpenJob {
  readonly kind: 'plain';
  header: PacketHeader;
  /** The job file's descriptor, positioned where the payload starts. */
  payload: number;
  /** Where the payload starts in the job file (the header's length). */
  payloadOffset: number;
  close(): void;
}

/** A job file opened through its queue's decoder: the payload is the decoder's output. */
export interface DecodedOpenJob {
  readonly kind: 'decoded';
  header: PacketHeader;
  /** The decoder's output, after the header. */
  payload: Readable;
  decoded: DecodedJob;
  close(): void;
}

/** A job file opened for reading (Queue.openJob): header read, payload ready. close() releases it. */
export type OpenJob = PlainOpenJob | DecodedOpenJob;

/** A job as the queue's iterator gives it: metadata now, payload on request. */
export interface QueuedJob extends PacketMetadata {
  filename: string;
  /** Full path of the job file. */
  path: string;
  /** Open the payload (through the decoder, if any). Read it to the end or destroy it. */
  payload(): Promise<Readable>;
}

/** A job's metadata and the FSPL_* variables its command would get. */
export interface JobDetails extends PacketMetadata {
  filename: string;
  path: string;
  /** FSPL_* variables, as `queue-info` prints them (bytes that are not UTF-8 replaced). */
  variables: Record<string, string>;
}

/** A job as a command executor sees it. */
export interface Job {
  header: PacketHeader;
  /** Set for queue jobs, absent for stdin-process. */
  location?: JobLocation;
  /** The FSPL_* variables, in info order. */
  variables: JobVariable[];
  /** The payload: a descriptor positioned after the header, or a stream (decoded packets). */
  payload: number | Readable;
  /** Who signed it, when signatures were checked (FSPL_JOB_SIGNER, FSPL_JOB_SIGNER_KEY). */
  signer?: Signer;
}

/** What a JS function executor receives for each job. */
export interface JobContext extends PacketMetadata {
  /** The job file's name inside jobs/. */
  filename: string;
  /** The queue directory, as given. */
  queuedir: string;
  /** The FSPL_* variables a command would get (bytes that are not UTF-8 replaced). */
  variables: Record<string, string>;
  /** The payload: read as much as you need; what is left unread is discarded. */
  payload: Readable;
  /** Aborted when the job's timeout passes, or when the run is interrupted (its `interrupt`). */
  signal: AbortSignal;
  /** Who signed it, when the queue checks signatures (allowedSigners). */
  signer?: Signer;
}

/** A job executor written in JS: resolve for success; throw or reject for failure. */
export type JobFunction = (job: JobContext) => unknown;

/** The order jobs are listed and run in: by sequence number (the reference's), or by timestamp. */
export type OrderBy = 'sequence' | 'timestamp';
