/**
 * Running one job, for process.ts: a command packet's command (from a queue or from stdin), or a
 * JS function; NOP and Fail packets run nothing. The seal and the decoder are judged here, so the
 * outcome is the job's whole verdict.
 */
import fs from 'node:fs';
import { decoderFailure } from './decoder.js';
import { describeSystemError } from './errors.js';
import { describeResult, runCommand, type StdinSource } from './exec.js';
import { closeQuietly } from './io.js';
import { ChildEnv, jobVariableStrings, jobVariables, variablesRecord } from './jobenv.js';
import type { JobEntry } from './jobs.js';
import type { Logger } from './log.js';
import { fdStream, metadataOf } from './packet/stream.js';
import type { PacketHeader } from './packet/types.js';
import type { CommandOptions, Job, JobFunction, ProcessRunOptions } from './process.js';
import type { OpenJob, Queue } from './queue.js';
import { checkSealedJob, judgeSeal, sealChecked } from './seal-check.js';
import { setLongTimeout } from './timer.js';

/** A job's verdict, and why in words (for the log and the 'end' event). */
export interface Outcome {
  ok: boolean;
  why: string;
}

/** The outcome of a NOP or Fail packet, which run nothing; undefined for a command packet. */
export function builtinOutcome(header: PacketHeader): Outcome | undefined {
  if (header.cmd.kind === 'NOP') return { ok: true, why: 'it is a NOP packet' };
  if (header.cmd.kind === 'Fail') return { ok: false, why: 'it is a Fail packet' };
  return undefined;
}

/**
 * Run a command packet's command. `baseEnv` is the inherited environment, read once per run:
 * process.env is slow to enumerate and this is the per-job path. The job's FSPL_* variables come
 * from its header and location (the job's own `variables`, Buffers, are not needed here):
 * merged into the inherited environment as the addon takes it (ChildEnv, jobenv.ts), which packs
 * the inherited part once per run. Building an object of the whole environment per job, and
 * packing all of it again, was about 40 us a job in the profile of docs/benchmarks.md.
 */
export async function runCommandJob(
  job: Omit<Job, 'variables'>,
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
    env: new ChildEnv(jobVariableStrings(job.header, job.location), baseEnv),
    stdin,
    output,
    timeout: opts.timeout,
  });
  const why = `command ${describeResult(r)}`;
  if (!r.ok) log.error('exec', `Command ${JSON.stringify(opts.command)} ${describeResult(r)}`);
  return { ok: r.ok, why };
}

/** A sealed job whose payload does not match its seal: not run, failed. */
function refuseJob(why: string, entry: JobEntry, log: Logger): Outcome {
  log.error('process', `Job ${entry.header.seq} not run: ${why}`);
  return { ok: false, why };
}

/** Run one queue job with a command; returns the outcome, counting a failed decoder as a failure. */
export async function runCommandQueueJob(
  queue: Queue,
  entry: JobEntry,
  opts: ProcessRunOptions & CommandOptions,
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
    const job: Omit<Job, 'variables'> = {
      header: opened.header,
      location: { queuedir: queue.dir, filename: entry.filename },
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
export async function runFunctionQueueJob(queue: Queue, entry: JobEntry, fn: JobFunction, opts: ProcessRunOptions, log: Logger): Promise<Outcome> {
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
