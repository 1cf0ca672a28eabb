/**
 * Finish hooks (queue-process --on-finish; what they get: docs/queues.md): run after each job that
 * ran, once its record is durable, one at a time across the run, the job's queue waiting for its
 * hook (at most its timeout), so a mail never races the next job's. A hook's failure is logged;
 * the job's record never changes. NOPs, refused and interrupted jobs call no hook; a Fail packet does.
 */
import { describeSystemError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { checkSeconds } from '../base/timer.js';
import type { Queue } from '../queue/queue.js';
import type { JobEntry } from '../queue/types.js';
import type { Outcome, OutcomeWord } from './outcome.js';

/** The hook's timeout when none is given, in seconds. */
export const DEFAULT_ON_FINISH_TIMEOUT = 30;

/** A finish hook (RunSettings.onFinish). */
export interface OnFinishOptions {
  /** A shell command line, run as `$SHELL -c COMMAND` (/bin/sh when SHELL is not set). */
  command: string;
  /** Seconds before its process group is killed (default 30). */
  timeout?: number;
}

/** A job's try that ended, for the hook. */
export interface FinishedTry {
  queue: Queue;
  entry: JobEntry;
  outcome: Outcome;
  word: OutcomeWord;
  /** The try's number (1 without retries). */
  attempt: number;
  durationMs: number;
}

/** Check a run's onFinish option; a TypeError or RangeError names what is wrong. */
export function checkOnFinish(hook: OnFinishOptions | undefined): void {
  if (hook === undefined) return;
  if (typeof hook.command !== 'string' || hook.command.trim() === '')
    throw new TypeError('processQueue: onFinish.command must be a command line');
  checkSeconds(hook.timeout, 'processQueue: onFinish.timeout');
}

/** The variables a hook gets besides the job's own. */
export function finishVariables(t: FinishedTry): [string, string][] {
  return [
    ['FSPL_JOB_OUTCOME', t.word],
    ['FSPL_JOB_EXIT_STATUS', t.outcome.exitStatus ?? ''],
    ['FSPL_JOB_DURATION_MS', String(Math.round(t.durationMs))],
  ];
}

// The job's variables (jobenv.ts, with its time zone code) load with the first hook: a run that calls
// none does not pay for them. The promise is kept: the bundle makes each import() a fresh copy.
let jobenvModule: Promise<typeof import('../queue/jobenv.js')> | undefined;
const jobenv = () => (jobenvModule ??= import('../queue/jobenv.js'));

/** Runs a run's hooks, one at a time. */
export class FinishHook {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly hook: OnFinishOptions,
    private readonly log: Logger,
    private readonly stop?: AbortSignal,
  ) {}

  /** Run the hook for this try after those before it; never rejects. */
  run(t: FinishedTry): Promise<void> {
    const next = this.chain.then(() => this.runOne(t));
    this.chain = next;
    return next;
  }

  private async runOne(t: FinishedTry): Promise<void> {
    const { seq } = t.entry.header;
    const where = { queuedir: t.queue.dir, filename: t.entry.filename, attempt: t.attempt };
    const { jobVariableStrings } = await jobenv();
    const own = [...jobVariableStrings(t.entry.header, where, t.entry.signer), ...finishVariables(t)];
    const env: Record<string, string | undefined> = { ...process.env, ...Object.fromEntries(own) };
    const shell = process.env.SHELL || '/bin/sh';
    try {
      // Loaded here: a run without hooks, or before its first job, does not pay for it.
      const { describeResult, runCommand } = await import('../sys/exec.js');
      const r = await runCommand({
        command: shell,
        args: ['-c', this.hook.command],
        env,
        stdin: 'ignore',
        output: 2, // fspl's stderr: the job's own output may be on stdout
        timeout: this.hook.timeout ?? DEFAULT_ON_FINISH_TIMEOUT,
        stop: this.stop,
      });
      if (!r.ok) this.log.warn('process', `Finish hook of job ${seq} ${describeResult(r)}`);
    } catch (err) {
      this.log.warn('process', `Finish hook of job ${seq} not run: ${describeSystemError(err).split('\n')[0]}`);
    }
  }
}
