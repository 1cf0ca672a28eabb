/**
 * Finishing jobs: what `queue-process` records once a job has run, so that it is neither run
 * again nor left behind, across a `kill -9` and a power cut; a run of NOP jobs recorded as one;
 * and what the next run completes when a crash cut a record short (Finisher.recover).
 *
 * A record is one batch of file operations run in order (fs-batch.ts runBatchSync: one call into
 * the native addon); an operation that fails stops the ones after it, so no step begins before
 * the one it depends on is durable (the rules are in durable.ts). A job's record:
 *
 *   | step                                | durable once                        | without it, a power cut would...    |
 *   | ----------------------------------- | ----------------------------------- | ----------------------------------- |
 *   | 1. the note in nextseq.lock, naming | its fdatasync (SeqFile.noteOp)      | steps 2 and 3 half done with        |
 *   | the job and the files deleted whose |                                     | nothing to say so: the job run      |
 *   | deletion is not yet durable: `S SEQ |                                     | again, or spent files left below    |
 *   | FILE [FILE...]` (`T` in timestamp   |                                     | nextseq for ever                    |
 *   | order)                              |                                     |                                     |
 *   | 2. nextseq past it (sequence order) | nextseq.temp fsynced, renamed, the  | the job runs again                  |
 *   |                                     | queue directory fsynced (its        |                                     |
 *   |                                     | descriptor held)                    |                                     |
 *   | 3. its file deleted                 | the next fsync of jobs/ (its        | the spent file comes back below     |
 *   |                                     | descriptor held): once GROUP_MAX    | nextseq                             |
 *   |                                     | deletions wait, or a run of NOPs    |                                     |
 *   |                                     | comes, or the run rests (idle,      |                                     |
 *   |                                     | end); the note names them till then |                                     |
 *
 * The last job of a pass (no job after it in the pass: the run rests next) fsyncs jobs/ in its own
 * record, after the unlink: the fsync settling would make at once, in the same batch.
 * Step 1 is written only when step 3 deletes the job (a job kept by --never-delete or --on-error
 * leave needs no cleaning; the note before it still names the deletions that wait), and is
 * durable before steps 2 and 3 begin: the kernel may write their names to the disk at any moment.
 * A step that fails (a full disk, an I/O error) stops the record and the run, with an error that
 * names its file; the run then leaves the note as it is (it never retries a failed fsync and
 * trusts it), and the next run completes the record from it, or runs the job again if its note
 * was never made durable.
 * Each note replaces the last, and names every deletion not yet durable, so nothing a note said
 * is lost while it is needed. nextseq is durable job by job: after a power cut the reference, which
 * never reads the note, runs again at most the job ours was running.
 *
 * A job's record may also be made by the native addon, as the job's command exits, just before it
 * starts the next job (a chained start, queue-chain.ts): the same batch, planned while the job runs
 * (planJob) and judged after (adoptJob), so the table holds as it is.
 *
 * A run of NOP jobs in sequence order (nothing to run, nothing to wait for) is recorded as one:
 * the deletions waiting are made durable, then one note `N FIRST LAST`, nextseq moved once past
 * the last, every file deleted, one fsync of jobs/ (nopRunAt chooses them, at most NOP_RUN_MAX).
 *
 * When the run rests (watching, idle) or ends, the deletions waiting are made durable and the lock
 * file is emptied (settle). After a crash, the next run reads the note first (recover):
 *
 *   | note                  | nextseq found                 | the next run                                         |
 *   | --------------------- | ----------------------------- | ---------------------------------------------------- |
 *   | `S SEQ FILE [FILE..]` | SEQ (step 2 lost or not made) | moves nextseq past SEQ, deletes FILE: not run again  |
 *   |                       | past SEQ                      | deletes FILE if it is back                           |
 *   |                       | (either)                      | deletes the other FILEs if they are back             |
 *   | `T SEQ FILE [FILE..]` | (not used)                    | deletes every FILE that is back                      |
 *   | `N FIRST LAST`        | FIRST (step 2 lost)           | nothing: the NOPs are taken again (they run nothing) |
 *   |                       | past FIRST                    | deletes NOP files FIRST..LAST below nextseq (a scan) |
 *
 * A note naming a file that is gone, or a job above nextseq, is left alone; the reference never
 * reads the lock file (docs/compatibility.md, (q)), and a run of it in between leaves at most such
 * a note behind.
 */
import fs from 'node:fs';
import type { Logger } from '../base/log.js';
import { notYet } from '../packet/not-before.js';
import { U64_MAX } from '../packet/types.js';
import type { JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import { type BatchOp, firstFailedStep, runBatchSync } from '../sys/fs-batch.js';
import { closeQuietly } from '../sys/io.js';
import type { SeqFile } from '../sys/seqfile.js';
import { formatLockNote, type LockNote, parseLockNote } from './lock-note.js';

/** The most NOP jobs recorded as one run (their events come once the run is recorded). */
export const NOP_RUN_MAX = 1024;

/** The most deletions that wait for one fsync of jobs/ (their names ride in the note meanwhile). */
export const GROUP_MAX = 16;

/** The longest note (FileLock's limit). */
const NOTE_MAX = 1000;

/** A record to make: the steps above that apply. */
export interface FinishRecord {
  /** Step 1's note. */
  note?: LockNote;
  /** Step 2: nextseq's new value (sequence order). */
  next?: bigint;
  /** Step 3: the job files to delete (names inside jobs/). */
  remove: readonly string[];
  /** Step 3: fsync jobs/ after the deletions (else they wait for the next fsync, named in the note). */
  syncDeletions: boolean;
}

/** A record's steps (Finisher.steps), their operations in order, and the cleanup after a failure. */
interface PlannedRecord {
  r: FinishRecord;
  steps: BatchOp[][];
  ops: BatchOp[];
  failed(): void;
}

/** A job's record planned before it is made (Finisher.planJob), with the deletions made durable first if its note is full. */
export interface PlannedFinish {
  readonly job: FinishedJob;
  readonly records: readonly PlannedRecord[];
  /** Every operation of the batch, in order. */
  readonly ops: readonly BatchOp[];
  /** Finisher's count of records made when it was planned. */
  readonly made: number;
}

/** A job that has run, for Finisher.finishJob. */
export interface FinishedJob {
  seq: bigint;
  filename: string;
  /** Sequence order moves nextseq past it; timestamp order does not. */
  order: 'sequence' | 'timestamp';
  /** Delete its file (it succeeded, or failed under --on-error delete; never with --never-delete). */
  remove: boolean;
  /**
   * No job follows it in the run's pass: the run rests next (unless a new look finds more), and
   * settling would fsync jobs/ at once, in a batch of its own. Its record fsyncs jobs/ itself
   * instead, after its unlink (step 3 durable at once).
   */
  last?: boolean;
}

/** The record of one job that has run, with the deletions that wait for jobs/ to be fsynced. */
export function jobRecord(job: FinishedJob, waiting: readonly string[] = []): FinishRecord {
  const sequence = job.order === 'sequence';
  return {
    note: job.remove
      ? { kind: sequence ? 'S' : 'T', seq: job.seq, file: job.filename, waiting: [...waiting] }
      : undefined,
    next: sequence ? job.seq + 1n : undefined,
    remove: job.remove ? [job.filename] : [],
    syncDeletions: job.remove && job.last === true,
  };
}

/** The record of a run of NOP jobs, numbered one after the other (nopRunAt), in sequence order. */
export function nopRunRecord(jobs: readonly JobEntry[], remove: boolean): FinishRecord {
  const first = jobs[0]!.header.seq;
  const last = jobs[jobs.length - 1]!.header.seq;
  return {
    note: remove ? { kind: 'N', first, last } : undefined,
    next: last + 1n,
    remove: remove ? jobs.map((j) => j.filename) : [],
    syncDeletions: remove,
  };
}

/**
 * The NOP jobs numbered from `next` on, one after the other, as many as there are (at most
 * `limit` and NOP_RUN_MAX): what can be recorded as one run. Empty when job `next` is no NOP.
 */
export function nopRunAt(bySeq: ReadonlyMap<bigint, JobEntry>, next: bigint, limit: number): JobEntry[] {
  const run: JobEntry[] = [];
  for (let seq = next; run.length < Math.min(limit, NOP_RUN_MAX) && seq < U64_MAX; seq++) {
    const entry = bySeq.get(seq);
    if (entry?.header.cmd.kind !== 'NOP' || notYet(entry.header)) break; // one not due yet waits, and all after it
    run.push(entry);
  }
  return run;
}

/**
 * The records of one run of queue-process (the tables above). Holds descriptors of the queue
 * directory and of jobs/ for its fsyncs, and the deletions that wait for the next fsync of jobs/;
 * close() when the run ends.
 */
export class Finisher {
  /** Deleted, but not yet durably: named in every note until jobs/ is fsynced. */
  private waiting: string[] = [];
  /** The length of their names in a note. */
  private waitingLength = 0;
  private readonly dirs = new Map<string, number>();
  /** SeqFile.batchWrite's store (the same array each time), and it with the directory held. */
  private store: { given?: readonly BatchOp[]; held: BatchOp[] } = { held: [] };
  /**
   * A record failed (a full disk, an I/O error): nothing more is recorded in this run, and close()
   * leaves the note for the next run, which completes the record (recover). Settling here would
   * retry a failed fsync and trust it, and empty the note that says what is not durable.
   */
  private broken = false;
  /** Records made so far: a planned one is stale once another is made (planJob). */
  private made = 0;

  constructor(
    private readonly queue: Queue,
    private readonly seqfile: SeqFile,
    private readonly log: Logger,
  ) {}

  /** Record a job that has run (its deletion durable with a later fsync of jobs/). */
  finishJob(job: FinishedJob): void {
    const plan = this.planJob(job);
    this.adoptJob(plan, runBatchSync(plan.ops));
  }

  /**
   * finishJob's record, planned: the operations of its batch, to be run by the caller (finishJob),
   * or by the addon at the job's exit (a chained start, sys/exec-chain.ts); adoptJob then takes
   * their results. Nothing may be recorded in between.
   */
  planJob(job: FinishedJob): PlannedFinish {
    const full = this.waiting.length >= GROUP_MAX || 40 + job.filename.length + this.waitingLength > NOTE_MAX;
    // A full note: the deletions it names are made durable first (syncDeletions), in the same batch.
    const syncFirst = job.remove && full && this.waiting.length > 0;
    const records = syncFirst ? [this.planned({ remove: [], syncDeletions: true })] : [];
    records.push(this.planned(jobRecord(job, syncFirst ? [] : this.waiting)));
    return { job, records, ops: records.flatMap((p) => p.ops), made: this.made };
  }

  /** A planned record's batch has run (planJob): a failure is thrown as finishJob throws it; else the job is recorded. */
  adoptJob(plan: PlannedFinish, results: Int32Array): void {
    if (plan.made !== this.made) throw new Error('Finisher: a record was made after this one was planned');
    let at = 0;
    for (const p of plan.records) {
      this.check(p, results.subarray(at, at + p.ops.length));
      at += p.ops.length;
      if (!p.r.syncDeletions) continue;
      this.waiting = [];
      this.waitingLength = 0;
    }
    // The last job's own record made its deletion durable (jobRecord): nothing waits for it.
    if (plan.job.remove && plan.job.last !== true) {
      this.waiting.push(plan.job.filename);
      this.waitingLength += plan.job.filename.length + 1;
    }
  }

  /** Record a run of NOP jobs (nopRunAt) as one, its deletions durable. */
  finishNops(jobs: readonly JobEntry[], remove: boolean): void {
    this.syncDeletions(); // its note replaces the one naming them
    this.record(nopRunRecord(jobs, remove));
  }

  /** Make every deletion durable (one fsync of jobs/). */
  syncDeletions(): void {
    if (this.waiting.length === 0) return;
    this.record({ remove: [], syncDeletions: true });
    this.waiting = [];
    this.waitingLength = 0;
  }

  /** At rest (watching, idle) and at the end: every deletion durable, then the note emptied (nothing to complete). */
  settle(): void {
    this.syncDeletions();
    this.seqfile.clearNote();
  }

  /** The run is over: settle if it can (after a failure the note stays for the next run), and close the directories. */
  close(): void {
    try {
      if (!this.broken) this.settle();
    } catch {
      // Never hide the error that ended the run; the note still names what is not durable.
    }
    for (const fd of this.dirs.values()) closeQuietly(fd);
    this.dirs.clear();
  }

  /**
   * Complete the record a killed run (or a power cut) left half made, from the lock file's note
   * (the second table above), then empty the note. Returns nextseq as it now is. Without this, a
   * crash in the middle of a record leaves a job file below nextseq that nothing ever runs or
   * removes (as in the reference), or runs a finished job again.
   */
  async recover(next: bigint): Promise<bigint> {
    const note = parseLockNote(this.seqfile.readNote());
    const exists = (f: string) => fs.existsSync(this.queue.jobPath(f));
    const spent: string[] = [];
    let moved: bigint | undefined;
    /** nextseq as found is past the note's job: written again, durably (below). */
    let past = false;
    if (note?.kind === 'N' && note.first < next) {
      past = true;
      spent.push(...(await this.spentNops(note.first, note.last < next ? note.last : next - 1n)));
      if (spent.length > 0)
        this.log.info(
          'process',
          `Removing ${spent.length} NOP job file(s) numbered ${note.first} to ${note.last}: ` +
            `finished by an interrupted run`,
        );
    } else if (note && note.kind !== 'N') {
      const { seq, file } = note;
      past = note.kind === 'S' && seq < next;
      if (file !== undefined && exists(file)) {
        if (note.kind === 'S' && seq === next && seq !== U64_MAX) moved = next = seq + 1n;
        if (note.kind === 'T' || seq < next) spent.push(file);
      }
      for (const f of note.waiting) if (exists(f)) spent.push(f);
      for (const f of spent)
        this.log.info(
          'process',
          `Removing ${JSON.stringify(f)}: ${f === file ? `job ${seq}` : `a job before ${seq}`} ` +
            `was finished by an interrupted run`,
        );
    }
    // The run that wrote the note may have stopped on a failed fsync (of the queue directory after
    // nextseq's rename, of jobs/ after deletions): what it did is there to see, but not durable, and
    // fsyncing again would not make it so (a failed fsync is not retried and trusted). So nextseq
    // is written again, as a new file renamed in, and jobs/ fsynced after the deletions it names,
    // before the note goes. A note whose job ran nothing past it (an N note at nextseq) needs none.
    if (note && (note.kind !== 'N' || past))
      this.record({ next: moved ?? (past ? next : undefined), remove: spent, syncDeletions: true });
    this.seqfile.clearNote();
    return next;
  }

  /** The NOP files numbered first..last (all below nextseq) that a recorded run of NOPs left behind. */
  private async spentNops(first: bigint, last: bigint): Promise<string[]> {
    const jobs = await this.queue.scan();
    return jobs
      .filter((e) => e.header.cmd.kind === 'NOP' && e.header.seq >= first && e.header.seq <= last)
      .map((e) => e.filename);
  }

  /**
   * The operations of a record, in order, as its three steps (the table above); `failed` cleans
   * up after a failure (the temporary file of step 2).
   */
  steps(r: FinishRecord): { steps: BatchOp[][]; failed(): void } {
    const write = r.next === undefined ? undefined : this.seqfile.batchWrite(r.next);
    // A note that can't be made durable (a full disk, a failed fdatasync) stops the record: going
    // on, a crash or power cut would bring back a deleted job file below nextseq that no note
    // names, there for ever. Stopped, the job runs again (it is not recorded), or the next run
    // completes the record from the note it reads (what the disk still holds).
    const note: BatchOp[] =
      r.note === undefined ? [] : [{ ...this.seqfile.noteOp(formatLockNote(r.note)), must: true }];
    if (write && write.store !== this.store.given)
      this.store = { given: write.store, held: write.store.map((o) => this.held(o)) };
    const next: BatchOp[] = write ? [{ ...write.prepare, must: true }, ...this.store.held] : [];
    const remove = r.remove.map((f): BatchOp => ({ op: 'unlink', path: this.queue.jobPath(f), must: true }));
    if (r.syncDeletions) remove.push(this.held({ op: 'fsyncDir', path: this.queue.jobsDir, must: true }));
    return { steps: [note, next, remove], failed: () => write?.failed() };
  }

  /**
   * Make a record, durably, step after step (the table above). A failure throws as the fs call
   * would, naming the file of its step: the lock file (the note), nextseq (a full disk says "No
   * space left on device: DIR/nextseq"), the job file or jobs/.
   */
  private record(r: FinishRecord): void {
    const p = this.planned(r);
    this.check(p, runBatchSync(p.ops));
  }

  /** A record's steps (steps) and their operations in order. */
  private planned(r: FinishRecord): PlannedRecord {
    const { steps, failed } = this.steps(r);
    return { r, steps, failed, ops: steps.flat() };
  }

  /** A record's batch has run, with these results: its failure thrown (record says how), or its steps logged. */
  private check(p: PlannedRecord, results: Int32Array): void {
    this.made++;
    const { r, steps } = p;
    const failure = firstFailedStep(steps, 0, results);
    if (failure) {
      this.broken = true;
      p.failed();
      const path =
        failure.step === 0 ? `${this.seqfile.path}.lock` : failure.step === 1 ? this.seqfile.path : undefined;
      throw path === undefined ? failure.err : Object.assign(failure.err, { path });
    }
    if (r.next !== undefined)
      this.log.debug('process', () => `Sequence ${r.next} written to ${JSON.stringify(this.seqfile.path)}`);
    for (const f of r.remove) this.log.debug('process', () => `Deleted ${JSON.stringify(this.queue.jobPath(f))}`);
  }

  /** A directory's fsync through a descriptor held for the run (opened on first use): no open and close each time. */
  private held(o: BatchOp): BatchOp {
    if (o.op !== 'fsyncDir') return o;
    // By the path as given: the queue's own strings, the same for the whole run.
    let fd = this.dirs.get(o.path);
    if (fd === undefined) {
      try {
        fd = fs.openSync(o.path, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
      } catch {
        return o; // opened (and its error reported) by the operation itself
      }
      this.dirs.set(o.path, fd);
    }
    return { ...o, fd };
  }
}
