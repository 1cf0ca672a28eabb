/**
 * How the run's loop sleeps and is woken (runner.ts): until something changed (a file event, a
 * firing's end, a commit: `changed()`), or until a time (a batch's max-wait, a retry's delay,
 * a drain's next look).
 */
import { setLongTimeout } from '../../base/timer.js';

export class LoopWake {
  private wake: (() => void) | undefined;
  /** Something changed since the loop last looked. */
  dirty = true;

  /** `onTime`: what a time that passes does (the runner's poke). */
  constructor(private readonly onTime: () => void) {}

  /** Wake the loop, with nothing new to scan. */
  nudge(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Until woken, or `ms` pass; at once if something changed or `now` says so (the run is stopping). */
  forWork(ms: number, now = false): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.dirty || now) return resolve();
      const timer = setTimeout(this.onTime, ms);
      this.wake = () => {
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
      const cancel = wakeAt !== undefined ? setLongTimeout(this.onTime, Math.max(0, wakeAt - Date.now()) + 5) : undefined;
      this.wake = () => {
        cancel?.();
        resolve();
      };
    });
  }
}
