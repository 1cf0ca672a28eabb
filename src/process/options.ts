/**
 * The contracts of a run of jobs (processFd, processQueue, processQueues, Queue.process): its
 * options, its events and its summary. Apart from the code that runs, so that every file of
 * process/ depends on them and none on another for its types.
 */
import type { Logger } from '../base/log.js';
import type { JobFunction, OrderBy } from '../queue/types.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import type { ListenOptions } from '../web/server.js';
import type { CommandLine } from './command.js';
import type { OnFinishOptions } from './on-finish.js';
import type { OutcomeWord } from './outcome.js';
import type { StopOptions } from './run-stop.js';

export type OnError = 'retry' | 'delete' | 'leave';
export type OutputTo = 'passboth' | 'saveboth';

export interface CommandOptions {
  /**
   * Program to run (not through a shell), or the program and its first arguments as a list
   * (`['sh', '-c', 'cat']`); `params` come after either.
   */
  command: CommandLine;
  /** Arguments given on our command line after `--`. */
  params?: string[];
  /** Append the job's own parameters after ours. */
  allowJobParams?: boolean;
  /** Do not give the payload to the command; it inherits our stdin instead. */
  ignorePayload?: boolean;
  /** Seconds before the command's process group is killed with SIGKILL; a timeout is a failure. */
  timeout?: number;
}

export interface ProcessSummary {
  /** Jobs run (successful or not). */
  processed: number;
  succeeded: number;
  failed: number;
}

/** What one queue's run reports as it goes: a scan, and each job's start and end. */
export type QueueJobEvent =
  | { type: 'scan'; waiting: number }
  | { type: 'start'; seq: bigint; filename: string }
  /** The next job, `seq`, is not due before `until` (its not-before time): the queue waits (said once per job). */
  | { type: 'waiting'; seq: bigint; until: Date }
  /**
   * The job is done and recorded; or, `interrupted`, stopped by the run's interrupt and left in the
   * queue; or, `refused`, not let in by its signature (allowedSigners): moved to refused/ unrun,
   * its number still waited for (when refused as a scan read it, no 'start' came before).
   * `outcome`, on a job run and recorded: how it ended, in the words of the metrics.
   */
  | {
      type: 'end';
      seq: bigint;
      filename: string;
      ok: boolean;
      why: string;
      interrupted?: true;
      refused?: true;
      /** With retries or a failed-jobs queue: what became of it (`retry`: tried again at `retryAt`; `moved`). */
      outcome?: OutcomeWord;
      retryAt?: Date;
    };

/** What processQueue reports as it goes (the CLI's progress line is built on it). */
export type ProcessEvent = QueueJobEvent | { type: 'idle' };

/**
 * Where a watching run serves its queues' page and /metrics (listen.ts): ListenOptions (port 0 by
 * default: any free one; 127.0.0.1 by default), and who is told the page's address.
 */
export interface QueuePageOptions extends ListenOptions {
  /** Called with the page's address (http://127.0.0.1:PORT/) once it listens. */
  onListening?: (url: string) => void;
}

export interface WatchMode {
  /** Poll every this many seconds (for NFS, FUSE...) instead of using file system events. */
  pollInterval?: number;
}

/** A run whose jobs run a command: CommandOptions, and no `run`. */
export interface CommandExecutor extends CommandOptions {
  run?: never;
}

/** A run whose jobs run a JS function: `run`, and none of a command's options. */
export interface FunctionExecutor {
  /** Run this function for each job instead of a command. */
  run: JobFunction;
  command?: never;
  params?: never;
  allowJobParams?: never;
  ignorePayload?: never;
}

/**
 * What runs a run's jobs: a command or a function, exactly one (a TypeScript caller that gives
 * both, or neither, does not compile; a JavaScript one gets a TypeError from runContext).
 */
export type ExecutorOptions = CommandExecutor | FunctionExecutor;

/** The options of a run that do not depend on its executor. */
export interface RunSettings extends StopOptions {
  /** Seconds a job may take: its command's process group is then killed, its function's signal aborted. */
  timeout?: number;
  onError?: OnError;
  neverDelete?: boolean;
  /** Stop after this many jobs. */
  maxJobs?: number;
  orderBy?: OrderBy;
  outputTo?: OutputTo;
  logger?: Logger;
  /**
   * Keep running: when no job is ready, wait for new ones (file system events, or polling) and
   * go on. Ends when the signal aborts, maxJobs is reached, or a job fails under 'retry'.
   */
  watch?: boolean | WatchMode;
  /**
   * Sealed jobs in plain queues: read the payload once to check its CRC-32 before running the
   * job (its length is always checked, from the file size). Jobs read through a decoder, or by
   * a function executor, are checked as the payload is read, whatever this says.
   */
  verify?: boolean;
  /**
   * Try a failing job again, up to this many more times (a packet's own `retries`, prepare
   * --retries, may ask for fewer); the queue waits for it meanwhile. The tries are counted
   * durably in the queue directory (retry.ts); the job sees FSPL_JOB_ATTEMPT. Without it, a
   * failure is onError's, as always.
   */
  retries?: number;
  /** Seconds before the first retry, doubling for each one after (default 10). */
  retryDelay?: number;
  /** The longest wait between two tries, in seconds (default 3600). */
  retryMaxDelay?: number;
  /**
   * A failed-jobs queue (made if it is not one; several queues may share it): a job that failed
   * its last try moves there, exactly once, with the facts of its failure in its header, and the
   * queue goes on with the next job. Plain queues only (no decoder).
   */
  failedTo?: string;
  /**
   * With watch: serve the run's queues on a read-only page, with /metrics for Prometheus, while it
   * runs (listen.ts); closed when the run ends. Without watch: a TypeError.
   */
  listen?: QueuePageOptions;
  /**
   * A finish hook (on-finish.ts): a shell command run after each job that ran, once its record is
   * durable, with the job's FSPL_* variables and FSPL_JOB_OUTCOME (an OutcomeWord),
   * FSPL_JOB_EXIT_STATUS, FSPL_JOB_DURATION_MS and FSPL_JOB_ATTEMPT. One at a time across the run;
   * the queue waits for it (at most its timeout). Its failure is logged, never the job's.
   */
  onFinish?: OnFinishOptions;
}

/** The options of a run that every queue of it shares (processQueue's, without its listener). */
export type ProcessRunOptions = RunSettings & ExecutorOptions;

export type ProcessQueueOptions = ProcessRunOptions & {
  /** Called as processing goes ('end' once the job is recorded). A listener that throws is logged and ignored. */
  onEvent?: (event: ProcessEvent) => void;
  /**
   * Start each job only once the `end` event of the one before it has been given. Otherwise a
   * command's next job may start as the one before it exits (a chained start, queue-chain.ts),
   * before that event: a listener that draws on the terminal the jobs write to needs the gap.
   */
  startAfterEnd?: boolean;
};

/** Queue.process's options: the executor is its first argument; a command's options apply to a command only. */
export type QueueProcessOptions = RunSettings &
  Omit<CommandOptions, 'command'> &
  Pick<ProcessQueueOptions, 'onEvent' | 'startAfterEnd'> & {
    /** Run only packets these signers signed, for this run (as QueueOptions.allowedSigners; src/sign/). */
    allowedSigners?: AllowedSigners;
  };

export type ProcessQueuesOptions = ProcessRunOptions & {
  /** At most this many jobs at once, across the queues (default 1). Jobs of one queue never overlap. */
  jobs?: number;
  /** Every queue directory directly under each of these (with watch, also those made later). */
  queuesIn?: string | readonly string[];
  /** For the queues given by path and those found under queuesIn: see QueueOptions. */
  decoder?: string;
  decoderTimeout?: number;
  /** With decoder: no job runs before its decoder has exited with status 0 (QueueOptions.verifyDecoder). */
  verifyDecoder?: boolean;
  maxHeaderSize?: number;
  allowedSigners?: AllowedSigners;
  onEvent?: (event: QueuesEvent) => void;
};

/** What processQueues reports as it goes; `queue` is the queue directory as given (or found). */
export type QueuesEvent =
  | (QueueJobEvent & { queue: string })
  /** A queue joined the run (at the start, or made later under a --queues-in parent). */
  | { type: 'added'; queue: string }
  /** A queue under a --queues-in parent is gone: forgotten. */
  | { type: 'removed'; queue: string }
  /** Another processor holds the queue's lock: skipped (with watch, looked at again on its next change). */
  | { type: 'skipped'; queue: string; why: string }
  /** A job failed under 'retry', or the queue can't be processed: it stops, the others go on. */
  | { type: 'stopped'; queue: string; error: Error }
  /** Watching: nothing runs and nothing is ready to run. */
  | { type: 'idle' };

export interface QueueResult extends ProcessSummary {
  queue: string;
  /**
   * done: ran what it could; stopped: a job failed under 'retry' or the queue could not be
   * processed (error says why); skipped: another processor held its lock; removed: its
   * directory went away during the run.
   */
  state: 'done' | 'stopped' | 'skipped' | 'removed';
  error?: Error;
}

export interface ProcessQueuesSummary extends ProcessSummary {
  /** Every queue of the run, in the order they joined it. */
  queues: QueueResult[];
}
