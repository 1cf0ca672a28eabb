/**
 * Running one job, for process.ts: a command packet's command (from a queue or from stdin), or a
 * JS function; NOP and Fail packets run nothing. The seal and the decoder are judged here, so the
 * outcome is the job's whole verdict; so is the signature, when the queue checks them (sign/judge.ts).
 */

import type { Readable } from 'node:stream';
import { describeSystemError, ExecTooLargeError, SignatureError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { setLongTimeout, waitUnlessAborted } from '../base/timer.js';
import {
  checkSealedFile,
  checkSealedJob,
  guardedPayload,
  judgeSeal,
  NO_SEAL,
  watchStream,
} from '../packet/seal/seal-check.js';
import { fdStream, metadataOf } from '../packet/stream.js';
import type { PacketHeader } from '../packet/types.js';
import { decoderFailure, openThroughDecoder } from '../queue/decoder.js';
import { ChildEnv, jobVariableStrings, jobVariables, variablesRecord } from '../queue/jobenv.js';
import type { Queue } from '../queue/queue.js';
import type { Job, JobEntry, JobFunction, OpenJob } from '../queue/types.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { judgeSignedFile, type SignedVerdict } from '../sign/judge.js';
import { describeResult, type RunOptions, type RunResult, runCommand, type StdinSource } from '../sys/exec.js';
import { closeQuietly } from '../sys/io.js';
import { openOwnFile, UntrustedFileError } from '../sys/untrusted.js';
import { commandLine } from './command.js';
import type { CommandOptions, ProcessRunOptions } from './options.js';
import { builtinOutcome, type Outcome, refuseJob } from './outcome.js';
import { type OpenedAhead, openForRun, verifyDecoder } from './ready-job.js';
import type { Stopping } from './run-stop.js';

export { builtinOutcome, type Outcome } from './outcome.js';
export { canOpenAhead, chainedStart, openAhead } from './ready-job.js';

/**
 * Signals that a terminal or a service manager sends to every process of what it stops, a job's
 * command as well as fspl (a terminal's foreground process group; systemd's default
 * KillMode=control-group).
 */
const GROUP_STOP_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(['SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGHUP']);
/** How long fspl's own copy of such a signal may come after the command's death. */
const SIGNAL_LAG_MS = 100;

/**
 * Whether a command killed by a signal was killed as a part of the run's stop: by one of
 * GROUP_STOP_SIGNALS, when the run is stopping, or starts stopping a moment later (fspl's own
 * copy of the signal may come an instant after the command's death).
 */
async function killedWithTheRun(r: RunResult, stop: AbortSignal | undefined): Promise<boolean> {
  if (!stop || !r.signal || !GROUP_STOP_SIGNALS.has(r.signal)) return false;
  await waitUnlessAborted(SIGNAL_LAG_MS, stop);
  return stop.aborted;
}

/**
 * Run a command packet's command. The run's interrupt stops it (its process group killed, as its
 * timeout would), and the outcome is then `interrupted`; so it is when a terminal or a service
 * manager killed it as it stopped fspl (killedWithTheRun). `baseEnv`: the inherited environment,
 * read once per run and packed once (ChildEnv, jobenv.ts), the job's FSPL_* variables merged in;
 * `packedEnv`: that environment, made before the job's turn (ready-job.ts openAhead).
 * Arguments or variables too large for exec (ExecTooLargeError) fail the job, as its
 * command failing would; a command that can not start at all (ExecError) ends the run.
 */
export async function runCommandJob(
  job: Omit<Job, 'variables'>,
  opts: CommandOptions,
  output: 'inherit' | number,
  log: Logger,
  baseEnv: NodeJS.ProcessEnv,
  stopping: Stopping | undefined,
  packedEnv?: ChildEnv,
  chained?: ChainedRun,
): Promise<Outcome> {
  const cmd = job.header.cmd;
  if (cmd.kind !== 'Command') throw new TypeError('runCommandJob: not a command packet');
  const { program, args } = commandLine(cmd, opts);
  if (!opts.allowJobParams && cmd.params.length > 0)
    log.warn('process', 'Parameters given in job ignored because --allow-job-params was not given');
  // With --ignore-payload the command gets our own stdin: the terminal or whatever fed us, but
  // never the packet itself (for stdin-process, where our stdin *is* the packet, /dev/null).
  const stdin: StdinSource = opts.ignorePayload ? (job.location ? 'inherit' : 'ignore') : job.payload;
  log.debug('exec', () => `Running ${JSON.stringify(program)} with params ${JSON.stringify(args)}`);
  let r: RunResult;
  try {
    const env = packedEnv ?? new ChildEnv(jobVariableStrings(job.header, job.location, job.signer), baseEnv);
    r = await runCommand({
      command: program,
      args,
      env,
      stdin,
      output,
      timeout: opts.timeout,
      stop: stopping?.interrupt,
      ...chained,
    });
  } catch (err) {
    // Its own variables or parameters are more than exec takes: this job's failure, not the run's.
    if (!(err instanceof ExecTooLargeError)) throw err;
    log.error('process', `Job ${job.header.seq} not run: ${err.problem}`);
    return { ok: false, why: `not run: ${err.problem}` };
  }
  const why = `command ${describeResult(r)}`;
  if (r.stopped) return { ok: false, why, interrupted: true };
  if (await killedWithTheRun(r, stopping?.stop))
    return { ok: false, why: `command ${describeResult(r)} as fspl was stopped`, interrupted: true };
  if (!r.ok) log.error('exec', `Command ${JSON.stringify(program)} ${describeResult(r)}`);
  const exitStatus = r.signal ? `signal:${r.signal.replace(/^SIG/, '')}` : String(r.code);
  return r.timedOut ? { ok: false, why, timedOut: true, exitStatus } : { ok: r.ok, why, exitStatus };
}

/** A job's command as part of a chain (sys/exec-chain.ts): the link its owner arms, or the child started already. */
export type ChainedRun = Pick<RunOptions, 'link' | 'adopt'>;

/** What running a queue's job needs of its run (queue-run.ts RunContext holds it). */
export interface JobRunSettings {
  opts: ProcessRunOptions;
  log: Logger;
  /** process.env, read once for the run (jobenv.ts packs it once). */
  baseEnv: Readonly<NodeJS.ProcessEnv>;
  stopping: Stopping;
}

/**
 * Run one job of a queue with the run's command or function (`attempt`: FSPL_JOB_ATTEMPT, with
 * retries). `ahead`: the job as opened before its turn (ready-job.ts openAhead), now ours to close.
 */
export function runQueueJob(
  s: JobRunSettings,
  queue: Queue,
  entry: JobEntry,
  attempt?: number,
  ahead?: OpenedAhead,
  chained?: ChainedRun,
): Promise<Outcome> {
  const { opts, log, stopping } = s;
  return opts.run
    ? runFunctionQueueJob(queue, entry, opts.run, opts, log, stopping, attempt)
    : runCommandQueueJob(queue, entry, opts, log, s.baseEnv, stopping, attempt, ahead, chained);
}

/** Run one queue job with a command; returns the outcome, counting a failed decoder as a failure. */
export async function runCommandQueueJob(
  queue: Queue,
  entry: JobEntry,
  opts: ProcessRunOptions & CommandOptions,
  log: Logger,
  baseEnv: NodeJS.ProcessEnv,
  stopping: Stopping | undefined,
  attempt?: number,
  ahead?: OpenedAhead,
  chained?: ChainedRun,
): Promise<Outcome> {
  let outFd: number | undefined;
  if (opts.outputTo === 'saveboth') {
    // Created (empty) for every kind of job, as the reference does; but whoever may write jobs/
    // may have put a link or another's file at that name: that is this job's failure, never an
    // overwrite of what it points to (untrusted.ts openOwnFile; docs/compatibility.md).
    try {
      outFd = openOwnFile(`${queue.jobPath(entry.filename)}.out`, 0o666);
    } catch (err) {
      if (!(err instanceof UntrustedFileError)) throw err;
      return refuseJob(`will not write its output to ${err.path}: ${err.why}`, entry, log);
    }
  }
  const builtin = builtinOutcome(entry.header);
  if (builtin && !queue.allowedSigners) {
    // NOP and Fail jobs have nothing to run: the scan already read all we need.
    closeQuietly(outFd);
    ahead?.close();
    return builtin;
  }
  let ready: Awaited<ReturnType<typeof openForRun>>;
  try {
    ready = ahead ? { opened: ahead.opened, verdict: undefined } : await openForRun(queue, entry, opts, log, stopping);
  } catch (err) {
    closeQuietly(outFd);
    throw err;
  }
  if ('outcome' in ready) {
    closeQuietly(outFd);
    return ready.outcome;
  }
  const { opened, verdict } = ready;
  const signed = verdict?.payload;
  try {
    if (builtin) return builtin; // a signed NOP or Fail: let in, nothing to run
    const guard = opts.ignorePayload || signed ? NO_SEAL : checkSealedJob(opened, opts.verify ?? false);
    if (guard.kind === 'refused') return refuseJob(guard.why, entry, log);
    const job: Omit<Job, 'variables'> = {
      header: opened.header,
      location: { queuedir: queue.dir, filename: entry.filename, attempt },
      payload: signed ? signed.fd : guardedPayload(guard, opened.payload),
      signer: verdict?.signer,
    };
    const ran = await runCommandJob(job, opts, outFd ?? 'inherit', log, baseEnv, stopping, ahead?.env, chained);
    // An interrupted job's payload was not read to its end: its seal says nothing.
    const outcome = ran.interrupted ? ran : judgeSeal(ran, guard);
    return await judgeDecoder(opened, outcome, queue.decoder);
  } finally {
    if (signed?.spooled) closeQuietly(signed.fd);
    opened.close();
    closeQuietly(outFd);
  }
}

/**
 * Whatever the executor left unread is not the decoder's fault: stop it, and then its exit
 * status says nothing. Only a decoder whose output was read to the end is judged by it.
 */
async function judgeDecoder(opened: OpenJob, outcome: Outcome, decoder: string | undefined): Promise<Outcome> {
  if (opened.kind !== 'decoded') return outcome;
  const dec = opened.decoded;
  dec.abort();
  const status = await dec.exited;
  if (outcome.ok && !dec.aborted && status.code !== 0)
    return { ok: false, why: decoderFailure(decoder!, status).message };
  return outcome;
}

/**
 * stdin-process -d: the packet is what the decoder makes of descriptor `fd` (our stdin), the
 * decoder in a session of its own as a queue job's is; with `verifyDecoder`, spooled and judged
 * before the command starts (verifyDecoder above), else read by the command as it comes and
 * judged after it (judgeDecoder). `onStart` is called once the header is read. The header is
 * returned with the outcome, for the caller's report.
 */
export async function runDecodedFdJob(
  fd: number,
  opts: CommandOptions & {
    decoder: string;
    verifyDecoder?: boolean;
    onStart?: () => void;
    allowedSigners?: AllowedSigners;
  },
  log: Logger,
  stopping: Stopping | undefined,
): Promise<{ header: PacketHeader; outcome: Outcome }> {
  const decoded = await openThroughDecoder(fd, opts.decoder, opts.timeout);
  const { header } = decoded;
  let opened: OpenJob = { kind: 'decoded', header, payload: decoded.payload, decoded, close: () => decoded.abort() };
  const signers = opts.allowedSigners;
  let signed: Extract<SignedVerdict, { kind: 'signed' }> | undefined;
  try {
    const builtin = builtinOutcome(header);
    if (builtin && !signers) return { header, outcome: builtin };
    opts.onStart?.();
    // A signed payload is judged whole: the decoder's output is spooled first, as verifyDecoder does.
    if (opts.verifyDecoder || signers) {
      const spooled = await verifyDecoder(opened, opts.decoder, opts.timeout, stopping);
      if (!('kind' in spooled)) return { header, outcome: spooled };
      opened = spooled;
    }
    if (signers && opened.kind === 'plain') {
      const verdict = judgeSignedFile(header, opened.payload, opened.payloadOffset, signers);
      if (verdict.kind === 'refused') throw new SignatureError(verdict.why);
      signed = verdict;
    }
    if (builtin) return { header, outcome: builtin };
    const guard = opts.ignorePayload || signed ? NO_SEAL : checkSealedJob(opened, false);
    if (guard.kind === 'refused') return { header, outcome: { ok: false, why: guard.why } };
    const payload = signed ? signed.payload.fd : guardedPayload(guard, opened.payload);
    const job: Omit<Job, 'variables'> = { header, payload, signer: signed?.signer };
    const ran = await runCommandJob(job, opts, 'inherit', log, { ...process.env }, stopping);
    const outcome = ran.interrupted ? ran : judgeSeal(ran, guard);
    return { header, outcome: await judgeDecoder(opened, outcome, opts.decoder) };
  } finally {
    if (signed?.payload.spooled) closeQuietly(signed.payload.fd);
    opened.close();
  }
}

/**
 * A function job's signal: aborted when its timeout passes, or when the run is interrupted
 * (whichever comes first; `interrupted` says which). cancel() when the function has ended.
 */
function functionAborts(
  timeout: number | undefined,
  interrupt: AbortSignal | undefined,
): { signal: AbortSignal; interrupted: () => boolean; cancel: () => void } {
  const aborts = new AbortController();
  let interrupted = false;
  const cancelTimer =
    timeout === undefined ? undefined : setLongTimeout(() => aborts.abort(new Error('timed out')), timeout * 1000);
  const onInterrupt = () => {
    if (aborts.signal.aborted) return;
    interrupted = true;
    aborts.abort(new Error('interrupted'));
  };
  if (interrupt?.aborted) onInterrupt();
  else interrupt?.addEventListener('abort', onInterrupt, { once: true });
  return {
    signal: aborts.signal,
    interrupted: () => interrupted,
    cancel: () => {
      cancelTimer?.();
      interrupt?.removeEventListener('abort', onInterrupt);
    },
  };
}

/** Run one queue job with a JS function; the run's interrupt aborts its signal, as its timeout does. */
export async function runFunctionQueueJob(
  queue: Queue,
  entry: JobEntry,
  fn: JobFunction,
  opts: ProcessRunOptions,
  log: Logger,
  stopping: Stopping | undefined,
  attempt?: number,
): Promise<Outcome> {
  const interrupt = stopping?.interrupt;
  const builtin = builtinOutcome(entry.header);
  if (builtin && !queue.allowedSigners) return builtin;
  const ready = await openForRun(queue, entry, opts, log, stopping);
  if ('outcome' in ready) return ready.outcome;
  const { opened, verdict } = ready;
  if (builtin) {
    opened.close();
    return builtin;
  }
  const checked = opened.kind === 'plain' && !verdict ? checkSealedFile(opened, opts.verify ?? false) : NO_SEAL;
  if (checked.kind === 'refused') {
    opened.close();
    return refuseJob(checked.why, entry, log);
  }
  // A plain job's descriptor becomes the stream's; the stream closes it (after any read in
  // flight), so it must not also be closed here. A sealed payload is checked as the function
  // reads it, failing with PayloadSealError. A signed one was checked whole: its copy, if it has
  // one, is read from its start (the job file is then closed here).
  let raw: Readable;
  if (verdict?.payload.spooled) {
    opened.close();
    raw = fdStream(verdict.payload.fd, true);
  } else raw = opened.kind === 'plain' ? fdStream(opened.payload, true) : opened.payload;
  const guard = verdict ? NO_SEAL : watchStream(raw, opened.header.seal, false);
  const payload = guardedPayload(guard, raw);
  const aborts = functionAborts(opts.timeout, interrupt);
  const where = { queuedir: queue.dir, filename: entry.filename, attempt };
  const signer = verdict?.signer;
  const variables = variablesRecord(jobVariables(opened.header, where, signer));
  let outcome: Outcome;
  try {
    await fn({
      ...metadataOf(opened.header),
      queuedir: where.queuedir,
      filename: where.filename,
      variables,
      payload,
      signal: aborts.signal,
      ...(signer && { signer }),
    });
    outcome =
      aborts.signal.aborted && !aborts.interrupted()
        ? { ok: false, why: 'function timed out', timedOut: true }
        : { ok: true, why: 'function succeeded' };
  } catch (err) {
    if (aborts.interrupted())
      outcome = { ok: false, why: 'function was stopped before it finished', interrupted: true };
    else {
      const why = aborts.signal.aborted
        ? 'function timed out'
        : `function failed: ${describeSystemError(err).split('\n')[0]}`;
      log.error('exec', `Job ${entry.header.seq}: ${why}`);
      outcome = aborts.signal.aborted ? { ok: false, why, timedOut: true } : { ok: false, why };
    }
  } finally {
    aborts.cancel();
  }
  if (!outcome.interrupted) outcome = judgeSeal(outcome, guard);
  try {
    return await judgeDecoder(opened, outcome, queue.decoder);
  } finally {
    payload.destroy();
    if (opened.kind === 'decoded') opened.close();
  }
}
