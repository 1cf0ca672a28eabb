/**
 * What every queue of one run of queue-process shares (RunContext), and the job runner's module,
 * loaded with the first job.
 */
import type { Logger } from '../base/log.js';
import type { FinishHook } from './on-finish.js';
import type { OnError, ProcessRunOptions } from './options.js';
import type { RetryPolicy } from './retry.js';
import type { JobRunSettings } from './run-job.js';
import type { Stopping } from './run-stop.js';

// run-job.ts and what it brings (exec.ts, child_process, the decoder, seal checks, streams) load with the first job:
// a cron pass over an empty queue does not load them.
export type RunJobModule = typeof import('./run-job.js');
let runJobModule: Promise<RunJobModule> | undefined;
export const loadRunJob = () => (runJobModule ??= import('./run-job.js'));

/** What every queue of one run shares: the options, and the executor chosen from them. */
export interface RunContext extends JobRunSettings {
  opts: ProcessRunOptions;
  log: Logger;
  onError: OnError;
  timestampOrder: boolean;
  /** When the run stops, and when its running jobs must stop now (closed by the caller). */
  stopping: Stopping;
  /** With retries (retry.ts): how a failing job is tried again. */
  retry?: RetryPolicy;
  /** A failed-jobs queue (transfer.ts): where a job that used its tries goes. */
  failedTo?: string;
  /** The finish hook (on-finish.ts), shared by the run's queues: one at a time. */
  onFinish?: FinishHook;
}
