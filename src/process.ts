/**
 * Processing jobs: one packet from stdin (stdin-process) or a whole queue (queue-process).
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { openThroughDecoder, decoderFailure, type DecodedJob } from './decoder.js';
import { JobFailedError, SeqOverflowError } from './errors.js';
import { describeResult, runCommand, type StdinSource } from './exec.js';
import { closeQuietly } from './io.js';
import { jobEnvironment, jobVariables, type JobLocation, type JobVariable } from './jobenv.js';
import { silentLogger, type Logger } from './log.js';
import { readHeaderSync } from './packet/read.js';
import { U64_MAX, type PacketHeader } from './packet/types.js';
import { compareByTimestamp, indexBySeq, type JobEntry, type Queue } from './queue.js';

export type OnError = 'retry' | 'delete' | 'leave';
export type OrderBy = 'sequence' | 'timestamp';
export type OutputTo = 'passboth' | 'saveboth';

/** A job as an executor sees it. */
export interface Job {
  header: PacketHeader;
  /** Set for queue jobs, absent for stdin-process. */
  location?: JobLocation;
  /** The FSPL_* variables, in info order. */
  variables: JobVariable[];
  /** The payload: a descriptor positioned after the header, or a stream (decoded packets). */
  payload: number | Readable;
}

export interface CommandOptions {
  /** Program to run (not through a shell). */
  command: string;
  /** Arguments given on our command line after `--`. */
  params?: string[];
  /** Append the job's own parameters after ours. */
  allowJobParams?: boolean;
  /** Do not give the payload to the command; it inherits our stdin instead. */
  ignorePayload?: boolean;
  /** Seconds before the command is killed with SIGKILL; a timeout is a failure. */
  timeout?: number;
}

export interface ProcessQueueOptions extends CommandOptions {
  onError?: OnError;
  neverDelete?: boolean;
  /** Stop after this many jobs. */
  maxJobs?: number;
  orderBy?: OrderBy;
  outputTo?: OutputTo;
  logger?: Logger;
  /** Stop cleanly between jobs when aborted. */
  signal?: AbortSignal;
}

export interface ProcessSummary {
  /** Jobs run (successful or not). */
  processed: number;
  succeeded: number;
  failed: number;
}

interface Outcome {
  ok: boolean;
  why: string;
}

/** The outcome of a NOP or Fail packet, which run nothing; undefined for a command packet. */
function builtinOutcome(header: PacketHeader): Outcome | undefined {
  if (header.cmd.kind === 'NOP') return { ok: true, why: 'it is a NOP packet' };
  if (header.cmd.kind === 'Fail') return { ok: false, why: 'it is a Fail packet' };
  return undefined;
}

/**
 * Run a command packet's command. `baseEnv` is the inherited environment, read once per run:
 * process.env is slow to enumerate and this is the per-job path.
 */
async function runCommandJob(
  job: Job,
  opts: CommandOptions,
  output: 'inherit' | number,
  log: Logger,
  baseEnv: NodeJS.ProcessEnv,
): Promise<Outcome> {
  const cmd = job.header.cmd;
  if (cmd.kind !== 'Command') throw new TypeError('runCommandJob: not a command packet');
  const args = [...(opts.params ?? [])];
  if (opts.allowJobParams) {
    for (const p of cmd.params) args.push(Buffer.from(p).toString('utf8'));
  } else if (cmd.params.length > 0) {
    log.warn('process', 'Parameters given in job ignored because --allow-job-params was not given');
  }
  // With --ignore-payload the command gets our own stdin: the terminal or whatever fed us, but
  // never the packet itself (for stdin-process, where our stdin *is* the packet, /dev/null).
  const stdin: StdinSource = opts.ignorePayload ? (job.location ? 'inherit' : 'ignore') : job.payload;
  log.debug('exec', () => `Running ${JSON.stringify(opts.command)} with params ${JSON.stringify(args)}`);
  const r = await runCommand({
    command: opts.command,
    args,
    env: jobEnvironment(job.variables, baseEnv),
    stdin,
    output,
    timeout: opts.timeout,
  });
  const why = `command ${describeResult(r)}`;
  if (!r.ok) log.error('exec', `Command ${JSON.stringify(opts.command)} ${describeResult(r)}`);
  return { ok: r.ok, why };
}

/**
 * Process the packet on a descriptor (normally fd 0): read exactly its header, then let the
 * command read the rest of the same descriptor. Returns whether the job succeeded.
 */
export async function processFd(fd: number, opts: CommandOptions & { logger?: Logger }): Promise<boolean> {
  const log = opts.logger ?? silentLogger;
  const header = readHeaderSync(fd);
  const job: Job = { header, variables: jobVariables(header), payload: fd };
  const outcome = builtinOutcome(header) ?? (await runCommandJob(job, opts, 'inherit', log, { ...process.env }));
  log.debug('process', () => `Job ${header.seq} ${outcome.why}`);
  if (!outcome.ok) throw new JobFailedError(`Job ${header.seq} failed (${outcome.why})`);
  return true;
}

/** A job file opened for running: header read, payload ready. */
interface OpenJob {
  header: PacketHeader;
  payload: number | Readable;
  decoded?: DecodedJob;
  close(): void;
}

async function openJob(queue: Queue, filename: string): Promise<OpenJob> {
  const p = queue.jobPath(filename);
  if (queue.decoder !== undefined) {
    const decoded = await openThroughDecoder(p, queue.decoder);
    return { header: decoded.header, payload: decoded.payload, decoded, close: () => decoded.abort() };
  }
  const fd = fs.openSync(p, 'r');
  try {
    const header = readHeaderSync(fd);
    return { header, payload: fd, close: () => closeQuietly(fd) };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}

/** Run one queue job; returns the outcome, counting a failed decoder as a failure. */
async function runQueueJob(
  queue: Queue,
  entry: JobEntry,
  opts: ProcessQueueOptions,
  log: Logger,
  baseEnv: NodeJS.ProcessEnv,
): Promise<Outcome> {
  let outFd: number | undefined;
  if (opts.outputTo === 'saveboth') {
    // Created (empty) for every kind of job, as the reference does.
    outFd = fs.openSync(`${queue.jobPath(entry.filename)}.out`, 'w', 0o666);
  }
  const builtin = builtinOutcome(entry.header);
  if (builtin) {
    // NOP and Fail jobs have nothing to run: the scan already read all we need.
    closeQuietly(outFd);
    return builtin;
  }
  let opened: OpenJob;
  try {
    opened = await openJob(queue, entry.filename);
  } catch (err) {
    closeQuietly(outFd);
    throw err;
  }
  try {
    const job: Job = {
      header: opened.header,
      location: { queuedir: queue.dir, filename: entry.filename },
      variables: jobVariables(opened.header, { queuedir: queue.dir, filename: entry.filename }),
      payload: opened.payload,
    };
    const outcome = await runCommandJob(job, opts, outFd ?? 'inherit', log, baseEnv);
    if (opened.decoded) {
      const dec = opened.decoded;
      // Whatever the command left unread is not the decoder's fault: stop it, and then its exit
      // status says nothing. Only a decoder whose output we read to the end is judged by it.
      dec.abort();
      const status = await dec.exited;
      if (outcome.ok && !dec.aborted && status.code !== 0) {
        return { ok: false, why: decoderFailure(queue.decoder!, status).message };
      }
    }
    return outcome;
  } finally {
    opened.close();
    closeQuietly(outFd);
  }
}

/**
 * Process a queue: in sequence order from nextseq (the default) or in timestamp order.
 * Holds the queue lock throughout. Failure handling follows onError; with 'retry' a failing job
 * stops processing with JobFailedError and stays in place.
 */
export async function processQueue(queue: Queue, opts: ProcessQueueOptions): Promise<ProcessSummary> {
  const log = opts.logger ?? queue.logger;
  const onError = opts.onError ?? 'retry';
  const maxJobs = opts.maxJobs ?? Infinity;
  const summary: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
  const baseEnv = { ...process.env };
  const seqfile = queue.lockSeqfile();
  try {
    let next = seqfile.read();
    log.debug('process', () => `Read next ID ${next} from seqfile`);
    const jobs = await queue.scan();
    // Sequence order refuses a queue where two files share a number, wherever they are (as the
    // reference and its manual do); timestamp order does not care.
    const timestampOrder = opts.orderBy === 'timestamp' ? jobs.sort(compareByTimestamp) : undefined;
    const bySeq = timestampOrder ? new Map<bigint, JobEntry>() : indexBySeq(jobs);
    let index = 0;
    for (;;) {
      if (summary.processed >= maxJobs) {
        log.debug('process', () => `Stopping: reached the limit of ${maxJobs} jobs`);
        break;
      }
      if (opts.signal?.aborted) break;
      let entry: JobEntry | undefined;
      if (timestampOrder) {
        entry = timestampOrder[index++];
      } else {
        entry = bySeq.get(next);
        if (entry && next === U64_MAX) throw new SeqOverflowError(queue.seqfilePath);
      }
      if (!entry) {
        log.debug('process', 'Stopping: there is no job with the next sequence number');
        break;
      }
      const seq = entry.header.seq;
      log.debug('process', () => `Processing job ${seq} from ${entry.filename}`);
      const outcome = await runQueueJob(queue, entry, opts, log, baseEnv);
      summary.processed++;
      if (outcome.ok) summary.succeeded++;
      else summary.failed++;
      log.debug('process', () => `Job ${seq} ${outcome.why}`);
      if (!outcome.ok && onError === 'retry') {
        throw new JobFailedError(`Job ${seq} failed (${outcome.why}); stopping, the job stays in the queue`);
      }
      if (!timestampOrder) {
        next = seq + 1n;
        seqfile.write(next);
        log.debug('process', () => `Sequence ${next} written to ${JSON.stringify(queue.seqfilePath)}`);
      }
      const remove = !opts.neverDelete && (outcome.ok || onError === 'delete');
      if (remove) {
        log.debug('process', () => `Deleting ${JSON.stringify(queue.jobPath(entry.filename))}`);
        queue.delete(entry.filename);
      }
    }
    return summary;
  } finally {
    seqfile.release();
  }
}

