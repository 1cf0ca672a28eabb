/**
 * One queue's run of queue-process: its lock, its next number, its scans and the jobs it runs.
 * processQueue (one queue) and processQueues (many, process-many.ts) are both made of these steps:
 *
 *   lock       take nextseq.lock (LockedError if another processor has it), finish a job that a
 *              killed run left half-recorded (finishInterrupted), make sure a job's end can be
 *              recorded before running any
 *   peek       without the lock: is there a job to run? (processQueues, to choose what to lock)
 *   scan       list jobs/, reading only the headers not read before, and plan the pass
 *   takeNext   the pass's next job: the one numbered nextseq, or the oldest not yet run
 *   runOne     run it (the command or the function), then recordFinished
 *   release    give the lock back, with its note cleared
 */
import fs from 'node:fs';
import { JobFailedError, QueueError, SeqOverflowError, describeSystemError } from './errors.js';
import { fsyncDir } from './durable.js';
import type { Logger } from './log.js';
import { U64_MAX } from './packet/types.js';
import { compareByTimestamp, indexBySeq, isJobFilename, type JobEntry } from './jobs.js';
import type { OnError, ProcessSummary, QueueJobEvent, ProcessRunOptions } from './process.js';
import type { Queue } from './queue.js';
import type { Outcome } from './run-job.js';
import { SeqFile } from './seqfile.js';

/** What every queue of one run shares: the options, and the executor chosen from them. */
export interface RunContext {
  opts: ProcessRunOptions;
  log: Logger;
  onError: OnError;
  timestampOrder: boolean;
  /** Run one job of a queue with the command or the function. */
  runJob: (queue: Queue, entry: JobEntry) => Promise<Outcome>;
}

/** The jobs of one pass: in timestamp order, the list to run; in sequence order, the jobs by number. */
type Pass = { byTimestamp: JobEntry[]; bySeq?: undefined } | { byTimestamp?: undefined; bySeq: Map<bigint, JobEntry> };

export class QueueRun {
  readonly queue: Queue;
  readonly summary: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
  /** Sequence order: the number of the job to run next (as last read or written). */
  next = 0n;
  private readonly ctx: RunContext;
  private readonly emit: (event: QueueJobEvent) => void;
  private seqfile: SeqFile | undefined;
  /** The last scan, by file name. */
  private known = new Map<string, JobEntry>();
  /** Timestamp order: files already run (and left in place) in this run. */
  private readonly done = new Set<string>();
  private pass: Pass | undefined;
  private index = 0;

  constructor(queue: Queue, ctx: RunContext, emit: (event: QueueJobEvent) => void) {
    this.queue = queue;
    this.ctx = ctx;
    this.emit = emit;
  }

  get log(): Logger {
    return this.ctx.log;
  }

  get locked(): boolean {
    return this.seqfile !== undefined;
  }

  /** Whether a pass is planned (a scan since the last change of nextseq by someone else). */
  get planned(): boolean {
    return this.pass !== undefined;
  }

  /**
   * Take the queue's lock: LockedError if another processor holds it (at once with `wait:
   * false`, after a moment otherwise: Queue.lockSeqfile).
   */
  lock(options: { wait?: boolean } = {}): void {
    const { queue, ctx } = this;
    const seqfile = queue.lockSeqfile(options);
    try {
      const next = finishInterrupted(queue, seqfile, seqfile.read(), ctx.log);
      ctx.log.debug('process', () => `Read next ID ${next} from seqfile`);
      // Unlike the reference, make sure a job's completion can be recorded before running any:
      // otherwise the first job runs, nextseq or the job file can't be updated, and it runs again.
      if (!ctx.timestampOrder) assertWritable(queue, queue.dir);
      if (!ctx.opts.neverDelete) assertWritable(queue, queue.jobsDir);
      // Another processor moved nextseq while we did not hold the lock: the pass is stale.
      if (this.pass && next !== this.next) this.pass = undefined;
      this.next = next;
      this.seqfile = seqfile;
    } catch (err) {
      seqfile.release();
      throw err;
    }
  }

  /**
   * Without the lock: scan, and say whether the queue has a job to run now. The number read is
   * a hint (nextseq is replaced whole, by a rename); lock() reads it again, under the lock.
   */
  async peek(): Promise<boolean> {
    if (!this.locked) {
      const next = SeqFile.peek(this.queue.seqfilePath);
      if (next === undefined) return true; // no number to read: lock() says what is wrong
      this.next = next;
    }
    await this.scan();
    return this.hasNext();
  }

  /** List jobs/ again (reading only headers not read before) and plan the pass. */
  async scan(): Promise<void> {
    this.known = await this.queue.rescan(this.known);
    if (this.ctx.timestampOrder) {
      const byTimestamp = [...this.known.values()].filter((e) => !this.done.has(e.filename)).sort(compareByTimestamp);
      this.emit({ type: 'scan', waiting: byTimestamp.length });
      this.pass = { byTimestamp };
    } else {
      // Sequence order refuses a queue where two files share a number, wherever they are (as the
      // reference and its manual do); timestamp order does not care.
      const bySeq = indexBySeq([...this.known.values()]);
      let waiting = 0;
      for (const seq of bySeq.keys()) if (seq >= this.next) waiting++;
      this.emit({ type: 'scan', waiting });
      this.pass = { bySeq };
    }
    this.index = 0;
  }

  /** Whether the pass has a job to run next. */
  hasNext(): boolean {
    const pass = this.pass;
    if (!pass) return false;
    return pass.byTimestamp ? this.index < pass.byTimestamp.length : pass.bySeq.has(this.next);
  }

  /** The pass's next job, taken from it; undefined when there is none (the pass is over). */
  takeNext(): JobEntry | undefined {
    const pass = this.pass;
    if (!pass) return undefined;
    if (pass.byTimestamp) return pass.byTimestamp[this.index++];
    const entry = pass.bySeq.get(this.next);
    if (entry && this.next === U64_MAX) throw new SeqOverflowError(this.queue.seqfilePath);
    return entry;
  }

  /** Run one job and record its end; under 'retry' a failure ends the run (JobFailedError). */
  async runOne(entry: JobEntry): Promise<Outcome> {
    const { ctx, emit, summary } = this;
    const seq = entry.header.seq;
    ctx.log.debug('process', () => `Processing job ${seq} from ${entry.filename}`);
    emit({ type: 'start', seq, filename: entry.filename });
    const outcome = await ctx.runJob(this.queue, entry);
    summary.processed++;
    if (outcome.ok) summary.succeeded++;
    else summary.failed++;
    ctx.log.debug('process', () => `Job ${seq} ${outcome.why}`);
    const ended: QueueJobEvent = { type: 'end', seq, filename: entry.filename, ok: outcome.ok, why: outcome.why };
    if (!outcome.ok && ctx.onError === 'retry') {
      emit(ended);
      throw new JobFailedError(`Job ${seq} failed (${outcome.why}); stopping, the job stays in the queue`);
    }
    this.recordFinished(entry, outcome);
    emit(ended); // after the job is recorded: listeners see the queue as it now is
    return outcome;
  }

  /** Between passes, holding the lock: nothing is half-finished. */
  rest(): void {
    this.seqfile?.clearNote();
  }

  /** Give the lock back (safe when not held). */
  release(): void {
    const seqfile = this.seqfile;
    this.seqfile = undefined;
    if (!seqfile) return;
    try {
      seqfile.clearNote();
    } catch {
      // Never hide the error that ended the run; a note left behind names a finished job anyway.
    }
    seqfile.release();
  }

  /** Record a finished job: nextseq past it (sequence order), its file deleted unless kept. */
  private recordFinished(entry: JobEntry, outcome: Outcome): void {
    const { queue, ctx } = this;
    const { log, opts } = ctx;
    const seqfile = this.seqfile!;
    const seq = entry.header.seq;
    const remove = !opts.neverDelete && (outcome.ok || ctx.onError === 'delete');
    // The job is finished: record that in the lock file before nextseq and the job file
    // change, so that a run killed between the two steps is completed by the next one
    // (finishInterrupted) instead of leaving a spent job file behind.
    if (remove) noteFinishing(seqfile, `${ctx.timestampOrder ? 'T' : 'S'} ${seq} ${entry.filename}`, log);
    if (ctx.timestampOrder) {
      this.done.add(entry.filename);
    } else {
      const next = seq + 1n;
      this.next = next;
      // Durable before the job file goes (SeqFile.write fsyncs the queue directory): after a
      // power cut the job is not run again, and a queue never waits for a job already deleted.
      seqfile.write(next);
      log.debug('process', () => `Sequence ${next} written to ${JSON.stringify(queue.seqfilePath)}`);
    }
    if (remove) {
      log.debug('process', () => `Deleting ${JSON.stringify(queue.jobPath(entry.filename))}`);
      queue.delete(entry.filename);
      this.known.delete(entry.filename);
      // The deletion is durable with jobs/: without this fsync a power cut brings the spent
      // file back (below nextseq in sequence order, to run again in timestamp order). About
      // 0.2 ms a job here, beside the milliseconds of starting its command (docs/benchmarks.md).
      fsyncDir(queue.jobsDir);
    }
  }
}

function assertWritable(queue: Queue, dir: string): void {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw new QueueError(`Cannot process queue ${JSON.stringify(queue.dir)}: ${describeSystemError(err)}`, { cause: err });
  }
}

/**
 * Write the note naming the job being finished. It only helps a later run after a kill, so a
 * failure (a full disk, say) is not an error: the update of nextseq that follows reports it.
 */
function noteFinishing(seqfile: SeqFile, line: string, log: Logger): void {
  try {
    seqfile.writeNote(line);
  } catch (err) {
    log.debug('process', () => `Could not note the job being finished in the lock file: ${describeSystemError(err)}`);
  }
}

/**
 * Complete a finished job that a killed run left half-recorded. The lock file's note names the
 * last job a run was finishing: its command had succeeded (or failed under Delete), and nextseq
 * and the job file were about to change. If nextseq still names it, move past it; then delete
 * its file, which is spent. Without this, a kill in that window leaves a job file below nextseq
 * that nothing ever runs or removes (as in the reference), or runs a finished job again.
 */
function finishInterrupted(queue: Queue, seqfile: SeqFile, next: bigint, log: Logger): bigint {
  const note = /^([ST]) (\d+) (\S+)$/.exec(seqfile.readNote());
  if (note) {
    const [, mode, seqText, filename] = note as unknown as [string, 'S' | 'T', string, string];
    const seq = BigInt(seqText);
    if (isJobFilename(filename) && fs.existsSync(queue.jobPath(filename))) {
      if (mode === 'S' && seq === next && seq !== U64_MAX) {
        next = seq + 1n;
        seqfile.write(next);
      }
      if (mode === 'T' || seq < next) {
        log.info('process', `Removing ${JSON.stringify(filename)}: job ${seq} was finished by an interrupted run`);
        queue.delete(filename);
        fsyncDir(queue.jobsDir); // as after any job: the spent file stays gone
      }
    }
  }
  seqfile.clearNote();
  return next;
}
