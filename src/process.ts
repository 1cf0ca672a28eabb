/**
 * Processing jobs: one packet from stdin (stdin-process) or a whole queue (queue-process).
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { JobFailedError, QueueError, SeqOverflowError, describeSystemError } from './errors.js';
import { Finisher, nopRunAt } from './finish.js';
import { jobVariables, type JobLocation, type JobVariable } from './jobenv.js';
import { silentLogger, type Logger } from './log.js';
import { readHeaderSync } from './packet/read.js';
import type { PacketMetadata } from './packet/stream.js';
import { checkSealedStdin, judgeSeal } from './seal-check.js';
import { U64_MAX, type PacketHeader } from './packet/types.js';
import { compareByTimestamp, indexBySeq, type JobEntry } from './jobs.js';
import type { Queue } from './queue.js';
import { builtinOutcome, runCommandJob, runCommandQueueJob, runFunctionQueueJob, type Outcome } from './run-job.js';
import type { SeqFile } from './seqfile.js';
import { checkSeconds } from './timer.js';
import { JobsWatcher } from './watch.js';

export type OnError = 'retry' | 'delete' | 'leave';
export type OrderBy = 'sequence' | 'timestamp';
export type OutputTo = 'passboth' | 'saveboth';

/** A job as an executor sees it. */
export interface Job {
  header: PacketHeader;
  /** Set for queue jobs, absent for stdin-process. */
  location?: JobLocation;
  /** The FSPL_* variables, in info order. */
  variables: JobVariable[];
  /** The payload: a descriptor positioned after the header, or a stream (decoded packets). */
  payload: number | Readable;
}

export interface CommandOptions {
  /** Program to run (not through a shell). */
  command: string;
  /** Arguments given on our command line after `--`. */
  params?: string[];
  /** Append the job's own parameters after ours. */
  allowJobParams?: boolean;
  /** Do not give the payload to the command; it inherits our stdin instead. */
  ignorePayload?: boolean;
  /** Seconds before the command is killed with SIGKILL; a timeout is a failure. */
  timeout?: number;
}

export interface ProcessSummary {
  /** Jobs run (successful or not). */
  processed: number;
  succeeded: number;
  failed: number;
}

/**
 * Process the packet on a descriptor (normally fd 0): read exactly its header, then let the
 * command read the rest of the same descriptor. Returns whether the job succeeded.
 */
export async function processFd(fd: number, opts: CommandOptions & { logger?: Logger }): Promise<boolean> {
  const log = opts.logger ?? silentLogger;
  checkSeconds(opts.timeout, 'processFd: timeout');
  const header = readHeaderSync(fd);
  const job: Job = { header, variables: jobVariables(header), payload: fd };
  // A sealed payload is checked: from a file by its size, from a pipe as it is relayed.
  const check = builtinOutcome(header) || opts.ignorePayload ? undefined : checkSealedStdin(fd, header.seal);
  if (check?.payload) job.payload = check.payload;
  const outcome = builtinOutcome(header) ?? (check?.refused ? { ok: false, why: check.refused } : undefined) ?? judgeSeal(await runCommandJob(job, opts, 'inherit', log, { ...process.env }), check);
  log.debug('process', () => `Job ${header.seq} ${outcome.why}`);
  if (!outcome.ok) throw new JobFailedError(`Job ${header.seq} failed (${outcome.why})`);
  return true;
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
  /** Aborted when the job's timeout passes. */
  signal: AbortSignal;
}

/** A job executor written in JS: resolve for success; throw or reject for failure. */
export type JobFunction = (job: JobContext) => unknown;

/** What processQueue reports as it goes (the CLI's progress line is built on it). */
export type ProcessEvent =
  | { type: 'scan'; waiting: number }
  | { type: 'start'; seq: bigint; filename: string }
  | { type: 'end'; seq: bigint; filename: string; ok: boolean; why: string }
  | { type: 'idle' };

export interface WatchMode {
  /** Poll every this many seconds (for NFS, FUSE...) instead of using file system events. */
  pollInterval?: number;
}

export interface ProcessQueueOptions extends Partial<CommandOptions> {
  /** Run this function for each job instead of a command. */
  run?: JobFunction;
  onError?: OnError;
  neverDelete?: boolean;
  /** Stop after this many jobs. */
  maxJobs?: number;
  orderBy?: OrderBy;
  outputTo?: OutputTo;
  logger?: Logger;
  /** Stop cleanly between jobs when aborted (and stop waiting, in watch mode). */
  signal?: AbortSignal;
  /**
   * Keep running: when no job is ready, wait for new ones (file system events, or polling) and
   * go on. Ends when the signal aborts, maxJobs is reached, or a job fails under 'retry'.
   */
  watch?: boolean | WatchMode;
  /** Called as processing goes ('end' once the job is recorded). A listener that throws is logged and ignored. */
  onEvent?: (event: ProcessEvent) => void;
  /**
   * Sealed jobs in plain queues: read the payload once to check its CRC-32 before running the
   * job (its length is always checked, from the file size). Jobs read through a decoder, or by
   * a function executor, are checked as the payload is read, whatever this says.
   */
  verify?: boolean;
}

function assertWritable(queue: Queue, dir: string): void {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw new QueueError(`Cannot process queue ${JSON.stringify(queue.dir)}: ${describeSystemError(err)}`, { cause: err });
  }
}

/** What one processQueue call keeps between its steps. */
interface QueueRun {
  queue: Queue;
  opts: ProcessQueueOptions;
  log: Logger;
  onError: OnError;
  maxJobs: number;
  seqfile: SeqFile;
  /** Records finished jobs, durably (finish.ts). */
  finisher: Finisher;
  summary: ProcessSummary;
  /** Report an event; a listener's failure is logged, never thrown. */
  emit: (event: ProcessEvent) => void;
  /** Run one job with the command or the function. */
  runJob: (entry: JobEntry) => Promise<Outcome>;
  /** Sequence order: the number of the job to run next. */
  next: bigint;
  /** The last scan, by file name. */
  known: Map<string, JobEntry>;
  /** Timestamp order, watch mode: files already run (and left in place) in this run. */
  done: Set<string>;
}

/** The jobs of one pass: in timestamp order, the list to run; in sequence order, the jobs by number. */
type Pass = { byTimestamp: JobEntry[]; bySeq?: undefined } | { byTimestamp?: undefined; bySeq: Map<bigint, JobEntry> };

/**
 * Process a queue: in sequence order from nextseq (the default) or in timestamp order.
 * Holds the queue lock throughout. Failure handling follows onError; with 'retry' a failing job
 * stops processing with JobFailedError and stays in place. In watch mode, waits for new jobs
 * instead of returning when none is ready.
 *
 * The steps: openRun (the options, the executor), then under the lock finishInterrupted, and
 * passes until nothing is left to run (or, watching, until stopped): planPass, runPass, and for
 * each job runOne and recordFinished.
 */
export async function processQueue(queue: Queue, opts: ProcessQueueOptions): Promise<ProcessSummary> {
  const { log, emit, summary, runJob } = openRun(queue, opts);
  const timestampOrder = opts.orderBy === 'timestamp';
  const seqfile = queue.lockSeqfile();
  const finisher = new Finisher(queue, seqfile, log);
  let watcher: JobsWatcher | undefined;
  try {
    if (opts.watch) {
      const mode = typeof opts.watch === 'object' ? opts.watch : {};
      // Before the first scan, so that a job arriving in between is not missed.
      watcher = new JobsWatcher(queue.jobsDir, { pollInterval: mode.pollInterval, logger: log });
      log.debug('process', () => `Watching ${JSON.stringify(queue.jobsDir)} for new jobs (${watcher!.mode})`);
    }
    const next = await finisher.recover(seqfile.read());
    log.debug('process', () => `Read next ID ${next} from seqfile`);
    // Unlike the reference, make sure a job's completion can be recorded before running any:
    // otherwise the first job runs, nextseq or the job file can't be updated, and it runs again.
    if (!timestampOrder) assertWritable(queue, queue.dir);
    if (!opts.neverDelete) assertWritable(queue, queue.jobsDir);
    const run: QueueRun = { queue, opts, log, onError: opts.onError ?? 'retry', maxJobs: opts.maxJobs ?? Infinity, seqfile, finisher, summary, emit, runJob, next, known: new Map(), done: new Set() };
    for (;;) {
      run.known = await queue.rescan(run.known);
      const stop = await runPass(run, planPass(run, timestampOrder));
      if (stop || !watcher) break;
      finisher.settle(); // nothing half-finished while we wait
      emit({ type: 'idle' });
      if (!(await watcher.wait(opts.signal))) break;
    }
    finisher.settle();
    return summary;
  } finally {
    watcher?.close();
    finisher.close();
    seqfile.release();
  }
}

/** Check processQueue's options and choose its executor; nothing is locked yet. */
function openRun(queue: Queue, opts: ProcessQueueOptions): Pick<QueueRun, 'log' | 'emit' | 'summary' | 'runJob'> {
  const log = opts.logger ?? queue.logger;
  const emit = (event: ProcessEvent) => {
    try {
      opts.onEvent?.(event);
    } catch (err) {
      // A listener (a progress display, say) must not break the run between a job and its record.
      log.warn('process', `onEvent listener failed: ${describeSystemError(err)}`);
    }
  };
  const summary: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
  if ((opts.run === undefined) === (opts.command === undefined)) {
    throw new TypeError('processQueue: give exactly one of `command` and `run`');
  }
  checkSeconds(opts.timeout, 'processQueue: timeout');
  const fn = opts.run;
  const cmdOpts = opts as ProcessQueueOptions & CommandOptions;
  // Frozen: the addon's packing of it (jobenv.ts ChildEnv) is then made once for the run.
  const baseEnv = Object.freeze({ ...process.env });
  const runJob = (entry: JobEntry) =>
    fn ? runFunctionQueueJob(queue, entry, fn, opts, log) : runCommandQueueJob(queue, entry, cmdOpts, log, baseEnv);
  return { log, emit, summary, runJob };
}

/**
 * The jobs of the next pass, from the last scan. Sequence order refuses a queue where two files
 * share a number, wherever they are (as the reference and its manual do); timestamp order does
 * not care.
 */
function planPass(run: QueueRun, timestampOrder: boolean): Pass {
  if (timestampOrder) {
    const byTimestamp = [...run.known.values()].filter((e) => !run.done.has(e.filename)).sort(compareByTimestamp);
    run.emit({ type: 'scan', waiting: byTimestamp.length });
    return { byTimestamp };
  }
  const bySeq = indexBySeq([...run.known.values()]);
  let waiting = 0;
  for (const seq of bySeq.keys()) if (seq >= run.next) waiting++;
  run.emit({ type: 'scan', waiting });
  return { bySeq };
}

/** Run the pass's jobs one after the other; true when the run must stop (limit reached, aborted). */
async function runPass(run: QueueRun, pass: Pass): Promise<boolean> {
  let index = 0;
  for (;;) {
    if (run.summary.processed >= run.maxJobs) {
      run.log.debug('process', () => `Stopping: reached the limit of ${run.maxJobs} jobs`);
      return true;
    }
    if (run.opts.signal?.aborted) return true;
    let entry: JobEntry | undefined;
    if (pass.byTimestamp) {
      entry = pass.byTimestamp[index++];
    } else {
      entry = pass.bySeq.get(run.next);
      if (entry && run.next === U64_MAX) throw new SeqOverflowError(run.queue.seqfilePath);
    }
    if (!entry) {
      run.log.debug('process', 'Stopping: there is no job with the next sequence number');
      return false;
    }
    const nops = pass.bySeq && run.opts.outputTo !== 'saveboth' ? nopRunAt(pass.bySeq, run.next, run.maxJobs - run.summary.processed) : [];
    if (nops.length > 0) runNops(run, nops);
    else await runOne(run, entry, pass.byTimestamp !== undefined);
  }
}

/** Run one job and record its end; under 'retry' a failure ends the run (JobFailedError). */
async function runOne(run: QueueRun, entry: JobEntry, timestampOrder: boolean): Promise<void> {
  const { log, emit, summary } = run;
  const seq = entry.header.seq;
  log.debug('process', () => `Processing job ${seq} from ${entry.filename}`);
  emit({ type: 'start', seq, filename: entry.filename });
  const outcome = await run.runJob(entry);
  summary.processed++;
  if (outcome.ok) summary.succeeded++;
  else summary.failed++;
  log.debug('process', () => `Job ${seq} ${outcome.why}`);
  const ended: ProcessEvent = { type: 'end', seq, filename: entry.filename, ok: outcome.ok, why: outcome.why };
  if (!outcome.ok && run.onError === 'retry') {
    emit(ended);
    throw new JobFailedError(`Job ${seq} failed (${outcome.why}); stopping, the job stays in the queue`);
  }
  recordFinished(run, entry, outcome, timestampOrder);
  emit(ended); // after the job is recorded: listeners see the queue as it now is
}

/**
 * Record a finished job, durably (finish.ts): a note naming it, nextseq past it (sequence
 * order), its file deleted unless kept.
 */
function recordFinished(run: QueueRun, entry: JobEntry, outcome: Outcome, timestampOrder: boolean): void {
  const { seq } = entry.header;
  const remove = !run.opts.neverDelete && (outcome.ok || run.onError === 'delete');
  run.finisher.finishJob({ seq, filename: entry.filename, order: timestampOrder ? 'timestamp' : 'sequence', remove });
  if (timestampOrder) run.done.add(entry.filename);
  else run.next = seq + 1n;
  if (remove) run.known.delete(entry.filename);
}

/**
 * A run of NOP jobs in sequence order (nopRunAt): nothing to run, so they are recorded as one
 * (finish.ts), and each is reported once they are.
 */
function runNops(run: QueueRun, nops: JobEntry[]): void {
  const remove = !run.opts.neverDelete;
  run.finisher.finishNops(nops, remove);
  run.next = nops[nops.length - 1]!.header.seq + 1n;
  run.summary.processed += nops.length;
  run.summary.succeeded += nops.length;
  for (const { header, filename } of nops) {
    const { seq } = header;
    if (remove) run.known.delete(filename);
    const { why } = builtinOutcome(header)!;
    run.log.debug('process', () => `Job ${seq} from ${filename} ${why}`);
    run.emit({ type: 'start', seq, filename });
    run.emit({ type: 'end', seq, filename, ok: true, why });
  }
}
