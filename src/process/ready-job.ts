/**
 * A queue job made ready to run, before its command or function sees a byte: opened; through
 * its decoder, spooled whole and the decoder judged first when the queue says so (verifyDecoder)
 * or checks signatures; then judged by its signature when the queue checks them (sign/judge.ts).
 */
import fs from 'node:fs';
import { DecoderError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { setLongTimeout } from '../base/timer.js';
import { checkSealedJob } from '../packet/seal/seal-check.js';
import { spoolDecoded } from '../queue/decoder.js';
import { ChildEnv, jobVariableStrings } from '../queue/jobenv.js';
import type { Queue } from '../queue/queue.js';
import type { DecodedOpenJob, JobEntry, OpenJob, PlainOpenJob } from '../queue/types.js';
import { judgeSignedFile, type SignedVerdict } from '../sign/judge.js';
import { spawnIo } from '../sys/exec.js';
import { execSizeProblem } from '../sys/exec-size.js';
import { closeQuietly } from '../sys/io.js';
import type { JobFileAt, SpawnIo } from '../sys/native-spawn.js';
import { commandLine } from './command.js';
import type { ProcessRunOptions } from './options.js';
import { type Outcome, refuseJob } from './outcome.js';
import type { Stopping } from './run-stop.js';

/** A job that its signature does not let in: not run (the run says so as it moves it to refused/, queue-run.ts). */
export function refusedOutcome(why: string): Outcome {
  return { ok: false, why, refused: true };
}

/** A queue job opened before its turn (job-ahead.ts): its file after the header, its command's environment packed. */
export interface OpenedAhead {
  opened: PlainOpenJob;
  env: ChildEnv;
  /** Its file's name, and the inode of the file opened (current compares them). */
  file: JobFileAt;
  /** Whether its name still holds the file opened: not removed or replaced since (else it is opened again). */
  current(): boolean;
  close(): void;
}

/**
 * Whether `entry` can be opened before its turn: a command packet for the run's command, its file
 * read as it is. Not through a decoder (that would start the decoder), not with signatures or a
 * CRC to check first (each reads the whole payload), not with an output file to make.
 */
export function canOpenAhead(opts: ProcessRunOptions, queue: Queue, entry: JobEntry): boolean {
  return (
    entry.header.cmd.kind === 'Command' &&
    !opts.run &&
    !opts.verify &&
    !opts.ignorePayload &&
    opts.outputTo !== 'saveboth' &&
    queue.decoder === undefined &&
    !queue.allowedSigners
  );
}

/**
 * Open `entry` (canOpenAhead) for its try `attempt`, as its turn would: the file, and its
 * command's environment over `baseEnv` (the run's, read once).
 */
export async function openAhead(
  baseEnv: Readonly<NodeJS.ProcessEnv>,
  queue: Queue,
  entry: JobEntry,
  attempt: number | undefined,
): Promise<OpenedAhead> {
  const opened = await queue.openPlainJob(entry.filename);
  try {
    // The file held open keeps its inode: no other file at the name can have the same one.
    const { ino } = fs.fstatSync(opened.payload);
    const where = { queuedir: queue.dir, filename: entry.filename, attempt };
    const env = new ChildEnv(jobVariableStrings(opened.header, where, undefined), baseEnv);
    env.packed(); // kept by env for the size check and the spawn
    const at = queue.jobPath(entry.filename);
    return {
      opened,
      env,
      file: { path: at, ino },
      // lstat: a link put at the name, even to the same file, is not the file opened (jobs/ is the writers').
      current: () => {
        const st = fs.lstatSync(at, { throwIfNoEntry: false });
        return st?.isFile() === true && st.ino === ino;
      },
      close: () => opened.close(),
    };
  } catch (err) {
    opened.close();
    throw err;
  }
}

/**
 * A queue job opened to run: through its decoder, spooled whole and the decoder judged first when
 * the queue says so (verifyDecoder) or checks signatures (a signed payload is judged whole); then
 * judged by its signature, if the queue checks them. Or the outcome of a job that must not run.
 */
export async function openForRun(
  queue: Queue,
  entry: JobEntry,
  opts: ProcessRunOptions,
  log: Logger,
  stopping: Stopping | undefined,
): Promise<
  { opened: OpenJob; verdict: Extract<SignedVerdict, { kind: 'signed' }> | undefined } | { outcome: Outcome }
> {
  let opened = await queue.openJob(entry.filename);
  try {
    if (opened.kind === 'decoded' && (queue.verifyDecoder || queue.allowedSigners)) {
      const spooled = await verifyDecoder(opened, queue.decoder!, opts.timeout, stopping);
      if (!('kind' in spooled)) return { outcome: spooled.interrupted ? spooled : refuseJob(spooled.why, entry, log) };
      opened = spooled;
    }
    const verdict = judgeSigned(queue, opened, entry);
    if (verdict?.kind === 'refused') {
      opened.close();
      return { outcome: refusedOutcome(verdict.why) };
    }
    return { opened, verdict };
  } catch (err) {
    opened.close();
    throw err;
  }
}

/**
 * A job of a queue with allowed signers, judged before it runs (sign/judge.ts); undefined for a
 * queue without. A decoded job has been spooled by then (openForRun): it is a file here.
 */
function judgeSigned(queue: Queue, opened: OpenJob, entry: JobEntry): SignedVerdict | undefined {
  const signers = queue.allowedSigners;
  if (!signers) return undefined;
  if (opened.kind !== 'plain') throw new TypeError('judgeSigned: a decoded job must be spooled first');
  return judgeSignedFile(opened.header, opened.payload, opened.payloadOffset, signers, entry.header.seq);
}

/**
 * A queue's verifyDecoder: the decoded payload spooled whole and the decoder's exit judged before
 * anything runs; the job then reads as a plain one (the spool, closed by close()). Otherwise the
 * outcome of a job that does not run: its decoder failed, its timeout passed, or the run's
 * interrupt came (interrupted: it stays in the queue).
 */
export async function verifyDecoder(
  opened: DecodedOpenJob,
  decoder: string,
  timeout: number | undefined,
  stopping: Pick<Stopping, 'interrupt'> | undefined,
): Promise<PlainOpenJob | Outcome> {
  const aborts = new AbortController();
  const interrupt = stopping?.interrupt;
  const onInterrupt = () => aborts.abort(new Error('interrupted'));
  if (interrupt?.aborted) onInterrupt();
  else interrupt?.addEventListener('abort', onInterrupt, { once: true });
  const cancelTimer =
    timeout === undefined ? undefined : setLongTimeout(() => aborts.abort(new Error('timed out')), timeout * 1000);
  try {
    const fd = await spoolDecoded(opened.decoded, decoder, aborts.signal);
    const { header } = opened;
    return { kind: 'plain', header, payload: fd, payloadOffset: 0, close: () => closeQuietly(fd) };
  } catch (err) {
    if (aborts.signal.aborted && interrupt?.aborted)
      return { ok: false, why: 'decoder was stopped before it finished', interrupted: true };
    if (aborts.signal.aborted)
      return { ok: false, why: `decoder ${JSON.stringify(decoder)} did not finish within ${timeout} s; killed it` };
    if (err instanceof DecoderError) return { ok: false, why: err.message };
    throw err;
  } finally {
    cancelTimer?.();
    interrupt?.removeEventListener('abort', onInterrupt);
    opened.close(); // the decoder has exited, or is being stopped
  }
}

/**
 * The start of a job opened ahead (openAhead), as its turn would make it, for the addon to make at
 * the exit of the job before it (a chained start, sys/exec-chain.ts). Undefined when its turn would
 * do more than start it: a timeout to set, a seal that refuses it, arguments or an environment too
 * large for exec (each said at its turn).
 */
export function chainedStart(ahead: OpenedAhead, opts: ProcessRunOptions): SpawnIo | undefined {
  const { opened, env } = ahead;
  const cmd = opened.header.cmd;
  if (opts.run || opts.timeout !== undefined || cmd.kind !== 'Command') return undefined;
  if (checkSealedJob(opened, opts.verify ?? false).kind === 'refused') return undefined;
  const { program, args } = commandLine(cmd, opts);
  if (execSizeProblem(program, args, env)) return undefined;
  return spawnIo({ command: program, args, env, stdin: opened.payload, output: 'inherit' });
}
