/**
 * A job's verdict (Outcome), for every way a job runs (run-job.ts, ready-job.ts) and for the run
 * that records it (queue-run.ts, process.ts); and the verdicts of jobs that run nothing.
 */
import type { Logger } from '../base/log.js';
import type { PacketHeader } from '../packet/types.js';
import type { JobEntry } from '../queue/types.js';

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
  /** Failed because it ran out of its time (the command killed, the function's signal aborted). */
  timedOut?: boolean;
}

/**
 * How a job ended, in the words that `FSPL_JOB_OUTCOME` and the metrics' `outcome` label share:
 * it succeeded, failed, timed out, failed with a retry due, or was moved to the failed-jobs queue.
 */
export type OutcomeWord = 'success' | 'failure' | 'timeout' | 'retry' | 'moved';
export const OUTCOME_WORDS: readonly OutcomeWord[] = ['success', 'failure', 'timeout', 'retry', 'moved'];

/** The word of a verdict as the job's run gave it (a retry or a move is the run's decision, after). */
export function outcomeWord(o: Outcome): OutcomeWord {
  return o.ok ? 'success' : o.timedOut ? 'timeout' : 'failure';
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
