/**
 * Finishing jobs: what `queue-process` records once a job has run, so that it is neither run
 * again nor left behind, across a `kill -9` and a power cut; a run of NOP jobs recorded as one;
 * and what the next run completes when a crash cut a record short (finishInterrupted).
 *
 * A record is one batch of file operations run in order (fs-batch.ts runBatchSync: one call into
 * the native addon, about a dozen system calls, where Node's synchronous fs calls cost some 70 us
 * a job); an operation that fails stops the ones after it, so no step begins before the one it
 * depends on is durable (the rules are in durable.ts):
 *
 *   | step                                      | durable once                            | what a power cut would do without it           |
 *   | ----------------------------------------- | --------------------------------------- | ---------------------------------------------- |
 *   | 1. the note in nextseq.lock naming what   | its fdatasync (SeqFile.noteOp)          | steps 2 and 3 half done, with nothing to say   |
 *   |    is being finished: `S SEQ FILE` (a job |                                         | so: a spent file below nextseq for ever, or a  |
 *   |    in sequence order), `T SEQ FILE`       |                                         | finished job run again                         |
 *   |    (timestamp order), `N FIRST LAST` (a   |                                         |                                                |
 *   |    run of NOPs)                           |                                         |                                                |
 *   | 2. nextseq past it (sequence order)       | nextseq.temp fsynced, renamed, the      | the job runs again; a queue that waits for a   |
 *   |                                           | queue directory fsynced (batchWrite)    | job whose file step 3 deleted                  |
 *   | 3. its file(s) deleted                    | the unlinks, then one fsync of jobs/    | the spent file comes back below nextseq        |
 *
 * Step 1 is written only when step 3 will delete something (a job kept by --never-delete or
 * --on-error leave needs no cleaning), and is durable before 2 and 3 begin: the kernel may write
 * their names to the disk at any moment after they are made. The next record's note replaces it
 * only once 2 and 3 are durable, so a note is there for as long as it is needed; the run empties
 * the lock file when it ends (the next run would find nothing to do anyway).
 *
 * A run of NOP jobs in sequence order (nothing to run, nothing to wait for) is recorded as one:
 * one note for all, nextseq moved once past the last, every file deleted, and one fsync of jobs/
 * for them all (nopRunAt chooses them, at most NOP_RUN_MAX at a time). Instead of about a dozen
 * system calls and three fsyncs a NOP, one unlink a NOP.
 *
 * After a crash, the note says what to complete (finishInterrupted, when the next run opens):
 *
 *   | note           | nextseq found                 | the next run                                      |
 *   | -------------- | ----------------------------- | ------------------------------------------------- |
 *   | `S SEQ FILE`   | SEQ (step 2 lost or not made) | moves nextseq past SEQ, deletes FILE: not run again |
 *   |                | past SEQ                      | deletes FILE if step 3 was lost                   |
 *   | `T SEQ FILE`   | (not used)                    | deletes FILE if step 3 was lost                   |
 *   | `N FIRST LAST` | FIRST (step 2 lost)           | nothing: the NOPs are taken again, as NOPs (they run nothing) |
 *   |                | past FIRST                    | deletes the NOP files numbered FIRST..LAST below nextseq that step 3 did not (a scan) |
 *
 * A note naming a file that is gone, or a job above nextseq, is left alone; the reference never
 * reads the lock file (docs/compatibility.md, (q)), and a run of it in between leaves at most such
 * a note behind.
 */
import fs from 'node:fs';
import { fsyncDir } from './durable.js';
import { firstFailedStep, runBatchSync, type BatchOp } from './fs-batch.js';
import { isJobFilename, type JobEntry } from './jobs.js';
import type { Logger } from './log.js';
import { U64_MAX } from './packet/types.js';
import type { Queue } from './queue.js';
import type { SeqFile } from './seqfile.js';

/** The most NOP jobs recorded as one run (their events come once the run is recorded). */
export const NOP_RUN_MAX = 1024;

/** A record to make: the steps above that apply. */
export interface FinishRecord {
  /** Step 1's note (without its newline), when step 3 deletes something. */
  note?: string;
  /** Step 2: nextseq's new value (sequence order). */
  next?: bigint;
  /** Step 3: the job files to delete (names inside jobs/). */
  remove: readonly string[];
}

/** What finishJob records of a job that has run. */
export interface FinishedJob {
  seq: bigint;
  filename: string;
  /** Sequence order moves nextseq past it; timestamp order does not. */
  order: 'sequence' | 'timestamp';
  /** Delete its file (it succeeded, or failed under --on-error delete; never with --never-delete). */
  remove: boolean;
}

/** The record of one job that has run. */
export function jobRecord(job: FinishedJob): FinishRecord {
  const sequence = job.order === 'sequence';
  return {
    note: job.remove ? `${sequence ? 'S' : 'T'} ${job.seq} ${job.filename}` : undefined,
    next: sequence ? job.seq + 1n : undefined,
    remove: job.remove ? [job.filename] : [],
  };
}

/** The record of a run of NOP jobs, numbered one after the other (nopRunAt), in sequence order. */
export function nopRunRecord(jobs: readonly JobEntry[], remove: boolean): FinishRecord {
  const first = jobs[0]!.header.seq;
  const last = jobs[jobs.length - 1]!.header.seq;
  return { note: remove ? `N ${first} ${last}` : undefined, next: last + 1n, remove: remove ? jobs.map((j) => j.filename) : [] };
}

/**
 * The NOP jobs numbered from `next` on, one after the other, as many as there are (at most
 * `limit` and NOP_RUN_MAX): what can be recorded as one run. Empty when job `next` is no NOP.
 */
export function nopRunAt(bySeq: ReadonlyMap<bigint, JobEntry>, next: bigint, limit: number): JobEntry[] {
  const run: JobEntry[] = [];
  for (let seq = next; run.length < Math.min(limit, NOP_RUN_MAX) && seq < U64_MAX; seq++) {
    const entry = bySeq.get(seq);
    if (entry?.header.cmd.kind !== 'NOP') break;
    run.push(entry);
  }
  return run;
}

/**
 * The operations of a record, in order, as its three steps (the table above); `failed` cleans up
 * after a failure (the temporary file of step 2).
 */
export function recordSteps(queue: Queue, seqfile: SeqFile, r: FinishRecord): { steps: BatchOp[][]; failed(): void } {
  const write = r.next === undefined ? undefined : seqfile.batchWrite(r.next);
  // A failed note only weakens what a later run can complete after a crash (a full disk, say):
  // the record goes on, and step 2 reports the disk's state.
  const note: BatchOp[] = r.note === undefined || r.remove.length === 0 ? [] : [seqfile.noteOp(r.note)];
  const next: BatchOp[] = write ? [{ ...write.prepare, must: true }, ...write.store] : [];
  const remove: BatchOp[] = r.remove.length === 0 ? [] : [...r.remove.map((f): BatchOp => ({ op: 'unlink', path: queue.jobPath(f), must: true })), { op: 'fsyncDir', path: queue.jobsDir, must: true }];
  return { steps: [note, next, remove], failed: () => write?.failed() };
}

/**
 * Make a record, durably, step after step (the table above). A failure throws as the fs call
 * would: step 2's names nextseq (a full disk says "No space left on device: DIR/nextseq").
 */
export function record(queue: Queue, seqfile: SeqFile, r: FinishRecord, log: Logger): void {
  const { steps, failed } = recordSteps(queue, seqfile, r);
  const results = runBatchSync(steps.flat());
  // Step 1 never fails the record; only the first failure of steps 2 and 3 counts.
  const failure = firstFailedStep(steps, 1, results.subarray(steps[0]!.length));
  if (failure) {
    failed();
    throw failure.step === 1 ? Object.assign(failure.err, { path: seqfile.path }) : failure.err;
  }
  if (r.next !== undefined) log.debug('process', () => `Sequence ${r.next} written to ${JSON.stringify(seqfile.path)}`);
  for (const f of r.remove) log.debug('process', () => `Deleted ${JSON.stringify(queue.jobPath(f))}`);
}

type Note = { kind: 'S' | 'T'; seq: bigint; filename: string } | { kind: 'N'; first: bigint; last: bigint };

function parseNote(text: string): Note | undefined {
  const job = /^([ST]) (\d+) (\S+)$/.exec(text);
  if (job) return { kind: job[1] as 'S' | 'T', seq: BigInt(job[2]!), filename: job[3]! };
  const nops = /^N (\d+) (\d+)$/.exec(text);
  if (nops) return { kind: 'N', first: BigInt(nops[1]!), last: BigInt(nops[2]!) };
  return undefined;
}

/**
 * Complete the record a killed run (or a power cut) left half made, from the lock file's note
 * (the second table above), then empty the note. Returns nextseq as it now is. Without this, a
 * crash in the middle of a record leaves a job file below nextseq that nothing ever runs or
 * removes (as in the reference), or runs a finished job again.
 */
export async function finishInterrupted(queue: Queue, seqfile: SeqFile, next: bigint, log: Logger): Promise<bigint> {
  const note = parseNote(seqfile.readNote());
  if (note?.kind === 'N') {
    if (note.first < next) await removeSpentNops(queue, seqfile, note.first, note.last < next ? note.last : next - 1n, log);
  } else if (note && isJobFilename(note.filename) && fs.existsSync(queue.jobPath(note.filename))) {
    const { seq, filename } = note;
    if (note.kind === 'S' && seq === next && seq !== U64_MAX) {
      next = seq + 1n;
      seqfile.write(next);
    }
    if (note.kind === 'T' || seq < next) {
      log.info('process', `Removing ${JSON.stringify(filename)}: job ${seq} was finished by an interrupted run`);
      queue.delete(filename);
      fsyncDir(queue.jobsDir); // as after any job: the spent file stays gone
    }
  }
  seqfile.clearNote();
  return next;
}

/** Delete the NOP files numbered first..last (all below nextseq) that a recorded run of NOPs left behind. */
async function removeSpentNops(queue: Queue, seqfile: SeqFile, first: bigint, last: bigint, log: Logger): Promise<void> {
  const spent = (await queue.scan()).filter((e) => e.header.cmd.kind === 'NOP' && e.header.seq >= first && e.header.seq <= last);
  if (spent.length === 0) return;
  log.info('process', `Removing ${spent.length} NOP job file(s) numbered ${first} to ${last}: finished by an interrupted run`);
  record(queue, seqfile, { remove: spent.map((e) => e.filename) }, log);
}
