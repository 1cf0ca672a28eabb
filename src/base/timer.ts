/**
 * Timers for delays of any length. Node's setTimeout holds at most 2^31-1 ms (about 24.8 days):
 * a longer delay is turned into 1 ms, so a timeout of a month would fire at once. Every timeout
 * and wait that a user can set (`queue-process --timeout`, a net's `timeout:` and `max-wait:`,
 * `net run --grace`, the library's `timeout` options) is armed through here, and a long delay
 * is waited out in steps.
 */

/** The longest delay setTimeout takes as it is. */
export const MAX_TIMER_MS = 0x7fff_ffff;

/**
 * A monotonic clock in milliseconds, for durations. Not `performance.now()`: the first read of the
 * global `performance` loads Node's perf_hooks modules, about 1 ms of a cron run's start.
 */
export function monotonicMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}

/**
 * Call `fn` once `ms` milliseconds have passed; Infinity means never. Returns the function that
 * cancels it. `unref`: the timer does not keep the process alive (as Timeout.unref()).
 */
export function setLongTimeout(fn: () => void, ms: number, opts: { unref?: boolean } = {}): () => void {
  if (Number.isNaN(ms)) throw new RangeError('setLongTimeout: the delay is NaN');
  if (ms === Infinity) return () => {};
  let timer: NodeJS.Timeout | undefined;
  let remaining = Math.max(0, ms);
  const arm = () => {
    const step = Math.min(remaining, MAX_TIMER_MS);
    remaining -= step;
    timer = setTimeout(() => (remaining > 0 ? arm() : fn()), step);
    if (opts.unref) timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/**
 * Check a timeout given to the library, in seconds: a number, 0 or more (0: at once, as
 * `--timeout 0`; Infinity: never). NaN or a negative number would otherwise fire at once.
 */
export function checkSeconds(value: number | undefined, what: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new RangeError(`${what}: expected a number of seconds, 0 or more (got ${String(value)})`);
  }
}

/** Wait `ms` milliseconds, or until `signal` aborts if it does first (at once if it has); never rejects. */
export function waitUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The wait before try `attempt` (from 1) of something that failed: `min` ms, doubling, at most `max`. */
export function backoffMs(attempt: number, min: number, max: number): number {
  return Math.min(max, min * 2 ** Math.min(Math.max(0, attempt - 1), 20));
}

/**
 * The longest a wait for a wall-clock time sleeps at once. Timers run on the monotonic clock, a
 * due time (a retry's, a job's not-before) is on the wall clock: each wake checks the wall clock
 * again and sleeps anew if it is early. So a clock set back never runs a job early, and a clock
 * set forward (or a machine waking from suspend) is noticed within this long.
 */
export const WALL_CHECK_MS = 60_000;

/** How long to sleep now for wall-clock time `dueMs` (ms since the epoch): until then, at most WALL_CHECK_MS. */
export function dueDelayMs(dueMs: number, nowMs = Date.now()): number {
  return Math.min(WALL_CHECK_MS, Math.max(0, dueMs - nowMs));
}
