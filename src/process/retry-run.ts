/**
 * A queue run's retries and failed jobs (queue-run.ts keeps one Retries): the attempts record it
 * holds (retry.ts), whether the next job waits for its next try, what a failed try becomes (a
 * retry scheduled, a move to the failed-jobs queue, or onError's as without these options), and
 * the completion, at lock, of a move a crash cut short (transfer.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { QueueError, RetryDueError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { FailureFacts } from '../packet/types.js';
import type { JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import { closeQuietly } from '../sys/io.js';
import { openExisting } from '../sys/untrusted.js';
import type { Finisher } from './finish.js';
import type { Outcome } from './outcome.js';
import {
  type AttemptRecord,
  clearAttempts,
  type RetryPolicy,
  readAttempts,
  recordIsFor,
  retriesFor,
  retryDelayMs,
  writeAttempts,
} from './retry.js';

/** What a failed try became: tried again at `retryAt`; moved (as job `number` of the failed-jobs queue); or neither. */
export type FailedTry = { kind: 'retry'; retryAt: Date } | { kind: 'moved'; number: bigint } | { kind: 'onError' };

/** The run's settings these need (RunContext's). */
export interface RetrySettings {
  retry?: RetryPolicy;
  failedTo?: string;
  log: Logger;
  /** Watching: a scheduled retry is said as it happens (a one pass says it in its error). */
  watching: boolean;
  /** --output-to SaveBoth: a moved packet's facts keep the last lines of jobs/FILE.out. */
  savedOutput: boolean;
}

export class Retries {
  /** The queue's attempts record, as last read (load) or written. */
  private record: AttemptRecord | undefined;
  /** When the next job's next try is due, if it waits for it (ms since the epoch). */
  dueMs: number | undefined;
  /** Why the job the record names failed, when it failed in this run (for RetryDueError). */
  private failedWhy: string | undefined;

  constructor(
    private readonly queue: Queue,
    private readonly s: RetrySettings,
  ) {}

  /** Whether there is anything to do: retries or a failed-jobs queue. */
  get active(): boolean {
    return this.s.retry !== undefined || this.s.failedTo !== undefined;
  }

  /** At each scan: the record read again (another run may have written it). */
  load(): void {
    if (this.s.retry) this.record = readAttempts(this.queue.dir);
    this.dueMs = undefined;
  }

  /** How many times the job was tried before (0 without retries). */
  triesOf(entry: JobEntry): number {
    return this.s.retry && recordIsFor(this.record, entry.header.seq, entry.filename) ? this.record.tries : 0;
  }

  /** The FSPL_JOB_ATTEMPT of the job's next try, with retries. */
  attemptOf(entry: JobEntry): number | undefined {
    return this.s.retry ? this.triesOf(entry) + 1 : undefined;
  }

  /** Whether the job's next try is not due yet (dueMs then says when it is). */
  waits(entry: JobEntry): boolean {
    const r = this.record;
    this.dueMs =
      this.s.retry && recordIsFor(r, entry.header.seq, entry.filename) && r.dueMs > Date.now() ? r.dueMs : undefined;
    return this.dueMs !== undefined;
  }

  /**
   * After try number `tries` of a job failed: a retry scheduled (its record durable first), or a
   * move to the failed-jobs queue with `record` (the caller's record of the job as done, made
   * between the packet's copy and the journal's removal: transfer.ts), or onError's, the tries
   * kept counting (due at once: a next run tries again under onError 'retry').
   */
  async failed(entry: JobEntry, outcome: Outcome, tries: number, record: () => void): Promise<FailedTry> {
    const { retry, failedTo, log } = this.s;
    const { seq, filename } = { seq: entry.header.seq, filename: entry.filename };
    const allowed = retry ? retriesFor(retry, entry.header) : 0;
    if (retry && tries <= allowed) {
      this.record = { seq, filename, tries, dueMs: Date.now() + retryDelayMs(retry, tries) };
      writeAttempts(this.queue.dir, this.record); // durable before the next try can begin
      this.failedWhy = outcome.why;
      this.dueMs = this.record.dueMs;
      const line = `Job ${seq} failed (${outcome.why}); ${tryDue(this.record, allowed)}`;
      if (this.s.watching) log.warn('process', line);
      else log.debug('process', line);
      return { kind: 'retry', retryAt: new Date(this.record.dueMs) };
    }
    if (failedTo !== undefined) {
      const [{ transferJob, clearTransfer }, { Queue }] = await Promise.all([
        import('../queue/transfer.js'),
        import('../queue/queue.js'),
      ]);
      const note = transferJob(this.queue, entry, new Queue(failedTo, { logger: log }), {
        failure: failureOf(this.queue, entry, outcome, tries, this.s.savedOutput),
      });
      record();
      clearTransfer(this.queue.dir);
      this.done(entry);
      log.warn(
        'process',
        `Job ${seq} failed (${outcome.why}) after ${tries} tr${tries === 1 ? 'y' : 'ies'}: ` +
          `moved to ${JSON.stringify(failedTo)} as job ${note.number}`,
      );
      return { kind: 'moved', number: note.number };
    }
    if (retry) {
      this.record = { seq, filename, tries, dueMs: 0 };
      writeAttempts(this.queue.dir, this.record);
    }
    return { kind: 'onError' };
  }

  /** The job is recorded as done: a record naming it goes (durably: retry.ts). */
  done(entry: JobEntry): void {
    if (!recordIsFor(this.record, entry.header.seq, entry.filename)) return;
    this.record = undefined;
    clearAttempts(this.queue.dir);
  }

  /** The error a one-pass run ends with when its next job (`entry`) waits for its next try. */
  dueError(entry: JobEntry | undefined, next: bigint): RetryDueError {
    const record = this.record ?? { seq: next, filename: '', tries: 0, dueMs: this.dueMs ?? Date.now() };
    const allowed = entry && this.s.retry ? retriesFor(this.s.retry, entry.header) : (this.s.retry?.retries ?? 0);
    const failed =
      this.failedWhy === undefined
        ? `Job ${record.seq} waits for its next try`
        : `Job ${record.seq} failed (${this.failedWhy})`;
    return new RetryDueError(
      `${failed}; ${tryDue(record, allowed)}; stopping, the job stays in the queue`,
      new Date(record.dueMs),
    );
  }

  /**
   * At lock, with a failed-jobs queue: the queue is plain, the failed-jobs queue is made if need
   * be, and a move a crash cut short is completed (transfer.ts), its job recorded (`record`:
   * whether nextseq moves past it). Returns nextseq as it then is.
   */
  async ready(finisher: Finisher, next: bigint, timestampOrder: boolean): Promise<bigint> {
    const { queue } = this;
    if (this.s.failedTo === undefined) return next;
    if (queue.decoder !== undefined)
      throw new QueueError(
        `Cannot move failed jobs of ${JSON.stringify(queue.dir)}: --failed-to ` +
          `takes plain queues only (this one has a decoder)`,
      );
    const { assertTwoQueues, ensureQueueDir, completeTransfer, clearTransfer } = await import('../queue/transfer.js');
    assertTwoQueues(queue.dir, this.s.failedTo);
    ensureQueueDir(this.s.failedTo);
    const note = completeTransfer(queue);
    if (!note) return next;
    // In sequence order a job below nextseq was recorded already: only its file is left to remove.
    const passes = !timestampOrder && note.seq === next;
    finisher.finishJob({
      seq: note.seq,
      filename: note.filename,
      order: passes ? 'sequence' : 'timestamp',
      remove: true,
    });
    clearTransfer(queue.dir);
    return passes ? next + 1n : next;
  }
}

/** "try 2 of 4 is due at 2026-...Z" */
function tryDue(record: AttemptRecord, allowed: number): string {
  return `try ${record.tries + 1} of ${allowed + 1} is due at ${new Date(record.dueMs).toISOString()}`;
}

/** The facts a packet moved to the failed-jobs queue carries in its header (retry-keys.ts). */
export function failureOf(
  queue: Queue,
  entry: JobEntry,
  outcome: Outcome,
  tries: number,
  savedOutput = false,
): FailureFacts {
  const tail = savedOutput ? outputTail(queue.jobPath(`${entry.filename}.out`)) : undefined;
  return {
    ...(tail === undefined ? {} : { tail }),
    queue: path.resolve(queue.dir),
    seq: entry.header.seq,
    attempts: tries,
    outcome: outcome.timedOut ? 'timeout' : 'failure',
    why: outcome.why,
    at: new Date().toISOString(),
  };
}

/** The most of a job's saved output a moved packet keeps, and the most lines of it. */
const TAIL_BYTES = 4096;
const TAIL_LINES = 20;

/** The last lines of a job's saved output (its .out file, at most TAIL_BYTES from its end); undefined if unreadable. */
export function outputTail(file: string): string | undefined {
  let fd: number | undefined;
  try {
    const opened = openExisting(file);
    fd = opened.fd;
    const size = opened.stat.size;
    const buf = Buffer.alloc(Math.min(TAIL_BYTES, size));
    const n = fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    const lines = buf.subarray(0, n).toString('utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (n < size) lines.shift(); // cut in the middle: the first line is partial
    return lines.slice(-TAIL_LINES).join('\n');
  } catch {
    return undefined;
  } finally {
    closeQuietly(fd);
  }
}
