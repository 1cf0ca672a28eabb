/**
 * What a watching run's page and /metrics show of its queues (listen.ts serves them): counts
 * kept from the run's events (jobs done by outcome, refused packets, the running job, the last
 * success, the last failures, why a queue stopped), and figures read from each queue's
 * directory when asked (jobs waiting, the oldest one's age, the next number). Counts start at 0
 * with each run, which Prometheus reads as a counter reset.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeSystemError } from '../base/errors.js';
import { isJobFilename } from '../queue/jobs.js';
import type { OrderBy } from '../queue/types.js';
import { closeQuietly, forEachDirName, readSomeSync } from '../sys/io.js';
import { SeqFile } from '../sys/seqfile.js';
import { openExisting } from '../sys/untrusted.js';
import type { QueueJobEvent, QueuesEvent } from './options.js';
import { OUTCOME_WORDS, type OutcomeWord } from './outcome.js';

/** Failures kept per queue for the page, newest first. */
const FAILURES_KEPT = 10;
/** The tail of a failed job's saved output (--output-to saveboth) shown with it, bytes. */
const OUTPUT_TAIL = 4096;

export interface JobFailure {
  seq: string;
  /** When it ended, ms since the epoch. */
  at: number;
  why: string;
  outcome: OutcomeWord;
  /** The end of what it wrote (stdout and stderr), when saved (--output-to saveboth); else undefined. */
  output?: string;
}

/** What a queue is doing: running a job, waiting for one (a number, or any), stopped on one, or skipped. */
export type QueueRunState =
  | { kind: 'running'; seq: string; since: number }
  /** Waiting for job `seq` (sequence order), or any job; `until`: a retry due then, or a not-before time (epoch ms). */
  | { kind: 'waiting'; seq?: string; until?: number }
  | { kind: 'stopped'; seq?: string; why: string }
  | { kind: 'skipped'; why: string };

/** One queue's figures, as /api/status and the event stream send them. */
export interface QueueFigures {
  /** The queue's directory as given (the metrics' `queue` label). */
  queue: string;
  state: QueueRunState;
  jobs: Record<OutcomeWord, number>;
  refused: number;
  /** Jobs in jobs/ (waiting, or kept after they ran under --never-delete or --on-error leave). */
  waiting: number;
  /** Age of the oldest job file, s (by its ctime: when it came into jobs/); 0 with none. */
  oldestAgeSeconds: number;
  /** Sequence order: the number nextseq holds (undefined when it can't be read). */
  next?: string;
  /** Seconds the running job has taken so far; 0 when none runs. */
  runningSeconds: number;
  /** When a job last succeeded, ms since the epoch. */
  lastSuccessAt?: number;
  /** Retries due (jobs waiting to be tried again): 1 while the queue waits for its next try, else 0. */
  retriesDue: number;
  failures: JobFailure[];
}

export interface QueuesPage {
  /** When the figures were read, ms since the epoch. */
  at: number;
  queues: QueueFigures[];
}

interface Tally {
  queue: string;
  jobs: Record<OutcomeWord, number>;
  refused: number;
  running?: { seq: bigint; since: number };
  lastSuccessAt?: number;
  stopped?: { seq?: bigint; why: string };
  skipped?: string;
  lastFailedSeq?: bigint;
  /** A retry due then (ms since the epoch): the queue waits for it (--retries). */
  retryAt?: number;
  /** The next job's not-before time (ms since the epoch): the queue waits for it. */
  notBefore?: number;
  failures: JobFailure[];
}

export class QueueMonitor {
  private readonly tallies = new Map<string, Tally>();

  constructor(private readonly run: { orderBy?: OrderBy; outputTo?: string; onError?: string } = {}) {}

  /** A queue of the run (its directory as given); joining twice changes nothing. */
  add(queue: string): void {
    if (this.tallies.has(queue)) return;
    const jobs = Object.fromEntries(OUTCOME_WORDS.map((w) => [w, 0])) as Record<OutcomeWord, number>;
    this.tallies.set(queue, { queue, jobs, refused: 0, failures: [] });
  }

  /** An event of processQueues (listen it to onEvent). */
  onQueuesEvent(e: QueuesEvent): void {
    if (e.type === 'idle') return;
    if (e.type === 'added') this.add(e.queue);
    else if (e.type === 'removed') this.tallies.delete(e.queue);
    else this.onRunEvent(e);
  }

  private onRunEvent(e: Exclude<QueuesEvent, { type: 'idle' | 'added' | 'removed' }>): void {
    const t = this.tally(e.queue);
    if (e.type === 'skipped') t.skipped = e.why;
    else if (e.type === 'stopped') t.stopped = { seq: t.lastFailedSeq, why: describeSystemError(e.error) };
    else this.onJobEvent(e.queue, e);
  }

  /** An event of one queue's run (processQueue's onEvent, with its directory). */
  onJobEvent(queue: string, e: QueueJobEvent | { type: 'idle' }): void {
    if (e.type === 'idle' || e.type === 'scan') return;
    const t = this.tally(queue);
    if (e.type === 'waiting') {
      t.notBefore = e.until.getTime();
      return;
    }
    if (e.type === 'start') {
      t.running = { seq: e.seq, since: Date.now() };
      t.retryAt = undefined;
      t.notBefore = undefined;
      t.stopped = undefined;
      t.skipped = undefined;
      return;
    }
    t.running = undefined;
    if (e.refused) t.refused++;
    if (e.refused || e.interrupted || e.outcome === undefined) return;
    t.jobs[e.outcome]++;
    if (e.outcome === 'success') {
      t.lastSuccessAt = Date.now();
      return;
    }
    t.lastFailedSeq = e.seq;
    const failure: JobFailure = {
      seq: e.seq.toString(),
      at: Date.now(),
      why: e.why,
      outcome: e.outcome,
      output: this.savedOutput(queue, e.filename),
    };
    t.failures = [failure, ...t.failures].slice(0, FAILURES_KEPT);
    // A retry due: the queue waits for it; a move: it goes on. Neither stops it.
    if (e.outcome === 'retry') t.retryAt = e.retryAt?.getTime();
    if (e.outcome === 'retry' || e.outcome === 'moved') return;
    // One queue under --on-error retry: this failure ends the run (no 'stopped' event follows).
    if ((this.run.onError ?? 'retry') === 'retry') t.stopped = { seq: e.seq, why: `job ${e.seq} ${e.why}` };
  }

  /** Every queue's figures now: the counts, and what its directory holds. */
  page(): QueuesPage {
    const now = Date.now();
    return { at: now, queues: [...this.tallies.values()].map((t) => this.figures(t, now)) };
  }

  private tally(queue: string): Tally {
    this.add(queue);
    return this.tallies.get(queue)!;
  }

  private figures(t: Tally, now: number): QueueFigures {
    const dir = readJobsDir(path.join(t.queue, 'jobs'), now);
    const next = this.run.orderBy === 'timestamp' ? undefined : SeqFile.peek(path.join(t.queue, 'nextseq'));
    const until = t.retryAt ?? t.notBefore;
    const state: QueueRunState = t.running
      ? { kind: 'running', seq: t.running.seq.toString(), since: t.running.since }
      : t.stopped
        ? { kind: 'stopped', seq: t.stopped.seq?.toString(), why: t.stopped.why }
        : t.skipped
          ? { kind: 'skipped', why: t.skipped }
          : { kind: 'waiting', seq: next?.toString(), ...(until !== undefined && until > now && { until }) };
    return {
      queue: t.queue,
      state,
      jobs: { ...t.jobs },
      refused: t.refused,
      waiting: dir.count,
      oldestAgeSeconds: dir.oldestAgeSeconds,
      next: next?.toString(),
      runningSeconds: t.running ? (now - t.running.since) / 1000 : 0,
      lastSuccessAt: t.lastSuccessAt,
      retriesDue: t.retryAt !== undefined && t.retryAt > now ? 1 : 0,
      failures: t.failures,
    };
  }

  /** The tail of a failed job's saved output (saveboth), read as it ends; undefined otherwise. */
  private savedOutput(queue: string, filename: string): string | undefined {
    if (this.run.outputTo !== 'saveboth') return undefined;
    let fd: number | undefined;
    try {
      const opened = openExisting(path.join(queue, 'jobs', `${filename}.out`));
      fd = opened.fd;
      const length = Math.min(opened.stat.size, OUTPUT_TAIL);
      const buf = Buffer.alloc(length);
      const n = readSomeSync(fd, buf, 0, length, opened.stat.size - length);
      return buf.subarray(0, n).toString('utf8');
    } catch {
      return undefined; // gone already (--on-error delete), or not a file of ours to read
    } finally {
      closeQuietly(fd);
    }
  }
}

/** How many job files jobs/ holds, and the age of the oldest (by ctime), s. */
function readJobsDir(jobsDir: string, now: number): { count: number; oldestAgeSeconds: number } {
  let count = 0;
  let oldest = now;
  try {
    forEachDirName(jobsDir, (name) => {
      if (!isJobFilename(name)) return;
      count++;
      try {
        oldest = Math.min(oldest, fs.lstatSync(path.join(jobsDir, name)).ctimeMs);
      } catch {
        // Run and deleted since the listing: not waiting any more.
      }
    });
  } catch {
    // A queue that can't be read shows nothing waiting; its run says why.
  }
  return { count, oldestAgeSeconds: Math.max(0, (now - oldest) / 1000) };
}
