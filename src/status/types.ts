/**
 * What `fspl queue-status` reports of a queue (report.ts makes it): the shapes of its JSON
 * (docs/json.md), field by field.
 */
import type { Ctime } from '../packet/types.js';
import type { RefusedPacket } from '../queue/refused.js';
import type { DamagedJob, OtherFile, TempFile, TooLargeFile, UndecodableFile } from './files.js';
import type { SeqRange } from './ranges.js';

/** The state of the queue's nextseq file. */
export interface NextSeqInfo {
  /**
   * - `present`: nextseq holds a valid number (`value`);
   * - `missing`: nextseq is absent but its lock file exists: the next `queue-process` (or
   *   `queue-get-next`) recreates it holding 1, so `value` is 1;
   * - `append-only`: neither nextseq nor its lock exists: an append-only queue, never processed;
   * - `invalid`: nextseq does not hold a number (`problem` says why, `text` is its start);
   * - `unreadable`: nextseq can not be read (`problem`).
   */
  state: 'present' | 'missing' | 'append-only' | 'invalid' | 'unreadable';
  /** The number processing goes on from (present and missing only). */
  value?: bigint;
  problem?: string;
  /** The first 40 characters of an invalid nextseq. */
  text?: string;
}

/** The queue lock, DIR/nextseq.lock. */
export interface LockInfo {
  path: string;
  /** `held`: another process (queue-process, queue-get-next, queue-set-next) holds it now. */
  state: 'free' | 'held' | 'missing';
}

/** A job, as the status reports it. */
export interface StatusJob {
  seq: bigint;
  filename: string;
  ctime: Ctime;
  /** Whole seconds from the job's creation to the check; negative if created "in the future". */
  ageSeconds: number;
  /** Whether the job is a sealed packet (its header records its payload's length and CRC-32). */
  sealed: boolean;
}

/**
 * - `ready`: the next job is present and `queue-process` would run `runnable` jobs now;
 * - `waiting`: the next job is present but not due yet (`notBefore`: prepare --not-before);
 * - `idle`: no job waits;
 * - `stuck`: jobs wait but none can run (the next one is missing), or something makes
 *   `queue-process` refuse the queue (a duplicate sequence number, a bad nextseq, a missing lock
 *   file): see `problems`;
 * - `append-only`: an append-only queue, never processed here.
 */
export type QueueState = 'ready' | 'waiting' | 'idle' | 'stuck' | 'append-only';

/** A reason why a queue is stuck. */
export interface StatusProblem {
  /**
   * - `next-missing`: jobs wait but the one numbered nextseq is not there (see `gap`);
   * - `next-too-large`: the only file that claims the number nextseq has a header over the
   *   queue's limit (maxHeaderSize, --max-header-size), so it is not read (see `tooLarge`);
   * - `duplicate-seq`: two job files share a sequence number (see `duplicates`);
   * - `bad-nextseq`: nextseq does not hold a number, or can not be read;
   * - `no-lock-file`: nextseq exists but nextseq.lock does not.
   */
  code: 'next-missing' | 'next-too-large' | 'duplicate-seq' | 'bad-nextseq' | 'no-lock-file';
  /** One sentence, e.g. "next job 5 is missing". */
  message: string;
}

export interface QueueStatus {
  /** The queue directory as given. */
  dir: string;
  decoder: string | undefined;
  /** When the check was made. */
  checkedAt: Ctime;
  state: QueueState;
  /** Whether processing can make progress: false exactly when `state` is `stuck`. */
  canProgress: boolean;
  /** Why the queue is stuck (empty unless it is). */
  problems: StatusProblem[];
  nextseq: NextSeqInfo;
  lock: LockInfo;
  /** Readable jobs in the queue, waiting or not. */
  jobs: number;
  /** Jobs at or after nextseq (every job in an append-only queue or when nextseq is unusable). */
  waiting: number;
  /** Their sequence numbers, as runs. */
  waitingSeqs: SeqRange[];
  /** How many jobs queue-process would run now, in sequence order, before reaching a gap or a job not due yet. */
  runnable: number;
  /**
   * The job where a run in sequence order stops because it is not due yet (prepare --not-before),
   * and when it is; undefined when the runnable jobs are all due (or a gap comes first).
   */
  notBefore: { seq: bigint; at: Date } | undefined;
  /**
   * The first missing number while jobs wait beyond it: `seq` is nextseq itself when the next
   * job is missing (`isNext`), otherwise the number after the last runnable job.
   */
  gap: { seq: bigint; isNext: boolean; presentBeyond: SeqRange[] } | undefined;
  /**
   * Jobs numbered below nextseq: already processed but kept (--never-delete, --on-error leave), or
   * skipped with queue-set-next. queue-process never runs them in sequence order.
   */
  belowNext: number;
  belowNextSeqs: SeqRange[];
  /** Sequence numbers held by more than one job file, with the files (directory order). */
  duplicates: Array<{ seq: bigint; files: string[] }>;
  /** The waiting jobs created first and last (by header ctime). */
  oldest: StatusJob | undefined;
  newest: StatusJob | undefined;
  undecodable: UndecodableFile[];
  /** Job files whose header is over the queue's limit (maxHeaderSize): not read, by name. */
  tooLarge: TooLargeFile[];
  /** How many readable jobs are sealed packets. */
  sealed: number;
  /** Sealed jobs whose file is shorter (or longer) than their seal says. */
  damaged: DamagedJob[];
  /** How many readable jobs are signed packets (src/sign/). */
  signed: number;
  /**
   * With allowed signers (queue-status --allowed-signers): the jobs in jobs/ whose header a
   * processor would refuse, and why (their payloads are judged only as they run).
   */
  unsigned: Array<{ seq: bigint; filename: string; why: string }>;
  /** Packets in refused/ (moved there unrun by a processor or a receiver), with their notes. */
  refused: RefusedPacket[];
  tempFiles: TempFile[];
  /** jobs/fspl-*.fspl.out files (written by --output-to saveboth). */
  outputFiles: string[];
  otherFiles: OtherFile[];
}

export interface QueueStatusOptions {
  /** The time to measure ages against (default: now). */
  now?: Date;
}
