/**
 * How the run's loop sleeps and is woken (runner.ts): until something changed (a file event, a
 * firing's end, a commit: the runner's `wake`), or until a time (a batch's max-wait, a retry's
 * delay, a drain's next look).
 */
import { setLongTimeout } from '../../base/timer.js';

/**
 * What a wake asks the loop to look at again: `all` (something changed anywhere, a file event or
 * a time: refused commits are asked again too), `schedule` (tokens freed or committed: schedule
 * again), `loop` (nothing new to scan: a refused commit, which a drain may drop).
 */
export type WakeLook = 'all' | 'schedule' | 'loop';

export class LoopWake {
  private waiter: (() => void) | undefined;
  /** Something changed since the loop last looked. */
  dirty = true;

  /** `onTime`: what a time that passes does (the runner's wake('all')). */
  constructor(private readonly onTime: () => void) {}

  /** Wake the loop, with nothing new to scan. */
  wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** Until woken, or `ms` pass; at once if something changed or `now` says so (the run is stopping). */
  forWork(ms: number, now = false): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.dirty || now) return resolve();
      const timer = setTimeout(this.onTime, ms);
      this.waiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Until woken, or until wakeAt (ms since the epoch; undefined: no time). */
  until(wakeAt: number | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.dirty) return resolve();
      // A batch's max-wait may be months away: setLongTimeout, not setTimeout, which would fire at once.
      const cancel =
        wakeAt !== undefined ? setLongTimeout(this.onTime, Math.max(0, wakeAt - Date.now()) + 5) : undefined;
      this.waiter = () => {
        cancel?.();
        resolve();
      };
    });
  }
}
