/**
 * `fspl queue-process`: one queue (`-q DIR`, as the reference), or many in one process (`-q`
 * more than once, `--queues-in PARENT`: an extension). Parses and checks the options, then calls
 * processQueue or processQueues; prints the progress line on a terminal and, after a pass over
 * many queues, one line per queue that stopped.
 */

import { describeSystemError, QueueError } from '../../base/errors.js';
import { createLogger, type Logger } from '../../base/log.js';
import type { ProcessQueuesOptions, ProcessQueuesSummary } from '../../process/options.js';
import {
  type OnError,
  type OrderBy,
  type OutputTo,
  type ProcessEvent,
  processQueue,
  type QueuePageOptions,
} from '../../process/process.js';
import { Queue } from '../../queue/queue.js';
import {
  allowedSignersArg,
  enumArg,
  flag,
  intArg,
  maxHeaderSizeArg,
  processOptions,
  secondsArg,
  str,
  strings,
  verifyDecoderArg,
} from '../parse/args.js';
import type { Invocation } from '../parse/grammar.js';
import type { FsplArgs } from '../parse/spec.js';
import { MANY_QUEUES, ONE_QUEUE, StopSignals } from '../runtime/stop-signals.js';
import { checkLogLevel, UsageError } from '../text/output.js';
import type { ProgressLine } from '../text/progress.js';
import { stderrIsTerminal } from '../text/stderr-terminal.js';

const ON_ERROR: readonly OnError[] = ['retry', 'delete', 'leave'];
const ORDER_BY: readonly OrderBy[] = ['sequence', 'timestamp'];
const OUTPUT_TO: readonly OutputTo[] = ['passboth', 'saveboth'];

export async function queueProcess(inv: Invocation<FsplArgs<'queue-process'>>, given: Logger): Promise<number> {
  const dirs = strings(inv, 'queuedir');
  const parents = strings(inv, 'queues-in');
  if (dirs.length === 0 && parents.length === 0)
    throw new UsageError(
      'missing -q DIR: the queue directory (or, to serve many queues, -q more than once or --queues-in PARENT)',
    );
  const watch = flag(inv, 'watch');
  if (str(inv, 'poll-interval') !== undefined && !watch)
    throw new UsageError('--poll-interval only applies with --watch');
  const pollInterval = secondsArg(inv, 'poll-interval', 0.01);
  const listen = await listenArg(inv, watch);
  const jobs = intArg(inv, 'jobs');
  if (jobs !== undefined && jobs < 1)
    throw new UsageError(`invalid value '${str(inv, 'jobs')}' for --jobs: expected a whole number, at least 1`);
  const maxHeaderSize = maxHeaderSizeArg(inv);
  const verifyDecoder = verifyDecoderArg(inv);
  // Every option is checked before the queue is looked at (usage errors first, as the reference).
  const options = {
    ...processOptions(inv, given),
    onError: enumArg(inv, 'on-error', ON_ERROR),
    orderBy: enumArg(inv, 'order-by', ORDER_BY),
    outputTo: enumArg(inv, 'output-to', OUTPUT_TO),
    neverDelete: flag(inv, 'never-delete'),
    verify: flag(inv, 'verify'),
    maxJobs: intArg(inv, 'maxjobs'),
    watch: watch && { pollInterval },
    ...retryOptions(inv),
    onFinish: onFinishArg(inv),
    listen,
  };
  // The line's code is loaded only for a terminal: a run from cron or a service has none.
  const progress =
    !flag(inv, 'no-progress') && stderrIsTerminal()
      ? new (await import('../text/progress.js')).ProgressLine(process.stderr, options.outputTo === 'passboth')
      : undefined;
  // Log lines go through the progress line, which clears itself for them.
  const log = progress ? createLogger(checkLogLevel(inv.logLevel), progress.sink) : given;
  options.logger = log;
  if (listen)
    listen.onListening = (url) =>
      log.info('process', `Serving the queues' page at ${url} (read-only; ${url}metrics for Prometheus)`);
  const many = dirs.length > 1 || parents.length > 0;
  if (parents.length > 0) await noQueuesFound(parents, { others: dirs.length > 0, watch }, log);
  // The first SIGINT or SIGTERM lets the running jobs finish, the second stops them (stop-signals.ts):
  // from the start when watching or over many queues, else from the first job (an empty queue's run
  // then loads no signal handling).
  const signals = new StopSignals(log, many ? MANY_QUEUES : ONE_QUEUE, options.stopTimeout);
  const stopping = { signal: signals.stop.signal, interrupt: signals.interrupt.signal };
  if (watch || many) signals.listen();
  // --timeout also bounds a decoder that gives no header (an extension: the reference waits).
  const allowedSigners = await allowedSignersArg(inv);
  const queueOptions = {
    decoder: str(inv, 'decoder'),
    decoderTimeout: options.timeout,
    verifyDecoder,
    maxHeaderSize,
    allowedSigners,
    logger: log,
  };
  try {
    if (!many) {
      const q = Queue.open(dirs[0]!, queueOptions);
      q.assertExists();
      const tune = longRunTuner();
      const onEvent = (e: ProcessEvent) => {
        if (e.type === 'start') signals.listen();
        tune(e);
        progress?.update(e);
      };
      // The line, cleared as a job starts, is drawn as the one before ends: no job may start in between.
      await processQueue(q, { ...options, ...stopping, onEvent, startAfterEnd: progress?.jobsWriteHere === true });
      return 0;
    }
    return await runMany(dirs, { ...options, ...queueOptions, jobs, queuesIn: parents, ...stopping }, progress, log);
  } finally {
    progress?.finish();
    signals.close();
  }
}

/**
 * Tunes V8 for a long run (runtime/v8-tuning.ts) as the second job starts, once: a run of one job, the
 * cron loop's usual case, does not pay for loading node:v8.
 */
function longRunTuner(): (e: { type: string }) => void {
  let started = 0;
  return (e) => {
    // Only for speed: should it fail, the run goes on as it would have.
    if (e.type === 'start' && ++started === 2)
      import('../runtime/v8-tuning.js').then((m) => m.tuneForLongRun('jobs')).catch(() => undefined);
  };
}

/** Many queues (-q more than once, --queues-in): each stops alone; watching, said as it stops. */
async function runMany(
  dirs: string[],
  run: ProcessQueuesOptions,
  progress: ProgressLine | undefined,
  log: Logger,
): Promise<number> {
  // Loaded only here: one queue's run (cron over an empty queue) does not pay for it.
  const { processQueues } = await import('../../process/many-queues.js');
  const shown = progress && new (await import('../text/progress.js')).ManyProgress(progress);
  const tune = longRunTuner();
  const summary = await processQueues(dirs, {
    ...run,
    onEvent: (e) => {
      tune(e);
      shown?.update(e);
      // Watching, a stop is said when it happens; after a pass, in the summary below.
      if (e.type === 'stopped' && run.watch)
        log.error('process', `Queue ${JSON.stringify(e.queue)} stopped: ${describeSystemError(e.error)}`);
    },
  });
  progress?.finish();
  return run.watch ? 0 : reportStopped(summary);
}

/** --retries, --retry-delay, --retry-max-delay and --failed-to, checked (the library's names). */
function retryOptions(inv: Invocation<FsplArgs<'queue-process'>>) {
  const retries = intArg(inv, 'retries');
  const retryDelay = secondsArg(inv, 'retry-delay');
  const retryMaxDelay = secondsArg(inv, 'retry-max-delay');
  if (retries === undefined && (retryDelay !== undefined || retryMaxDelay !== undefined))
    throw new UsageError('--retry-delay and --retry-max-delay only apply with --retries');
  if (retries !== undefined && retries > 0xffff_ffff)
    throw new UsageError(`invalid value '${str(inv, 'retries')}' for --retries: at most 4294967295`);
  return { retries, retryDelay, retryMaxDelay, failedTo: str(inv, 'failed-to') };
}

/** --on-finish CMD and --on-finish-timeout SECONDS: the finish hook (the library's onFinish). */
function onFinishArg(inv: Invocation<FsplArgs<'queue-process'>>): { command: string; timeout?: number } | undefined {
  const command = str(inv, 'on-finish');
  const timeout = secondsArg(inv, 'on-finish-timeout');
  if (command === undefined) {
    if (timeout !== undefined) throw new UsageError('--on-finish-timeout only applies with --on-finish');
    return undefined;
  }
  if (command.trim() === '') throw new UsageError("invalid value '' for --on-finish: expected a command line");
  return { command, timeout };
}

/**
 * --listen [HOST:]PORT (with --watch only) and --allow-host: where the queues' page listens.
 * HOST is a name or an address, an IPv6 one in brackets; 127.0.0.1 when not given.
 */
async function listenArg(
  inv: Invocation<FsplArgs<'queue-process'>>,
  watch: boolean,
): Promise<QueuePageOptions | undefined> {
  const given = str(inv, 'listen');
  const allowHosts = strings(inv, 'allow-host');
  if (given === undefined) {
    if (allowHosts.length > 0) throw new UsageError('--allow-host only applies with --listen');
    return undefined;
  }
  if (!watch)
    throw new UsageError('--listen only applies with --watch (a run of one pass ends before anyone could look)');
  const m = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):)?([0-9]{1,5})$/.exec(given);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535)
    throw new UsageError(
      `invalid value '${given}' for --listen: expected [HOST:]PORT, e.g. 9464 or 127.0.0.1:9464 (PORT 0: any free one)`,
    );
  if (allowHosts.length > 0) {
    // Loaded only here: it needs node:net, a few ms of every start that has no --allow-host.
    const { badAllowedHost } = await import('../../web/host-check.js');
    for (const name of allowHosts) {
      const bad = badAllowedHost(name);
      if (bad) throw new UsageError(`invalid value for --allow-host: ${bad}`);
    }
  }
  return { host: m[1] ?? m[2] ?? '127.0.0.1', port, allowHosts };
}

/**
 * --queues-in that finds no queue at all (pointed at a queue instead of its parent, say): one line
 * saying what is there instead. In a one-pass run with nothing else to serve, that is the run's
 * failure (exit 1, nothing run); watching, or with -q queues too, a warning, once.
 */
async function noQueuesFound(
  parents: readonly string[],
  run: { others: boolean; watch: boolean },
  log: Logger,
): Promise<void> {
  // Loaded here: only --queues-in needs it.
  const { noQueueUnder } = await import('../../queue/queue-dirs.js');
  const why: string[] = [];
  for (const p of parents) {
    const none = noQueueUnder(p);
    if (none === undefined) return; // a queue is there (or the parent can't be read: the run says why)
    why.push(none);
  }
  const line = `--queues-in found no queue: ${why.join('; ')}`;
  if (!run.others && !run.watch) throw new QueueError(line);
  log.warn('process', `${line}${run.watch ? '; watching for queues to appear' : ''}`);
}

/** After a pass: one `Error:` line per queue that stopped, and exit status 1 if any did. */
function reportStopped(summary: ProcessQueuesSummary): number {
  let status = 0;
  for (const q of summary.queues) {
    if (q.state !== 'stopped') continue;
    process.stderr.write(`Error: queue ${JSON.stringify(q.queue)} stopped: ${describeSystemError(q.error)}\n`);
    status = 1;
  }
  return status;
}
