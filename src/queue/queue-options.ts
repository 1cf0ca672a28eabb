/** How a Queue is opened (QueueOptions), scanned (ScanOptions) and what it runs (Executor). */
import type { Logger } from '../base/log.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import type { ScanFailure } from './job-headers.js';
import type { JobFunction } from './types.js';

export interface ScanOptions {
  /**
   * Called for each job file whose header can not be read, which the scan then leaves out
   * (queue-status diagnoses them). Without it, such files are only logged: at debug level, as
   * the reference does, but a header over maxHeaderSize (HeaderTooLargeError) with a warning,
   * once per file for the life of the Queue object.
   */
  onFailure?: ScanFailure;
}

/** What Queue.process runs: a command (name, or name and arguments) or an async function. */
export type Executor = string | readonly string[] | JobFunction;

export interface QueueOptions {
  /** Shell command that turns a stored job file into a packet (e.g. `zcat`, `gpg -d`). */
  decoder?: string;
  /**
   * Seconds a decoder may take to give a job's header before it is killed; the read then fails
   * with DecoderError (timedOut). Default: no limit, as the reference.
   */
  decoderTimeout?: number;
  /**
   * With a decoder: run no job, and give no payload, before the decoder has exited with status
   * 0. Its whole output is spooled to a nameless file in $TMPDIR first (decoder.ts
   * spoolDecoded), and a job runs on that file as on a plain job file; a decoder that fails fails
   * the job without it having run. Without it (the default, as the reference), the job reads the
   * decoder's output as it comes, and a decoder's failure is known only once it was read
   * (docs/security.md, "Decoders").
   */
  verifyDecoder?: boolean;
  /**
   * The longest header metadata (bytes after its 30-byte prefix) that is read, default 8 MiB
   * (DEFAULT_MAX_HEADER_SIZE), at most 200 MiB. A job file whose header is longer is not read
   * (a scan leaves it out, its number waits as a missing job's would; reading it directly fails
   * with HeaderTooLargeError): no file can make a scan hold more memory than about 16 times this.
   */
  maxHeaderSize?: number;
  /**
   * Run only packets signed by a key these allow for namespace `fspl` (an extension; src/sign/,
   * docs/security.md). A processor moves any other packet to refused/ (Queue.refuse) unrun.
   */
  allowedSigners?: AllowedSigners;
  logger?: Logger;
}
