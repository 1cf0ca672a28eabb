/**
 * A job's verdict (Outcome), for every way a job runs (run-job.ts, ready-job.ts) and for the run
 * that records it (queue-run.ts, process.ts); and the verdicts of jobs that run nothing.
 */
import type { Logger } from '../base/log.js';
import type { PacketHeader } from '../packet/types.js';
import type { JobEntry } from '../queue/types.js';

/**
 * What became of a job's try, in one word: the same in FSPL_JOB_OUTCOME and in the metrics'
 * `outcome` label. `retry`: it failed and is tried again later (queue-process
 * --retries); `moved`: it failed its last try and went to the failed-jobs queue (--failed-to).
 */
export type OutcomeWord = 'success' | 'failure' | 'timeout' | 'retry' | 'moved';

export const OUTCOME_WORDS: readonly OutcomeWord[] = ['success', 'failure', 'timeout', 'retry', 'moved'];

/** A job's verdict, and why in words (for the log and the 'end' event). */
export interface Outcome {
  ok: boolean;
  why: string;
  /**
   * Stopped before it finished as the run stopped (by its interrupt, or by a signal that reached
   * the command along with fspl: killedWithTheRun): not the job's failure. It is not recorded
   * (it stays in the queue, whatever onError says) and the run ends.
   */
  interrupted?: boolean;
  /**
   * Not let in by its signature (sign/judge.ts): never run, never given its number. `why` is the
   * note; the run moves the job to refused/ and waits for the real packet of that number.
   */
  refused?: boolean;
  /** Killed at its timeout (a failure that the outcome word calls `timeout`). */
  timedOut?: boolean;
  /** A command's exit: its status (`0`, `1`...) or its signal (`signal:KILL`); none for a function, NOP or Fail. */
  exitStatus?: string;
}

/** The word of a finished try that is neither retried nor moved: success, failure or timeout. */
export function outcomeWord(outcome: Outcome): OutcomeWord {
  return outcome.ok ? 'success' : outcome.timedOut ? 'timeout' : 'failure';
}

/** The outcome of a NOP or Fail packet, which run nothing; undefined for a command packet. */
export function builtinOutcome(header: PacketHeader): Outcome | undefined {
  if (header.cmd.kind === 'NOP') return { ok: true, why: 'it is a NOP packet' };
  if (header.cmd.kind === 'Fail') return { ok: false, why: 'it is a Fail packet' };
  return undefined;
}

/** A job that must not run (its payload fails its seal, its output can not be written): not run, failed. */
export function refuseJob(why: string, entry: JobEntry, log: Logger): Outcome {
  log.error('process', `Job ${entry.header.seq} not run: ${why}`);
  return { ok: false, why };
}
