/**
 * Retries with a back-off (queue-process --retries N): a failing job is tried again,
 * up to N more times, after a delay that doubles from --retry-delay up to --retry-max-delay. The
 * queue waits for it meanwhile (strict order: nothing after it runs).
 *
 * The tries are counted durably beside the queue, never in memory, in one small file of the queue
 * directory, `attempts` (the reference never reads it):
 *
 *   SEQ TRIES DUE FILE      job SEQ (its file FILE in jobs/) has been tried TRIES times and
 *                           fails; its next try is due at DUE (milliseconds since the epoch)
 *
 * It names one job, the one the queue waits for; a record naming another job (one since finished,
 * or a file gone) is stale and means nothing. Durability:
 *
 *   | step               | durable once                         | without it, after a power cut                     |
 *   | ------------------ | ------------------------------------ | ------------------------------------------------- |
 *   | the record after a | attempts.temp fsynced, renamed over  | the try is not counted: the job runs again at     |
 *   | failed try         | attempts, the queue directory        | once, one try more                                |
 *   |                    | fsynced                              |                                                   |
 *   | the record removed | the queue directory fsynced          | a stale record, ignored (its job is done), or,    |
 *   | (the job finished) |                                      | for a job file kept in place, a try counted too   |
 *   |                    |                                      | many                                              |
 *
 * So a `kill -9` or a power cut loses at most the try that was running, and never skips the job
 * (it stays in jobs/ until it succeeds, or is recorded as the options say).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PacketHeader } from '../packet/types.js';
import { fsyncDir } from '../sys/durable.js';
import { closeQuietly, unlinkQuietly } from '../sys/io.js';
import { openExisting, writeFresh } from '../sys/untrusted.js';

/** --retry-delay's default, in seconds: the first retry comes this long after the failure. */
export const DEFAULT_RETRY_DELAY = 10;
/** --retry-max-delay's default, in seconds: the doubling stops here (one hour). */
export const DEFAULT_RETRY_MAX_DELAY = 3600;

export const ATTEMPTS_FILE = 'attempts';
/** The longest record read back: one line of ours (a hostile, larger file is not read whole). */
const RECORD_MAX = 4096;

/** How a run retries its failing jobs. */
export interface RetryPolicy {
  /** Tries after the first. */
  retries: number;
  /** The wait before the first retry, doubling for each one after, in ms. */
  delayMs: number;
  /** The longest wait, in ms. */
  maxDelayMs: number;
}

/** A job the queue waits for: how many times it was tried, and when its next try is due. */
export interface AttemptRecord {
  seq: bigint;
  filename: string;
  /** Tries so far (each failed). */
  tries: number;
  /** The next try's due time, ms since the epoch. */
  dueMs: number;
}

/** The retries a job gets: the run's, or fewer if its packet asks for fewer (`prepare --retries`). */
export function retriesFor(policy: RetryPolicy, header: PacketHeader): number {
  const asked = header.retries;
  return asked === undefined || asked >= BigInt(policy.retries) ? policy.retries : Number(asked);
}

/** The wait after a job's try number `tries` (from 1) failed: delayMs, doubling, at most maxDelayMs. */
export function retryDelayMs(policy: RetryPolicy, tries: number): number {
  return Math.min(policy.maxDelayMs, policy.delayMs * 2 ** Math.min(Math.max(0, tries - 1), 40));
}

/** Whether a record is about this job (its number and its file). */
export function recordIsFor(record: AttemptRecord | undefined, seq: bigint, filename: string): record is AttemptRecord {
  return record !== undefined && record.seq === seq && record.filename === filename;
}

/**
 * The queue's record, if it has one that reads as one (the queue
 * directory is not ours alone: opened without following a link).
 */
export function readAttempts(queueDir: string): AttemptRecord | undefined {
  let fd: number | undefined;
  try {
    fd = openExisting(path.join(queueDir, ATTEMPTS_FILE)).fd;
    const buf = Buffer.alloc(RECORD_MAX);
    const n = fs.readSync(fd, buf, 0, RECORD_MAX, 0);
    return parseAttempts(buf.subarray(0, n).toString('utf8'));
  } catch {
    return undefined; // none, or not ours to read: no record
  } finally {
    closeQuietly(fd);
  }
}

const RECORD = /^(\d{1,20}) (\d{1,10}) (\d{1,16}) (fspl-\S+\.fspl)\n?$/;

export function parseAttempts(text: string): AttemptRecord | undefined {
  const m = RECORD.exec(text);
  if (!m) return undefined;
  return { seq: BigInt(m[1]!), tries: Number(m[2]), dueMs: Number(m[3]), filename: m[4]! };
}

export function formatAttempts(r: AttemptRecord): string {
  return `${r.seq} ${r.tries} ${Math.ceil(r.dueMs)} ${r.filename}\n`;
}

/** Store the record, durably (the table above), before the job's next try can begin. */
export function writeAttempts(queueDir: string, record: AttemptRecord): void {
  const file = path.join(queueDir, ATTEMPTS_FILE);
  const temp = `${file}.temp`;
  // Made anew whatever was planted at the temporary name; its bytes durable by the fsync.
  writeFresh(temp, formatAttempts(record), 0o644, { fsync: true });
  fs.renameSync(temp, file);
  fsyncDir(queueDir); // the rename, and so the count, survive a power cut
}

/** Remove the record (its job is done), durably: a record that came back would count a try too many. */
export function clearAttempts(queueDir: string): void {
  const file = path.join(queueDir, ATTEMPTS_FILE);
  if (!fs.existsSync(file)) return;
  unlinkQuietly(file);
  fsyncDir(queueDir);
}
