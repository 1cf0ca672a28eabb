/**
 * Putting failed jobs back (`fspl queue-retry -q FAILED --to QUEUE [JOB...]`): the
 * packets of a failed-jobs queue (queue-process --failed-to) move into a queue, each exactly once
 * (transfer.ts), in the order of their numbers, each taking that queue's next number, their
 * failure facts taken off. The failed-jobs queue is locked meanwhile, as a processor locks it,
 * and its nextseq moves past the numbers taken out when nothing before them is left (so that it
 * can be processed in sequence order too).
 */
import { NotFoundError, QueueError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { fsyncDir } from '../sys/durable.js';
import { compareBySeq, type JobEntry } from './jobs.js';
import { Queue } from './queue.js';
import { queueDirKind } from './queue-dirs.js';
import { assertTwoQueues, clearTransfer, completeTransfer, transferJob } from './transfer.js';

export interface RetryFailedOptions {
  /** The numbers (in the failed-jobs queue) of the jobs to put back; default: all of them. */
  jobs?: readonly bigint[];
  /**
   * The sequence file of the queue's sender (`prepare -s FILE`): the new numbers are taken from
   * it, so that they never collide with the sender's next packets. Default: QUEUE/writeseq (for
   * a queue that nothing else numbers packets for).
   */
  seqfile?: string;
  logger?: Logger;
}

/** A job put back: its number in the failed-jobs queue, and the one it took in the queue. */
export interface RetriedJob {
  from: bigint;
  to: bigint;
}

/** Move the failed jobs of `failedDir` (or those numbered `jobs`) into the queue `toDir`; resolves to what moved. */
export async function retryFailedJobs(
  failedDir: string,
  toDir: string,
  options: RetryFailedOptions = {},
): Promise<RetriedJob[]> {
  const log = options.logger ?? silentLogger;
  for (const dir of [failedDir, toDir])
    if (queueDirKind(dir) !== 'queue') throw new QueueError(`${JSON.stringify(dir)} is not a queue`);
  assertTwoQueues(failedDir, toDir);
  const failed = new Queue(failedDir, { logger: log });
  const to = new Queue(toDir, { logger: log });
  const seqfile = failed.lockSeqfile();
  try {
    // A move that a crash cut short is completed first, its packet removed from here.
    const pending = completeTransfer(failed);
    if (pending) removeJob(failed, pending.filename);
    clearTransfer(failed.dir);
    const chosen = choose(await failed.list(), options.jobs, failedDir);
    const moved: RetriedJob[] = [];
    for (const entry of chosen) {
      const note = transferJob(failed, entry, to, { numbers: options.seqfile });
      removeJob(failed, entry.filename);
      clearTransfer(failed.dir);
      log.info(
        'queue',
        `Job ${entry.header.seq} of ${JSON.stringify(failedDir)} put ` +
          `back into ${JSON.stringify(toDir)} as job ${note.number}`,
      );
      moved.push({ from: entry.header.seq, to: note.number });
    }
    const next = seqfile.read();
    const left = (await failed.list()).map((e) => e.header.seq).filter((s) => s >= next);
    const past = moved.reduce((m, j) => (j.from >= m ? j.from + 1n : m), next);
    const target = left.length > 0 && left[0]! < past ? left[0]! : past;
    if (target > next) seqfile.write(target, next);
    return moved;
  } finally {
    seqfile.release();
  }
}

/** The jobs asked for, in order of their numbers; NotFoundError for a number that is not there. */
function choose(jobs: JobEntry[], wanted: readonly bigint[] | undefined, dir: string): JobEntry[] {
  jobs.sort(compareBySeq);
  if (wanted === undefined) return jobs;
  const bySeq = new Map(jobs.map((j) => [j.header.seq, j]));
  const out: JobEntry[] = [];
  for (const seq of [...new Set(wanted)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const job = bySeq.get(seq);
    if (!job) throw new NotFoundError(`Job ${seq} not found in queue ${JSON.stringify(dir)}`);
    out.push(job);
  }
  return out;
}

/** Step 5 of a transfer out of the failed-jobs queue: its packet removed, durably (jobs/ fsynced). */
function removeJob(queue: Queue, filename: string): void {
  try {
    queue.delete(filename);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fsyncDir(queue.jobsDir);
}
