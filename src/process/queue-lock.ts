/**
 * A run taking a queue: its lock, then what a crash left half done completed (the Finisher's
 * note, a refusal left with two names, a retry's move), and the checks that a job's end can be
 * recorded, all before any job runs.
 */
import fs from 'node:fs';
import { describeSystemError, QueueError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { Queue } from '../queue/queue.js';
import { isEmptyDir } from '../sys/io.js';
import { nativeStatInfo } from '../sys/native.js';
import type { SeqFile } from '../sys/seqfile.js';
import { Finisher } from './finish.js';
import type { Retries } from './retry-run.js';

/** A queue held by a run: its lock, its records' writer, and the number to run next. */
export interface HeldQueue {
  seqfile: SeqFile;
  finisher: Finisher;
  next: bigint;
}

/** What taking a queue needs of its run. */
export interface TakeSettings {
  log: Logger;
  timestampOrder: boolean;
  opts: { neverDelete?: boolean };
}

/**
 * Take the queue's lock: LockedError if another processor holds it (at once with `wait:
 * false`, after a moment otherwise: Queue.lockSeqfile). `afterCut`: also finish the refusals a
 * power cut left with two names, which only a cut before this process started can leave.
 */
export async function takeQueue(
  queue: Queue,
  ctx: TakeSettings,
  retries: Retries,
  options: { wait?: boolean; afterCut?: boolean },
): Promise<HeldQueue> {
  const seqfile = queue.lockSeqfile(options);
  const finisher = new Finisher(queue, seqfile, ctx.log);
  try {
    let next = await finisher.recover(seqfile.read());
    if (options.afterCut && queue.finishCutRefusals() > 0)
      ctx.log.info('process', `${queue.dir}: finished moving to refused/ what a power cut left in jobs/ too`);
    ctx.log.debug('process', () => `Read next ID ${next} from seqfile`);
    // Unlike the reference, make sure a job's completion can be recorded before running any:
    // otherwise the first job runs, nextseq or the job file can't be updated, and it runs again.
    if (!ctx.timestampOrder) assertWritable(queue, queue.dir);
    if (!ctx.opts.neverDelete) assertWritable(queue, queue.jobsDir);
    next = await retries.ready(finisher, next, ctx.timestampOrder);
    return { seqfile, finisher, next };
  } catch (err) {
    finisher.close();
    seqfile.release();
    throw err;
  }
}

function assertWritable(queue: Queue, dir: string): void {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw new QueueError(`Cannot process queue ${JSON.stringify(queue.dir)}: ${describeSystemError(err)}`, {
      cause: err,
    });
  }
}

/**
 * A lock file but no nextseq, and no job in jobs/ (or no jobs/): a queue being removed, or being
 * made. A look at it (watching, --queues-in) leaves it alone: taking its lock would make nextseq
 * anew (as the reference does when it is missing) in a directory that an operator's `rm -rf` is
 * emptying, which then fails ("Directory not empty"). A job in jobs/ still has its queue taken and
 * nextseq made; without a lock file nothing can be made, and lock() says what is wrong.
 */
export function vanishing(queue: Queue): boolean {
  if (fs.existsSync(queue.seqfilePath) || !fs.existsSync(`${queue.seqfilePath}.lock`)) return false;
  try {
    return isEmptyDir(queue.jobsDir);
  } catch {
    return true; // no jobs/ (or none to read): nothing to run
  }
}

/** The size of the queue's lock file: 0 when no note is in it (finish.ts pads a note to a fixed size). */
export function lockFileSize(queue: Queue): number {
  const lock = `${queue.seqfilePath}.lock`;
  // Asked at every look: through the addon, without an fs.Stats (native.ts nativeStatInfo).
  const info = nativeStatInfo(lock, true);
  if (info !== undefined) return info?.size ?? 0;
  try {
    return fs.statSync(lock).size;
  } catch {
    return 0; // no lock file: lock() says so
  }
}
