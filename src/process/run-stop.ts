/**
 * How a run of jobs stops (processFd, processQueue, processQueues), from the options it was
 * given: `signal` asks it to stop after the running jobs, `interrupt` stops the running jobs
 * now (as their timeout would: process.ts, CommandOptions), and `stopTimeout` seconds after
 * `signal` the interrupt comes by itself. The CLI aborts them on SIGINT and SIGTERM
 * (cli/runtime/stop-signals.ts).
 */
import type { Logger } from '../base/log.js';
import { checkSeconds, setLongTimeout } from '../base/timer.js';

export interface StopOptions {
  /** Stop cleanly when aborted: the running jobs finish (and are recorded), no other starts. */
  signal?: AbortSignal;
  /** Stop the running jobs now when aborted (CommandOptions.interrupt says how). */
  interrupt?: AbortSignal;
  /** Seconds the running jobs still have once `signal` aborts; then they are interrupted. Default: no limit. */
  stopTimeout?: number;
}

export class Stopping {
  /** Aborted when the running jobs must stop now: `interrupt`, or `stopTimeout` after `signal`. */
  readonly interrupt: AbortSignal | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly arm: (() => void) | undefined;
  private cancelTimer: (() => void) | undefined;
  private either: AbortSignal | undefined;

  /** `what` names the caller in the error a bad stopTimeout gives. */
  constructor(opts: StopOptions, log: Logger, what: string) {
    checkSeconds(opts.stopTimeout, `${what}: stopTimeout`);
    const { signal, stopTimeout } = opts;
    this.signal = signal;
    let interrupt = opts.interrupt;
    if (signal && stopTimeout !== undefined) {
      const timedOut = new AbortController();
      this.arm = () => {
        this.cancelTimer = setLongTimeout(() => {
          log.info('process', `The running jobs had ${stopTimeout} s to finish: stopping them now`);
          timedOut.abort();
        }, stopTimeout * 1000);
      };
      if (signal.aborted) this.arm();
      else signal.addEventListener('abort', this.arm, { once: true });
      interrupt = interrupt ? AbortSignal.any([interrupt, timedOut.signal]) : timedOut.signal;
    }
    this.interrupt = interrupt;
  }

  /**
   * Aborted when the run must stop: its `signal`, or an interrupt. Made when first wanted: a pass
   * asks `stopped`, and the first AbortSignal.any of a process is slow (it sets up what tracks
   * the signals it joins).
   */
  get stop(): AbortSignal | undefined {
    const { signal, interrupt } = this;
    return signal && interrupt ? (this.either ??= AbortSignal.any([signal, interrupt])) : (signal ?? interrupt);
  }

  /** Whether `stop` is aborted (asked without making it). */
  get stopped(): boolean {
    return this.signal?.aborted === true || this.interrupt?.aborted === true;
  }

  /** The run is over: no timer left, no listener on the caller's signal. */
  close(): void {
    this.cancelTimer?.();
    if (this.arm) this.signal?.removeEventListener('abort', this.arm);
  }
}
