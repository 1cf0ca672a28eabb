/**
 * A diagnosis of a queue (`fspl queue-status`): where processing stands, whether it can go on,
 * and why not. Read-only: it changes nothing and does not take the queue lock (it only probes it
 * for an instant, with a shared lock, to tell whether another process holds it), so it can run at
 * any time, even while `queue-process` holds the queue. What it reports: docs/queues.md.
 *
 * Built on Queue's public methods only; the files that are not jobs come from a readdir of our
 * own (files.ts). Read it from `queueStatus` down: each step is a function of its own below it.
 */

import fs from 'node:fs';
import { describeSystemError } from '../base/errors.js';
import { notYet } from '../packet/not-before.js';
import type { Ctime } from '../packet/types.js';
import type { JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import { listRefused } from '../queue/refused.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { judgeSignedHeader } from '../sign/judge.js';
import { isLocked } from '../sys/lock.js';
import { parseSeqfileText, seqParseProblem } from '../sys/seq-text.js';
import { damagedJobs, filesBesideJobs, scanJobFiles, type TooLargeFile } from './files.js';
import { formatRanges, toRanges } from './ranges.js';
import type {
  LockInfo,
  NextSeqInfo,
  QueueState,
  QueueStatus,
  QueueStatusOptions,
  StatusJob,
  StatusProblem,
} from './types.js';

export type {
  LockInfo,
  NextSeqInfo,
  QueueState,
  QueueStatus,
  QueueStatusOptions,
  StatusJob,
  StatusProblem,
} from './types.js';

/** A readable job, as the steps below see it. */
interface ReadJob {
  seq: bigint;
  filename: string;
  ctime: Ctime;
  sealed: boolean;
  /** Its not-before time, ms since the epoch (packet/not-before.ts). */
  notBefore?: number;
}

/** Examine a queue. Fails (QueueError) only when DIR is not a queue or jobs/ can not be read. */
export async function queueStatus(queue: Queue, options: QueueStatusOptions = {}): Promise<QueueStatus> {
  queue.assertExists();
  const nowMs = (options.now ?? new Date()).getTime();
  const nowSecs = Math.floor(nowMs / 1000);
  const checkedAt: Ctime = { secs: BigInt(nowSecs), nanos: (nowMs - nowSecs * 1000) * 1_000_000 };

  const { tempFiles, outputFiles, otherFiles } = filesBesideJobs(queue, nowMs);
  const { entries, undecodable, tooLarge } = await scanJobFiles(queue);
  const jobs = sortedJobs(entries);
  const damaged = queue.decoder === undefined ? damagedJobs(queue, entries) : [];
  damaged.sort((a, b) => cmpSeq(a.seq, b.seq));
  const duplicates = duplicateSeqs(jobs);

  const nextseq = readNextseq(queue);
  const lock = readLock(queue);
  const nextValue = nextseq.value;
  const waitingJobs = nextValue === undefined ? jobs : jobs.filter((j) => j.seq >= nextValue);
  const belowJobs = nextValue === undefined ? [] : jobs.filter((j) => j.seq < nextValue);
  const waitingUnique = uniqueSeqs(waitingJobs);
  const fromNext = runFromNext(nextValue, waitingUnique);
  const notBefore = firstNotDue(waitingJobs, nextValue, fromNext.runnable, nowMs);
  const runnable = notBefore === undefined ? fromNext.runnable : Number(notBefore.seq - nextValue!);
  const { gap } = fromNext;
  // The next number, missing among the jobs read, may be claimed by a file too large to read.
  const claimant =
    nextValue === undefined || waitingUnique[0] === nextValue
      ? undefined
      : tooLarge.find((f) => f.claimedSeq === nextValue);
  const verdict = judge(
    nextseq,
    lock,
    gap,
    duplicates,
    waitingJobs.length,
    claimant,
    runnable === 0 && notBefore !== undefined,
  );
  const { oldest, newest } = oldestAndNewest(waitingJobs);
  const asJob = ({ notBefore: _, ...j }: ReadJob): StatusJob => ({
    ...j,
    ageSeconds: Number(BigInt(nowSecs) - j.ctime.secs),
  });

  return {
    dir: queue.dir,
    decoder: queue.decoder,
    checkedAt,
    state: verdict.state,
    canProgress: verdict.state !== 'stuck',
    problems: verdict.problems,
    nextseq,
    lock,
    jobs: jobs.length,
    waiting: waitingJobs.length,
    waitingSeqs: toRanges(waitingUnique),
    // Nothing runs in an append-only queue, nor in a stuck one.
    runnable: verdict.state === 'append-only' || verdict.state === 'stuck' ? 0 : runnable,
    notBefore: verdict.state === 'append-only' || verdict.state === 'stuck' ? undefined : notBefore,
    gap,
    belowNext: belowJobs.length,
    belowNextSeqs: toRanges(uniqueSeqs(belowJobs)),
    duplicates,
    oldest: oldest && asJob(oldest),
    newest: newest && asJob(newest),
    undecodable,
    tooLarge,
    sealed: jobs.filter((j) => j.sealed).length,
    damaged,
    signed: entries.filter((e) => e.header.signature !== undefined).length,
    unsigned: queue.allowedSigners ? refusable(entries, queue.allowedSigners) : [],
    refused: listRefused(queue.dir),
    tempFiles,
    outputFiles,
    otherFiles,
  };
}

/** The jobs whose header the allowed signers refuse (sign/judge.ts), by number. */
function refusable(
  entries: readonly JobEntry[],
  signers: AllowedSigners,
): Array<{ seq: bigint; filename: string; why: string }> {
  const out: Array<{ seq: bigint; filename: string; why: string }> = [];
  for (const e of entries) {
    const { why } = judgeSignedHeader(e.header, signers);
    if (why !== undefined) out.push({ seq: e.header.seq, filename: e.filename, why });
  }
  return out.sort((a, b) => cmpSeq(a.seq, b.seq));
}

/** The readable jobs in sequence order; ties keep directory order (the sort is stable). */
function sortedJobs(entries: readonly JobEntry[]): ReadJob[] {
  const jobs = entries.map((e) => ({
    seq: e.header.seq,
    filename: e.filename,
    ctime: e.header.ctime,
    sealed: e.header.seal !== undefined,
    ...(e.header.notBefore === undefined ? {} : { notBefore: e.header.notBefore }),
  }));
  jobs.sort((a, b) => cmpSeq(a.seq, b.seq));
  return jobs;
}

/** Sequence numbers held by more than one job file, anywhere in the queue (jobs sorted by number). */
function duplicateSeqs(jobs: readonly ReadJob[]): Array<{ seq: bigint; files: string[] }> {
  const duplicates: Array<{ seq: bigint; files: string[] }> = [];
  for (let i = 0; i < jobs.length; ) {
    let j = i + 1;
    while (j < jobs.length && jobs[j]!.seq === jobs[i]!.seq) j++;
    if (j - i > 1) duplicates.push({ seq: jobs[i]!.seq, files: jobs.slice(i, j).map((x) => x.filename) });
    i = j;
  }
  return duplicates;
}

/** The distinct numbers of jobs sorted by number. */
function uniqueSeqs(list: readonly ReadJob[]): bigint[] {
  const out: bigint[] = [];
  for (const j of list) if (out.length === 0 || out[out.length - 1] !== j.seq) out.push(j.seq);
  return out;
}

/** What queue-process would run now from nextseq, and the first gap (none without a nextseq). */
function runFromNext(
  nextValue: bigint | undefined,
  waitingUnique: readonly bigint[],
): { runnable: number; gap: QueueStatus['gap'] } {
  if (nextValue === undefined) return { runnable: 0, gap: undefined };
  let k = 0;
  while (k < waitingUnique.length && waitingUnique[k] === nextValue + BigInt(k)) k++;
  let gap: QueueStatus['gap'];
  if (k < waitingUnique.length) {
    const seq = nextValue + BigInt(k);
    gap = { seq, isNext: k === 0, presentBeyond: toRanges(waitingUnique.slice(k)) };
  }
  return { runnable: k, gap };
}

/** Among the `runnable` jobs from nextseq, the first not due at `nowMs` (its not-before time): a run stops there. */
function firstNotDue(
  waitingJobs: readonly ReadJob[],
  nextValue: bigint | undefined,
  runnable: number,
  nowMs: number,
): QueueStatus['notBefore'] {
  if (nextValue === undefined) return undefined;
  for (const j of waitingJobs) {
    if (j.seq - nextValue >= BigInt(runnable)) break; // sorted by number: past the run
    if (notYet(j, nowMs)) return { seq: j.seq, at: new Date(j.notBefore!) };
  }
  return undefined;
}

/** The queue's state, and the problems that make it stuck. */
function judge(
  nextseq: NextSeqInfo,
  lock: LockInfo,
  gap: QueueStatus['gap'],
  duplicates: QueueStatus['duplicates'],
  waiting: number,
  claimant: TooLargeFile | undefined,
  nextNotDue: boolean,
): { state: QueueState; problems: StatusProblem[] } {
  const problems: StatusProblem[] = [];
  if (nextseq.state === 'append-only') return { state: 'append-only', problems };
  if (claimant) {
    problems.push({
      code: 'next-too-large',
      message:
        `next job ${nextseq.value} is claimed by ${claimant.filename}, ` +
        `whose header metadata (${claimant.metadataLength} ` +
        `bytes) is over the limit of ${claimant.limit} bytes, ` +
        `so it is not read: raise --max-header-size to run it`,
    });
  } else if (gap?.isNext) problems.push({ code: 'next-missing', message: `next job ${gap.seq} is missing` });
  if (nextseq.state === 'invalid') {
    problems.push({
      code: 'bad-nextseq',
      message: `nextseq is not a valid number (${nextseq.problem}); fix it with queue-set-next`,
    });
  }
  if (nextseq.state === 'unreadable')
    problems.push({ code: 'bad-nextseq', message: `nextseq can not be read: ${nextseq.problem}` });
  if (lock.state === 'missing') {
    problems.push({
      code: 'no-lock-file',
      message: `${lock.path} is missing, so queue-process can not lock the queue`,
    });
  }
  if (duplicates.length > 0) {
    const one = duplicates.length === 1;
    problems.push({
      code: 'duplicate-seq',
      message:
        `duplicate sequence ${one ? 'number' : 'numbers'} ` +
        `${formatRanges(toRanges(duplicates.map((d) => d.seq)), 10)}: queue-process refuses the queue`,
    });
  }
  if (problems.length > 0) return { state: 'stuck', problems };
  return { state: waiting === 0 ? 'idle' : nextNotDue ? 'waiting' : 'ready', problems };
}

/** The waiting jobs created first and last (by header ctime; the first found wins a tie). */
function oldestAndNewest(waitingJobs: readonly ReadJob[]): {
  oldest: ReadJob | undefined;
  newest: ReadJob | undefined;
} {
  let oldest: ReadJob | undefined;
  let newest: ReadJob | undefined;
  for (const j of waitingJobs) {
    if (!oldest || cmpCtime(j.ctime, oldest.ctime) < 0) oldest = j;
    if (!newest || cmpCtime(j.ctime, newest.ctime) > 0) newest = j;
  }
  return { oldest, newest };
}

function readNextseq(queue: Queue): NextSeqInfo {
  let text: string | undefined;
  try {
    text = fs.readFileSync(queue.seqfilePath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      return { state: 'unreadable', problem: describeSystemError(err) };
  }
  if (text === undefined) {
    return fs.existsSync(`${queue.seqfilePath}.lock`) ? { state: 'missing', value: 1n } : { state: 'append-only' };
  }
  const value = parseSeqfileText(text);
  if (value === undefined) {
    const nl = text.indexOf('\n');
    return {
      state: 'invalid',
      problem: seqParseProblem((nl < 0 ? text : text.slice(0, nl)).trim()),
      text: text.slice(0, 40),
    };
  }
  return { state: 'present', value };
}

function readLock(queue: Queue): LockInfo {
  const p = `${queue.seqfilePath}.lock`;
  if (!fs.existsSync(p)) return { path: p, state: 'missing' };
  return { path: p, state: isLocked(p) ? 'held' : 'free' };
}

function cmpSeq(a: bigint, b: bigint): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

function cmpCtime(a: Ctime, b: Ctime): number {
  if (a.secs !== b.secs) return a.secs < b.secs ? -1 : 1;
  return a.nanos - b.nanos;
}
