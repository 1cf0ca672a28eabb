/**
 * Processing jobs: one packet from stdin (stdin-process) or a whole queue (queue-process).
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { decoderFailure } from './decoder.js';
import { JobFailedError, QueueError, SeqOverflowError, describeSystemError } from './errors.js';
import { describeResult, runCommand, type StdinSource } from './exec.js';
import { fsyncDir } from './durable.js';
import { closeQuietly } from './io.js';
import { jobEnvironment, jobVariables, variablesRecord, type JobLocation, type JobVariable } from './jobenv.js';
import { silentLogger, type Logger } from './log.js';
import { readHeaderSync } from './packet/read.js';
import { fdStream, metadataOf, type PacketMetadata } from './packet/stream.js';
import { checkSealedJob, checkSealedStdin, judgeSeal, sealChecked } from './seal-check.js';
import { U64_MAX, type PacketHeader } from './packet/types.js';
import { compareByTimestamp, indexBySeq, isJobFilename, type JobEntry } from './jobs.js';
import type { OpenJob, Queue } from './queue.js';
import type { SeqFile } from './seqfile.js';
import { checkSeconds, setLongTimeout } from './timer.js';
import { JobsWatcher } from './watch.js';

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
  checkSeconds(opts.timeout, 'processFd: timeout');
  const header = readHeaderSync(fd);
  const job: Job = { header, variables: jobVariables(header), payload: fd };
  // A sealed payload is checked: from a file by its size, from a pipe as it is relayed.
  const check = builtinOutcome(header) || opts.ignorePayload ? undefined : checkSealedStdin(fd, header.seal);
  if (check?.payload) job.payload = check.payload;
  const outcome = builtinOutcome(header) ?? (check?.refused ? { ok: false, why: check.refused } : undefined) ?? judgeSeal(await runCommandJob(job, opts, 'inherit', log, { ...process.env }), check);
  log.debug('process', () => `Job ${header.seq} ${outcome.why}`);
  if (!outcome.ok) throw new JobFailedError(`Job ${header.seq} failed (${outcome.why})`);
  return true;
}

/** What a JS function executor receives for each job. */
export interface JobContext extends PacketMetadata {
  /** The job file's name inside jobs/. */
  filename: string;
  /** The queue directory, as given. */
  queuedir: string;
  /** The FSPL_* variables a command would get (bytes that are not UTF-8 replaced). */
  variables: Record<string, string>;
  /** The payload: read as much as you need; what is left unread is discarded. */
  payload: Readable;
  /** Aborted when the job's timeout passes. */
  signal: AbortSignal;
}

/** A job executor written in JS: resolve for success; throw or reject for failure. */
export type JobFunction = (job: JobContext) => unknown;

/** What processQueue reports as it goes (the CLI's progress line is built on it). */
export type ProcessEvent =
  | { type: 'scan'; waiting: number }
  | { type: 'start'; seq: bigint; filename: string }
  | { type: 'end'; seq: bigint; filename: string; ok: boolean; why: string }
  | { type: 'idle' };

export interface WatchMode {
  /** Poll every this many seconds (for NFS, FUSE...) instead of using file system events. */
  pollInterval?: number;
}

export interface ProcessQueueOptions extends Partial<CommandOptions> {
  /** Run this function for each job instead of a command. */
  run?: JobFunction;
  onError?: OnError;
  neverDelete?: boolean;
  /** Stop after this many jobs. */
  maxJobs?: number;
  orderBy?: OrderBy;
  outputTo?: OutputTo;
  logger?: Logger;
  /** Stop cleanly between jobs when aborted (and stop waiting, in watch mode). */
  signal?: AbortSignal;
  /**
   * Keep running: when no job is ready, wait for new ones (file system events, or polling) and
   * go on. Ends when the signal aborts, maxJobs is reached, or a job fails under 'retry'.
   */
  watch?: boolean | WatchMode;
  /** Called as processing goes ('end' once the job is recorded). A listener that throws is logged and ignored. */
  onEvent?: (event: ProcessEvent) => void;
  /**
   * Sealed jobs in plain queues: read the payload once to check its CRC-32 before running the
   * job (its length is always checked, from the file size). Jobs read through a decoder, or by
   * a function executor, are checked as the payload is read, whatever this says.
   */
  verify?: boolean;
}

/** A sealed job whose payload does not match its seal: not run, failed. */
function refuseJob(why: string, entry: JobEntry, log: Logger): Outcome {
  log.error('process', `Job ${entry.header.seq} not run: ${why}`);
  return { ok: false, why };
}

/** Run one queue job with a command; returns the outcome, counting a failed decoder as a failure. */
async function runCommandQueueJob(
  queue: Queue,
  entry: JobEntry,
  opts: ProcessQueueOptions & CommandOptions,
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
    opened = await queue.openJob(entry.filename);
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
    const check = opts.ignorePayload ? undefined : checkSealedJob(opened, opts.verify ?? false);
    if (check?.refused) return refuseJob(check.refused, entry, log);
    if (check?.payload) job.payload = check.payload;
    const outcome = judgeSeal(await runCommandJob(job, opts, outFd ?? 'inherit', log, baseEnv), check);
    return await judgeDecoder(opened, outcome, queue.decoder);
  } finally {
    opened.close();
    closeQuietly(outFd);
  }
}

/**
 * Whatever the executor left unread is not the decoder's fault: stop it, and then its exit
 * status says nothing. Only a decoder whose output was read to the end is judged by it.
 */
async function judgeDecoder(opened: OpenJob, outcome: Outcome, decoder: string | undefined): Promise<Outcome> {
  const dec = opened.decoded;
  if (!dec) return outcome;
  dec.abort();
  const status = await dec.exited;
  if (outcome.ok && !dec.aborted && status.code !== 0) return { ok: false, why: decoderFailure(decoder!, status).message };
  return outcome;
}

/** Run one queue job with a JS function. */
async function runFunctionQueueJob(queue: Queue, entry: JobEntry, fn: JobFunction, opts: ProcessQueueOptions, log: Logger): Promise<Outcome> {
  const builtin = builtinOutcome(entry.header);
  if (builtin) return builtin;
  const opened = await queue.openJob(entry.filename);
  const check = checkSealedJob(opened, opts.verify ?? false, false);
  if (check?.refused) {
    opened.close();
    return refuseJob(check.refused, entry, log);
  }
  // A plain job's descriptor becomes the stream's; the stream closes it (after any read in
  // flight), so it must not also be closed here.
  const payload = sealChecked(typeof opened.payload === 'number' ? fdStream(opened.payload, true) : opened.payload, opened.header.seal, check);
  const timeout = new AbortController();
  const cancelTimer = opts.timeout === undefined ? undefined : setLongTimeout(() => timeout.abort(new Error('timed out')), opts.timeout * 1000);
  const where = { queuedir: queue.dir, filename: entry.filename };
  const variables = variablesRecord(jobVariables(opened.header, where));
  let outcome: Outcome;
  try {
    await fn({ ...metadataOf(opened.header), ...where, variables, payload, signal: timeout.signal });
    outcome = timeout.signal.aborted ? { ok: false, why: 'function timed out' } : { ok: true, why: 'function succeeded' };
  } catch (err) {
    const why = timeout.signal.aborted ? 'function timed out' : `function failed: ${describeSystemError(err).split('\n')[0]}`;
    log.error('exec', `Job ${entry.header.seq}: ${why}`);
    outcome = { ok: false, why };
  } finally {
    cancelTimer?.();
  }
  outcome = judgeSeal(outcome, check);
  try {
    return await judgeDecoder(opened, outcome, queue.decoder);
  } finally {
    payload.destroy();
    if (opened.decoded) opened.close();
  }
}

function assertWritable(queue: Queue, dir: string): void {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw new QueueError(`Cannot process queue ${JSON.stringify(queue.dir)}: ${describeSystemError(err)}`, { cause: err });
  }
}

/**
 * Process a queue: in sequence order from nextseq (the default) or in timestamp order.
 * Holds the queue lock throughout. Failure handling follows onError; with 'retry' a failing job
 * stops processing with JobFailedError and stays in place. In watch mode, waits for new jobs
 * instead of returning when none is ready.
 */
export async function processQueue(queue: Queue, opts: ProcessQueueOptions): Promise<ProcessSummary> {
  const log = opts.logger ?? queue.logger;
  const onError = opts.onError ?? 'retry';
  const maxJobs = opts.maxJobs ?? Infinity;
  const emit = (event: ProcessEvent) => {
    try {
      opts.onEvent?.(event);
    } catch (err) {
      // A listener (a progress display, say) must not break the run between a job and its record.
      log.warn('process', `onEvent listener failed: ${describeSystemError(err)}`);
    }
  };
  const summary: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
  if ((opts.run === undefined) === (opts.command === undefined)) {
    throw new TypeError('processQueue: give exactly one of `command` and `run`');
  }
  checkSeconds(opts.timeout, 'processQueue: timeout');
  const fn = opts.run;
  const cmdOpts = opts as ProcessQueueOptions & CommandOptions;
  const baseEnv = { ...process.env };
  const runJob = (entry: JobEntry) =>
    fn ? runFunctionQueueJob(queue, entry, fn, opts, log) : runCommandQueueJob(queue, entry, cmdOpts, log, baseEnv);
  const timestampOrder = opts.orderBy === 'timestamp';
  const seqfile = queue.lockSeqfile();
  let watcher: JobsWatcher | undefined;
  try {
    if (opts.watch) {
      const mode = typeof opts.watch === 'object' ? opts.watch : {};
      // Before the first scan, so that a job arriving in between is not missed.
      watcher = new JobsWatcher(queue.jobsDir, { pollInterval: mode.pollInterval, logger: log });
      log.debug('process', () => `Watching ${JSON.stringify(queue.jobsDir)} for new jobs (${watcher!.mode})`);
    }
    let next = finishInterrupted(queue, seqfile, seqfile.read(), log);
    log.debug('process', () => `Read next ID ${next} from seqfile`);
    // Unlike the reference, make sure a job's completion can be recorded before running any:
    // otherwise the first job runs, nextseq or the job file can't be updated, and it runs again.
    if (!timestampOrder) assertWritable(queue, queue.dir);
    if (!opts.neverDelete) assertWritable(queue, queue.jobsDir);
    let known = new Map<string, JobEntry>();
    /** Timestamp order, watch mode: files already run (and left in place) in this run. */
    const done = new Set<string>();
    for (;;) {
      known = await queue.rescan(known);
      // Sequence order refuses a queue where two files share a number, wherever they are (as the
      // reference and its manual do); timestamp order does not care.
      let pass: JobEntry[] | undefined;
      let bySeq: Map<bigint, JobEntry> | undefined;
      if (timestampOrder) {
        pass = [...known.values()].filter((e) => !done.has(e.filename)).sort(compareByTimestamp);
        emit({ type: 'scan', waiting: pass.length });
      } else {
        bySeq = indexBySeq([...known.values()]);
        let waiting = 0;
        for (const seq of bySeq.keys()) if (seq >= next) waiting++;
        emit({ type: 'scan', waiting });
      }
      let index = 0;
      let stop = false;
      for (;;) {
        if (summary.processed >= maxJobs) {
          log.debug('process', () => `Stopping: reached the limit of ${maxJobs} jobs`);
          stop = true;
          break;
        }
        if (opts.signal?.aborted) {
          stop = true;
          break;
        }
        let entry: JobEntry | undefined;
        if (pass) {
          entry = pass[index++];
        } else {
          entry = bySeq!.get(next);
          if (entry && next === U64_MAX) throw new SeqOverflowError(queue.seqfilePath);
        }
        if (!entry) {
          log.debug('process', 'Stopping: there is no job with the next sequence number');
          break;
        }
        const seq = entry.header.seq;
        log.debug('process', () => `Processing job ${seq} from ${entry.filename}`);
        emit({ type: 'start', seq, filename: entry.filename });
        const outcome = await runJob(entry);
        summary.processed++;
        if (outcome.ok) summary.succeeded++;
        else summary.failed++;
        log.debug('process', () => `Job ${seq} ${outcome.why}`);
        const ended: ProcessEvent = { type: 'end', seq, filename: entry.filename, ok: outcome.ok, why: outcome.why };
        if (!outcome.ok && onError === 'retry') {
          emit(ended);
          throw new JobFailedError(`Job ${seq} failed (${outcome.why}); stopping, the job stays in the queue`);
        }
        const remove = !opts.neverDelete && (outcome.ok || onError === 'delete');
        // The job is finished: record that in the lock file before nextseq and the job file
        // change, so that a run killed between the two steps is completed by the next one
        // (finishInterrupted) instead of leaving a spent job file behind.
        if (remove) noteFinishing(seqfile, `${pass ? 'T' : 'S'} ${seq} ${entry.filename}`, log);
        if (pass) {
          done.add(entry.filename);
        } else {
          next = seq + 1n;
          // Durable before the job file goes (SeqFile.write fsyncs the queue directory): after a
          // power cut the job is not run again, and a queue never waits for a job already deleted.
          seqfile.write(next);
          log.debug('process', () => `Sequence ${next} written to ${JSON.stringify(queue.seqfilePath)}`);
        }
        if (remove) {
          log.debug('process', () => `Deleting ${JSON.stringify(queue.jobPath(entry.filename))}`);
          queue.delete(entry.filename);
          known.delete(entry.filename);
          // The deletion is durable with jobs/: without this fsync a power cut brings the spent
          // file back (below nextseq in sequence order, to run again in timestamp order). About
          // 0.2 ms a job here, beside the milliseconds of starting its command (docs/benchmarks.md).
          fsyncDir(queue.jobsDir);
        }
        emit(ended); // after the job is recorded: listeners see the queue as it now is
      }
      if (stop || !watcher) break;
      seqfile.clearNote(); // nothing half-finished while we wait
      emit({ type: 'idle' });
      if (!(await watcher.wait(opts.signal))) break;
    }
    return summary;
  } finally {
    watcher?.close();
    try {
      seqfile.clearNote();
    } catch {
      // Never hide the error that ended the run; a note left behind names a finished job anyway.
    }
    seqfile.release();
  }
}

/**
 * Write the note naming the job being finished. It only helps a later run after a kill, so a
 * failure (a full disk, say) is not an error: the update of nextseq that follows reports it.
 */
function noteFinishing(seqfile: SeqFile, line: string, log: Logger): void {
  try {
    seqfile.writeNote(line);
  } catch (err) {
    log.debug('process', () => `Could not note the job being finished in the lock file: ${describeSystemError(err)}`);
  }
}

/**
 * Complete a finished job that a killed run left half-recorded. The lock file's note names the
 * last job a run was finishing: its command had succeeded (or failed under Delete), and nextseq
 * and the job file were about to change. If nextseq still names it, move past it; then delete
 * its file, which is spent. Without this, a kill in that window leaves a job file below nextseq
 * that nothing ever runs or removes (as in the reference), or runs a finished job again.
 */
function finishInterrupted(queue: Queue, seqfile: SeqFile, next: bigint, log: Logger): bigint {
  const note = /^([ST]) (\d+) (\S+)$/.exec(seqfile.readNote());
  if (note) {
    const [, mode, seqText, filename] = note as unknown as [string, 'S' | 'T', string, string];
    const seq = BigInt(seqText);
    if (isJobFilename(filename) && fs.existsSync(queue.jobPath(filename))) {
      if (mode === 'S' && seq === next && seq !== U64_MAX) {
        next = seq + 1n;
        seqfile.write(next);
      }
      if (mode === 'T' || seq < next) {
        log.info('process', `Removing ${JSON.stringify(filename)}: job ${seq} was finished by an interrupted run`);
        queue.delete(filename);
        fsyncDir(queue.jobsDir); // as after any job: the spent file stays gone
      }
    }
  }
  seqfile.clearNote();
  return next;
}
