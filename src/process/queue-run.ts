/**
 * One queue's run of queue-process: its lock, its next number, its scans and the jobs it runs, in
 * named steps (lock, peek, scan, runNext, rest, release) that processQueue and processQueues
 * (many-queues.ts) both use; docs/architecture.md follows them.
 */
import { JobFailedError, type RetryDueError, SeqOverflowError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { monotonicMs } from '../base/timer.js';
import { notYet } from '../packet/not-before.js';
import { U64_MAX } from '../packet/types.js';
import { compareByTimestamp, indexBySeq, type JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { SeqFile } from '../sys/seqfile.js';
import { DueWait } from './due.js';
import { type FinishedJob, type Finisher, nopRunAt, type PlannedFinish } from './finish.js';
import { JobAhead } from './job-ahead.js';
import { JobPass } from './job-pass.js';
import type { ProcessSummary, QueueJobEvent } from './options.js';
import { type Outcome, type OutcomeWord, outcomeWord } from './outcome.js';
import { QueueChain, type StartedJob } from './queue-chain.js';
import { lockFileSize, takeQueue, vanishing } from './queue-lock.js';
import { moveRefused, refusedHeaders } from './queue-refusal.js';
import type { OpenedAhead } from './ready-job.js';
import { Retries } from './retry-run.js';
import { loadRunJob, type RunContext, type RunJobModule } from './run-context.js';

export type { RunContext } from './run-context.js';

export class QueueRun {
  readonly queue: Queue;
  readonly summary: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
  /** Sequence order: the number of the job to run next (as last read or written). */
  next = 0n;
  private readonly ctx: RunContext;
  private readonly emit: (event: QueueJobEvent) => void;
  private seqfile: SeqFile | undefined;
  /** Records finished jobs while the lock is held (finish.ts). */
  private finisher: Finisher | undefined;
  /** The last scan, by file name. */
  private known = new Map<string, JobEntry>();
  /** Timestamp order: files already run (and left in place) in this run. */
  private readonly done = new Set<string>();
  private pass: JobPass | undefined;
  /** Whether a lock has looked for refusals a power cut left half done (queue-lock.ts). */
  private cutLooked = false;
  /** Retries and failed jobs (retry-run.ts). */
  private readonly retries: Retries;
  /** Whether the next job waits for a time: its next try, its not-before time (due.ts). */
  private readonly due: DueWait;
  /** The pass's next job, opened while the one before it runs (job-ahead.ts). */
  private readonly ahead = new JobAhead<OpenedAhead>();
  /** Where the run chains its jobs (chainJobs): queue-process of one queue. */
  private chain: QueueChain | undefined;

  constructor(queue: Queue, ctx: RunContext, emit: (event: QueueJobEvent) => void) {
    this.queue = queue;
    this.ctx = ctx;
    this.emit = emit;
    this.retries = new Retries(queue, {
      retry: ctx.retry,
      failedTo: ctx.failedTo,
      log: ctx.log,
      watching: Boolean(ctx.opts.watch),
      savedOutput: ctx.opts.outputTo === 'saveboth',
    });
    this.due = DueWait.told(this.retries, queue.dir, Boolean(ctx.opts.watch), ctx.log, emit);
    // Numbers are what stop a replayed signed packet; timestamp order takes none (security.md).
    if (ctx.timestampOrder && queue.allowedSigners)
      ctx.log.warn(
        'process',
        `${queue.dir}: in timestamp order a copy of a signed packet that ` +
          `already ran runs again (only sequence order refuses replays)`,
      );
  }

  get log(): Logger {
    return this.ctx.log;
  }

  /**
   * Chain this run's jobs (queue-chain.ts) while `allowed` says it may start another after the
   * running one; a stop of the run (its `stopping`) disarms the chain.
   */
  chainJobs(allowed: () => boolean): void {
    this.chain = new QueueChain(allowed, this.ctx.stopping, this.ctx.log);
  }

  /** Whether a job started by a chain waits for its turn: the run must take it, stopping or not. */
  get chainStarted(): boolean {
    return this.chain?.hasStarted ?? false;
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
  async lock(options: { wait?: boolean } = {}): Promise<void> {
    // Refusals a power cut left half done: looked for at the first lock only, not at every turn.
    const held = await takeQueue(this.queue, this.ctx, this.retries, { ...options, afterCut: !this.cutLooked });
    this.cutLooked = true;
    // Another processor moved nextseq while we did not hold the lock: the pass is stale.
    if (this.pass && held.next !== this.next) this.pass = undefined;
    this.next = held.next;
    this.seqfile = held.seqfile;
    this.finisher = held.finisher;
  }

  /**
   * Without the lock: scan, and say whether the queue has a job to run now. The number read is
   * a hint (nextseq is replaced whole, by a rename); lock() reads it again, under the lock.
   */
  async peek(): Promise<boolean> {
    if (!this.locked) {
      // A note in the lock file: a record to complete (or another processor at work): lock() sees.
      if (lockFileSize(this.queue) !== 0) return true;
      const next = SeqFile.peek(this.queue.seqfilePath);
      if (next === undefined) return !vanishing(this.queue); // lock() makes it, or says what is wrong
      this.next = next;
    }
    await this.scan();
    return this.hasNext();
  }

  /** List jobs/ again (reading only headers not read before) and plan the pass. */
  async scan(): Promise<void> {
    this.known = await this.queue.rescan(this.known);
    this.retries.load();
    if (this.queue.allowedSigners) await this.judgeNew(this.queue.allowedSigners);
    if (this.ctx.timestampOrder) {
      const byTimestamp = [...this.known.values()].filter((e) => !this.done.has(e.filename)).sort(compareByTimestamp);
      this.emit({ type: 'scan', waiting: byTimestamp.length });
      this.pass = JobPass.inTimestampOrder(byTimestamp);
    } else {
      // Sequence order refuses a queue where two files share a number, wherever they are (as the
      // reference and its manual do); timestamp order does not care.
      const bySeq = indexBySeq([...this.known.values()]);
      let waiting = 0;
      for (const seq of bySeq.keys()) if (seq >= this.next) waiting++;
      this.emit({ type: 'scan', waiting });
      this.pass = JobPass.inSequenceOrder(bySeq);
    }
  }

  /** Whether nextseq holds another number than the run last read or wrote: someone moved it (queue-set-next). */
  seqMoved(): boolean {
    return SeqFile.peek(this.queue.seqfilePath) !== this.next;
  }

  /**
   * The queue as the last scan saw it, nextseq and the job files, and whether a note is in its
   * lock file now (peek, seeing one, scans nothing): a stopped queue runs again once it changes.
   */
  shape(): string {
    return `${lockFileSize(this.queue) !== 0 ? 'noted ' : ''}${this.next} ${[...this.known.keys()].sort().join(' ')}`;
  }

  hasNext(): boolean {
    const entry = this.peekNext();
    return entry !== undefined && !this.due.waits(entry);
  }

  /** The pass's next job, left in it. */
  private peekNext(): JobEntry | undefined {
    return this.pass?.peek(this.next);
  }

  /** The pass's next job, taken from it; undefined when there is none (the pass is over). */
  takeNext(): JobEntry | undefined {
    const entry = this.pass?.take(this.next);
    if (entry && this.pass?.bySeq && this.next === U64_MAX) throw new SeqOverflowError(this.queue.seqfilePath);
    return entry;
  }

  /**
   * Run the pass's next job, or record a run of NOP jobs as one (at most `limit` jobs); resolves
   * to how many jobs were done, 0 when the pass has none left. Under 'retry' a failure ends the
   * run (JobFailedError, from runOne).
   */
  async runNext(limit: number): Promise<number> {
    const started = this.chain?.takeStarted(() => this.takeNext());
    if (started) {
      await this.runOne(started.entry, started);
      return 1;
    }
    const next = this.peekNext();
    if (next && this.due.waits(next)) return 0; // strict order: nothing after it runs meanwhile
    const entry = this.takeNext();
    if (!entry) return 0;
    // NOP jobs are recorded in runs without being opened; a signed one is opened and judged.
    const batch = this.pass?.bySeq && this.ctx.opts.outputTo !== 'saveboth' && !this.queue.allowedSigners;
    const nops = batch ? nopRunAt(this.pass!.bySeq!, this.next, limit) : [];
    if (nops.length === 0) {
      await this.runOne(entry);
      return 1;
    }
    this.runNops(nops);
    return nops.length;
  }

  /** Run one job and record its end; under 'retry' a failure ends the run (JobFailedError). */
  async runOne(entry: JobEntry, chained?: StartedJob): Promise<Outcome> {
    const { ctx, emit, summary } = this;
    const seq = entry.header.seq;
    ctx.log.debug('process', () => `Processing job ${seq} from ${entry.filename}`);
    emit({ type: 'start', seq, filename: entry.filename });
    const attempt = this.retries.attemptOf(entry);
    const started = monotonicMs();
    const outcome = await this.start(entry, attempt, chained);
    const durationMs = monotonicMs() - started;
    const recorded = this.chain?.fired(entry);
    if (recorded && !outcome.ok) throw new Error(`QueueRun: job ${seq} failed, yet its chain recorded it`);
    // Called after the record, when there is one: the hook never sees a job that could still run again unrecorded.
    const hook = (word: OutcomeWord) => this.finishHook(entry, outcome, word, attempt ?? 1, durationMs);
    if (outcome.refused) {
      this.refuse(entry, outcome.why);
      return outcome;
    }
    if (outcome.interrupted) {
      // Not recorded: nextseq stays, the file stays, whatever onError says; the run is ending.
      ctx.log.info('process', `Job ${seq} interrupted (${outcome.why}): it stays in the queue`);
      emit({ type: 'end', seq, filename: entry.filename, ok: false, why: outcome.why, interrupted: true });
      return outcome;
    }
    summary.processed++;
    if (outcome.ok) summary.succeeded++;
    else summary.failed++;
    ctx.log.debug('process', () => `Job ${seq} ${outcome.why}`);
    const ended: QueueJobEvent = {
      type: 'end',
      seq,
      filename: entry.filename,
      ok: outcome.ok,
      why: outcome.why,
      outcome: outcomeWord(outcome),
    };
    if (!outcome.ok && this.retries.active) {
      // Removed from this queue when moved (even with neverDelete): it is in the other one now.
      const next = await this.retries.failed(entry, outcome, this.retries.triesOf(entry) + 1, () =>
        this.recordFinished(entry, outcome, true),
      );
      // it stays next in the pass (takeNext moved past it)
      if (next.kind === 'retry') this.pass?.again();
      if (next.kind === 'retry') emit({ ...ended, outcome: 'retry', retryAt: next.retryAt });
      if (next.kind === 'moved') emit({ ...ended, outcome: 'moved' });
      if (next.kind !== 'onError') {
        await hook(next.kind);
        return outcome;
      }
    }
    if (!outcome.ok && ctx.onError === 'retry') {
      emit(ended);
      await hook(outcomeWord(outcome));
      throw new JobFailedError(`Job ${seq} failed (${outcome.why}); stopping, the job stays in the queue`);
    }
    this.recordFinished(entry, outcome, false, recorded);
    this.retries.done(entry);
    emit(ended); // after the job is recorded: listeners see the queue as it now is
    await hook(outcomeWord(outcome));
    return outcome;
  }

  /**
   * Start `entry`'s job (or take the child a chain `started`); while it runs, the job after it is
   * opened (job-ahead.ts), and chained to it where the run chains jobs (queue-chain.ts).
   */
  private async start(entry: JobEntry, attempt: number | undefined, started?: StartedJob): Promise<Outcome> {
    const { ctx, queue } = this;
    const runJob = await loadRunJob();
    const ahead = started ? this.ahead.claim(entry, attempt) : this.ahead.take(entry, attempt);
    const link = this.chain?.begin();
    const running = runJob.runQueueJob(ctx, queue, entry, attempt, ahead, { link, adopt: started?.child });
    const after = this.pass?.after(entry);
    if (after && !notYet(after.header) && runJob.canOpenAhead(ctx.opts, queue, after)) {
      const tries = this.retries.attemptOf(after);
      const chain = link && !ctx.onFinish ? (o: OpenedAhead) => this.chainTo(entry, after, o, runJob) : undefined;
      this.ahead.open(after, tries, () => runJob.openAhead(ctx.baseEnv, queue, after, tries), chain);
    }
    return running;
  }

  /** Chain `after`, opened ahead, to `entry`'s running job (queue-chain.ts) if its turn would only start it. */
  private chainTo(entry: JobEntry, after: JobEntry, opened: OpenedAhead, runJob: RunJobModule): void {
    // Not after a retried job: its tries' record is cleared once it is recorded, before the next starts.
    const io =
      this.retries.triesOf(entry) === 0 && !this.due.waits(after) && runJob.chainedStart(opened, this.ctx.opts);
    if (io) this.chain?.arm(entry, () => this.finisher!.planJob(this.finished(entry, true)), after, io, opened.file);
  }

  /** The run's finish hook for a try that ran (on-finish.ts): none for a NOP, which ran nothing. */
  private finishHook(
    entry: JobEntry,
    outcome: Outcome,
    word: OutcomeWord,
    attempt: number,
    durationMs: number,
  ): Promise<void> {
    if (!this.ctx.onFinish || entry.header.cmd.kind === 'NOP') return Promise.resolve();
    return this.ctx.onFinish.run({ queue: this.queue, entry, outcome, word, attempt, durationMs });
  }

  /** Judge the headers the scan read first: those refused leave the run (queue-refusal.ts says why and how). */
  private async judgeNew(signers: AllowedSigners): Promise<void> {
    for (const { entry, why } of await refusedHeaders(this.known.values(), signers)) this.refuse(entry, why);
  }

  /** A job its signature does not let in: moved to refused/ (moveRefused), out of the pass, its end told. */
  private refuse(entry: JobEntry, why: string): void {
    moveRefused(this.queue, entry.filename, why, this.ctx.log);
    this.known.delete(entry.filename);
    this.pass?.remove(entry);
    this.emit({ type: 'end', seq: entry.header.seq, filename: entry.filename, ok: false, why, refused: true });
  }

  /** A one-pass run's error when its next job waits for its next try; undefined for a not-before time (no failure). */
  dueError(): RetryDueError | undefined {
    return this.due.error(this.peekNext(), this.next);
  }

  /** When the pass stopped at a job not due yet (its next try, its not-before time): then, in epoch ms. */
  get dueMs(): number | undefined {
    return this.due.ms;
  }

  /** Between passes, holding the lock: every record durable, nothing half-finished (Finisher.settle). */
  rest(): void {
    this.chain?.disarm();
    this.ahead.drop();
    this.finisher?.settle();
  }

  /** Give the lock back, every record made durable first if it can be (safe when not held). */
  release(): void {
    this.chain?.close();
    this.ahead.drop();
    const seqfile = this.seqfile;
    const finisher = this.finisher;
    this.seqfile = undefined;
    this.finisher = undefined;
    if (!seqfile) return;
    finisher?.close(); // never throws: after a failure the note stays for the next run
    seqfile.release();
  }

  /**
   * Record a finished job, durably (finish.ts): a note naming it, nextseq past it (sequence
   * order), its file deleted unless kept.
   */
  private recordFinished(
    entry: JobEntry,
    outcome: Outcome,
    moved = false,
    recorded?: { plan: PlannedFinish; results: Int32Array },
  ): void {
    const job = this.finished(entry, outcome.ok, moved);
    // Made by the addon as the job ended (queue-chain.ts): taken as if made here.
    if (recorded) this.finisher!.adoptJob(recorded.plan, recorded.results);
    else this.finisher!.finishJob(job);
    if (this.ctx.timestampOrder) this.done.add(entry.filename);
    else this.next = job.seq + 1n;
    if (job.remove) this.known.delete(entry.filename);
  }

  /** A job that has run, as its record says it: its file deleted if it succeeded (or moved), unless kept. */
  private finished(entry: JobEntry, ok: boolean, moved = false): FinishedJob {
    const remove = moved || (!this.ctx.opts.neverDelete && (ok || this.ctx.onError === 'delete'));
    const order = this.ctx.timestampOrder ? 'timestamp' : 'sequence';
    const last = this.pass?.after(entry) === undefined;
    return { seq: entry.header.seq, filename: entry.filename, order, remove, last };
  }

  /**
   * A run of NOP jobs in sequence order (nopRunAt): nothing to run, so they are recorded as one
   * (finish.ts), and each is reported once they are.
   */
  private runNops(nops: JobEntry[]): void {
    const remove = !this.ctx.opts.neverDelete;
    this.finisher!.finishNops(nops, remove);
    this.next = nops[nops.length - 1]!.header.seq + 1n;
    this.summary.processed += nops.length;
    this.summary.succeeded += nops.length;
    for (const { header, filename } of nops) {
      const { seq } = header;
      if (remove) this.known.delete(filename);
      this.ctx.log.debug('process', () => `Job ${seq} from ${filename} it is a NOP packet`);
      this.emit({ type: 'start', seq, filename });
      this.emit({ type: 'end', seq, filename, ok: true, why: 'it is a NOP packet', outcome: 'success' });
    }
  }
}
