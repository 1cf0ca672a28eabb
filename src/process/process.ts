/** Processing jobs: one packet from stdin (stdin-process) or a whole queue (queue-process). */
import { describeSystemError, JobFailedError, SignatureError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { checkSeconds, dueDelayMs, setLongTimeout } from '../base/timer.js';
import type { PacketHeader } from '../packet/types.js';
import type { Queue } from '../queue/queue.js';
import type { Job } from '../queue/types.js';
import type { JobsWatcher } from '../queue/watch.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';
import { closeQuietly } from '../sys/io.js';
import { splitCommand } from './command.js';
import { checkOnFinish, FinishHook } from './on-finish.js';
import type { Outcome } from './outcome.js';
import { QueueRun, type RunContext } from './queue-run.js';
import { DEFAULT_RETRY_DELAY, DEFAULT_RETRY_MAX_DELAY, type RetryPolicy } from './retry.js';
import { loadRunJob } from './run-context.js';
import { type StopOptions, Stopping } from './run-stop.js';

export type { Job, JobContext, JobFunction, OrderBy } from '../queue/types.js';
export type {
  CommandExecutor,
  CommandOptions,
  ExecutorOptions,
  FunctionExecutor,
  OnError,
  OutputTo,
  ProcessEvent,
  ProcessQueueOptions,
  ProcessRunOptions,
  ProcessSummary,
  QueueJobEvent,
  QueuePageOptions,
  QueueProcessOptions,
  RunSettings,
  WatchMode,
} from './options.js';

import type {
  CommandOptions,
  ProcessEvent,
  ProcessQueueOptions,
  ProcessRunOptions,
  ProcessSummary,
} from './options.js';

/** processFd's options: a command's, a stop's, and how the packet is read. */
export type ProcessFdOptions = CommandOptions &
  StopOptions & {
    logger?: Logger;
    onStart?: () => void;
    /**
     * Shell command that turns what the descriptor holds into the packet (an extension of
     * stdin-process: `-d`), as a queue's decoder does; it runs in a session of its own, as the
     * command does. Its header is read within `timeout`, as a queue's with decoderTimeout.
     */
    decoder?: string;
    /** With decoder: the command starts only once the decoder has exited with status 0 (QueueOptions.verifyDecoder). */
    verifyDecoder?: boolean;
    /**
     * Run the packet only if these signers signed it (src/sign/), judged whole before the command
     * starts; SignatureError otherwise. With a decoder, its output is spooled (verifyDecoder).
     */
    allowedSigners?: AllowedSigners;
  };

/**
 * Process the packet on a descriptor (normally fd 0): read exactly its header, then let the
 * command read the rest of the same descriptor (with `decoder`, what the decoder makes of it).
 * Returns whether the job succeeded; throws JobFailedError when it failed or was interrupted
 * (StopOptions: `signal` lets the job finish, within `stopTimeout` if given). `onStart` is called
 * once the header is read, as the command is about to start (the CLI catches SIGINT and SIGTERM
 * from there on: before, fspl waits for its input, and a signal ends it).
 */
export async function processFd(fd: number, opts: ProcessFdOptions): Promise<boolean> {
  const log = opts.logger ?? silentLogger;
  checkSeconds(opts.timeout, 'processFd: timeout');
  splitCommand(opts.command, 'processFd');
  const stopping = new Stopping(opts, log, 'processFd');
  try {
    const { decoder } = opts;
    const { header, outcome } =
      decoder === undefined
        ? await processHeaderAndRun(fd, opts, log, stopping)
        : await (await loadRunJob()).runDecodedFdJob(fd, { ...opts, decoder }, log, stopping);
    log.debug('process', () => `Job ${header.seq} ${outcome.why}`);
    if (!outcome.ok)
      throw new JobFailedError(`Job ${header.seq} ${outcome.interrupted ? 'interrupted' : 'failed'} (${outcome.why})`);
    return true;
  } finally {
    stopping.close();
  }
}

async function processHeaderAndRun(
  fd: number,
  opts: CommandOptions & { onStart?: () => void; allowedSigners?: AllowedSigners },
  log: Logger,
  stopping: Stopping,
): Promise<{ header: PacketHeader; outcome: Outcome }> {
  const [
    { readHeaderSync },
    { jobVariables },
    { checkSealedStdin, guardedPayload, judgeSeal, NO_SEAL },
    { builtinOutcome, runCommandJob },
  ] = await Promise.all([
    import('../packet/read.js'),
    import('../queue/jobenv.js'),
    import('../packet/seal/seal-check.js'),
    loadRunJob(),
  ]);
  const header = readHeaderSync(fd);
  // With allowed signers, nothing runs (not even a NOP) unless its signature lets it in, payload and all.
  const signed = opts.allowedSigners ? await checkSignedStdin(fd, header, opts.allowedSigners) : undefined;
  try {
    // A sealed payload is checked: from a file by its size, from a pipe as it is relayed.
    const guard = builtinOutcome(header) || opts.ignorePayload || signed ? NO_SEAL : checkSealedStdin(fd, header.seal);
    const payload = signed ? signed.payload.fd : guardedPayload(guard, fd);
    const job: Job = {
      header,
      variables: jobVariables(header, undefined, signed?.signer),
      payload,
      signer: signed?.signer,
    };
    const run = async () => {
      opts.onStart?.();
      const ran = await runCommandJob(job, opts, 'inherit', log, { ...process.env }, stopping);
      return ran.interrupted ? ran : judgeSeal(ran, guard);
    };
    const outcome: Outcome =
      builtinOutcome(header) ?? (guard.kind === 'refused' ? { ok: false, why: guard.why } : undefined) ?? (await run());
    return { header, outcome };
  } finally {
    if (signed?.payload.spooled) closeQuietly(signed.payload.fd);
  }
}

/** stdin-process with allowed signers: the packet judged whole before anything runs (SignatureError if refused). */
async function checkSignedStdin(fd: number, header: PacketHeader, signers: AllowedSigners) {
  const [{ checkHeaderSignature }, { checkPayloadRestSync }, { fdOffset }, { refusalError }] = await Promise.all([
    import('../sign/packet-signature.js'),
    import('../sign/payload-digest.js'),
    import('../packet/seal/sealed-copy.js'),
    import('../sign/judge.js'),
  ]);
  try {
    const signer = checkHeaderSignature(header, signers);
    return { signer, payload: checkPayloadRestSync(fd, fdOffset(fd), header) };
  } catch (err) {
    if (err instanceof SignatureError) throw refusalError(header.seq, err);
    throw err;
  }
}

/**
 * Process a queue: in sequence order from nextseq (the default) or in timestamp order.
 * Holds the queue lock throughout. Failure handling follows onError; with 'retry' a failing job
 * stops processing with JobFailedError and stays in place. In watch mode, waits for new jobs
 * instead of returning when none is ready (the steps: queue-run.ts).
 */
export async function processQueue(queue: Queue, opts: ProcessQueueOptions): Promise<ProcessSummary> {
  if (opts.listen) {
    // The page is fed by the run's events, before the caller's listener hears them.
    const { withQueuePage } = await import('./listen.js');
    return withQueuePage(opts, 'processQueue', (monitor) => {
      monitor.add(queue.dir);
      const onEvent = (e: ProcessEvent) => {
        monitor.onJobEvent(queue.dir, e);
        opts.onEvent?.(e);
      };
      return processQueue(queue, { ...opts, listen: undefined, onEvent });
    });
  }
  const ctx = runContext(opts, queue.logger);
  try {
    return await processLocked(queue, opts, ctx);
  } finally {
    ctx.stopping.close();
  }
}

async function processLocked(queue: Queue, opts: ProcessQueueOptions, ctx: RunContext): Promise<ProcessSummary> {
  const emit = eventSink(opts, ctx.log);
  const run = new QueueRun(queue, ctx, emit);
  await run.lock();
  let watcher: JobsWatcher | undefined;
  try {
    if (opts.watch) {
      const mode = typeof opts.watch === 'object' ? opts.watch : {};
      // Loaded only here: a run of one pass does not need it. Before the first scan, so that a job
      // arriving in between is not missed.
      const { JobsWatcher } = await import('../queue/watch.js');
      watcher = new JobsWatcher(queue.jobsDir, { pollInterval: mode.pollInterval, logger: ctx.log });
      ctx.log.debug('process', () => `Watching ${JSON.stringify(queue.jobsDir)} for new jobs (${watcher!.mode})`);
    }
    const maxJobs = opts.maxJobs ?? Infinity;
    // The next job may be started as the one before it ends (queue-chain.ts): not past the limit, not once stopping.
    if (!opts.startAfterEnd) run.chainJobs(() => !ctx.stopping.stopped && run.summary.processed + 1 < maxJobs);
    for (;;) {
      await run.scan();
      const stop = await runPass(run, maxJobs, ctx.stopping);
      const due = !stop && !watcher ? run.dueError() : undefined;
      if (due) throw due;
      if (stop || !watcher) break;
      run.rest(); // nothing half-finished while we wait
      emit({ type: 'idle' });
      if (!(await waitForWork(watcher, run.dueMs, ctx.stopping.stop))) break;
    }
    run.rest(); // every record durable before the run says it is done (release would swallow a failure)
    return run.summary;
  } finally {
    watcher?.close();
    run.release();
  }
}

/**
 * Check the options of a run (one queue or many) and choose its executor; nothing is locked yet.
 * `logger` is the one to use when the options give none. The caller closes its `stopping` when
 * the run is over.
 */
export function runContext(opts: ProcessRunOptions, logger: Logger): RunContext {
  const log = opts.logger ?? logger;
  if ((opts.run === undefined) === (opts.command === undefined)) {
    throw new TypeError('processQueue: give exactly one of `command` and `run`');
  }
  if (opts.command !== undefined) splitCommand(opts.command, 'processQueue'); // a wrong one fails here, not at each job
  checkSeconds(opts.timeout, 'processQueue: timeout');
  // Read once per run (slow to enumerate); frozen, so that ChildEnv packs it once.
  const baseEnv = Object.freeze({ ...process.env });
  const stopping = new Stopping(opts, log, 'processQueue');
  const retry = retryPolicyOf(opts);
  checkOnFinish(opts.onFinish);
  const onFinish = opts.onFinish && new FinishHook(opts.onFinish, log, stopping.interrupt);
  return {
    opts,
    log,
    onError: opts.onError ?? 'retry',
    timestampOrder: opts.orderBy === 'timestamp',
    stopping,
    baseEnv,
    retry,
    failedTo: opts.failedTo,
    onFinish,
  };
}

/** The run's retry policy (retry.ts), checked; undefined without `retries`. */
function retryPolicyOf(opts: ProcessRunOptions): RetryPolicy | undefined {
  const { retries, retryDelay, retryMaxDelay } = opts;
  checkSeconds(retryDelay, 'processQueue: retryDelay');
  checkSeconds(retryMaxDelay, 'processQueue: retryMaxDelay');
  if (retries === undefined) {
    if (retryDelay !== undefined || retryMaxDelay !== undefined)
      throw new TypeError('processQueue: retryDelay and retryMaxDelay need retries');
    return undefined;
  }
  if (!Number.isSafeInteger(retries) || retries < 0 || retries > 0xffff_ffff)
    throw new RangeError(`processQueue: retries must be a whole number >= 0, got ${String(retries)}`);
  const delayMs = (retryDelay ?? DEFAULT_RETRY_DELAY) * 1000;
  return { retries, delayMs, maxDelayMs: Math.max(delayMs, (retryMaxDelay ?? DEFAULT_RETRY_MAX_DELAY) * 1000) };
}

/** Report an event to opts.onEvent; a listener's failure is logged, never thrown. */
function eventSink(opts: { onEvent?: (event: ProcessEvent) => void }, log: Logger): (event: ProcessEvent) => void {
  return (event) => {
    try {
      opts.onEvent?.(event);
    } catch (err) {
      // A listener (a progress display, say) must not break the run between a job and its record.
      log.warn('process', `onEvent listener failed: ${describeSystemError(err)}`);
    }
  };
}

/**
 * Watching: until jobs/ changes or, when a retry is due, until its time (a timer, not a poll);
 * false when the run is stopping.
 */
async function waitForWork(
  watcher: JobsWatcher,
  dueMs: number | undefined,
  stop: AbortSignal | undefined,
): Promise<boolean> {
  if (dueMs === undefined) return watcher.wait(stop);
  const due = new AbortController();
  // At most WALL_CHECK_MS: the next pass checks the wall clock again, and waits again if early.
  const cancel = setLongTimeout(() => due.abort(), dueDelayMs(dueMs));
  const onStop = () => due.abort();
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    await watcher.wait(due.signal);
  } finally {
    cancel();
    stop?.removeEventListener('abort', onStop);
  }
  return !stop?.aborted;
}

/** Run the pass's jobs one after the other; true when the run must stop (limit reached, aborted). */
async function runPass(run: QueueRun, maxJobs: number, stopping: Stopping): Promise<boolean> {
  for (;;) {
    // A job a chain started (queue-chain.ts) runs already: it is waited for and recorded first.
    const started = run.chainStarted;
    if (run.summary.processed >= maxJobs && !started) {
      run.log.debug('process', () => `Stopping: reached the limit of ${maxJobs} jobs`);
      return true;
    }
    if (stopping.stopped && !started) return true;
    if ((await run.runNext(maxJobs - run.summary.processed)) === 0) {
      run.log.debug('process', 'Stopping: there is no job with the next sequence number');
      return false;
    }
  }
}
