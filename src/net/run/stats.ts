/**
 * Metrics of a running net, computed without I/O: every function and method that depends on
 * time takes `now` (milliseconds, e.g. from Date.now()) from its caller and never reads a clock,
 * so histories can be replayed and tested exactly. Memory is bounded: rates are kept in fixed
 * time buckets and samples in a fixed ring.
 */

import { checkFinite, checkPositiveInteger, mean, quantile, SampleWindow } from '../plan/samples.js';

export { mean, p95, quantile, SampleWindow } from '../plan/samples.js';

/** Options of a RateWindow. */
export interface RateWindowOptions {
  /** Width of one bucket in ms (default 1000). */
  readonly bucketMs?: number;
  /** How far back counts are kept, in ms, a multiple of bucketMs (default 15 minutes). */
  readonly spanMs?: number;
}

const MINUTE_MS = 60_000;

/**
 * Counts of events (e.g. firings of a transition) in time buckets, for rates over the recent
 * past with memory bounded by spanMs / bucketMs buckets (900 by default).
 *
 * An event at time t falls in bucket floor(t / bucketMs). A window of windowMs at `now` holds the
 * bucket of `now` and the windowMs / bucketMs - 1 buckets before it: an event at t is in it
 * exactly when floor(now / bucketMs) - windowMs / bucketMs < floor(t / bucketMs) <=
 * floor(now / bucketMs). With the defaults, an event at t = 0 is in the 1-minute window until
 * now = 59 999 and out of it from now = 60 000. Events in buckets spanMs or more older than the
 * newest bucket recorded are never counted (whatever `now`), and are dropped as they arrive;
 * all others are counted exactly, whatever the order in which they were recorded.
 *
 * Only the buckets that hold events are kept, in order: a net of a thousand transitions that
 * each fired once holds a thousand small lists, not a thousand rings of 900 buckets (which cost
 * the drain of such a net a few per cent of its CPU, in their making and their collection).
 */
export class RateWindow {
  readonly bucketMs: number;
  readonly spanMs: number;
  /** Number of buckets kept: the bound on memory. */
  readonly buckets: number;
  /** The buckets holding events, ascending from `head` (those before it are dropped, see drop). */
  private readonly bucket: number[] = [];
  private readonly counts: number[] = [];
  private head = 0;
  private events = 0;
  private last: number | undefined;
  private newest = -Infinity;

  /** RangeError unless bucketMs is a positive integer and spanMs a positive multiple of it. */
  constructor(options: RateWindowOptions = {}) {
    const bucketMs = options.bucketMs ?? 1000;
    const spanMs = options.spanMs ?? 15 * MINUTE_MS;
    checkPositiveInteger(bucketMs, 'RateWindow bucketMs');
    checkPositiveInteger(spanMs, 'RateWindow spanMs');
    if (spanMs % bucketMs !== 0) {
      throw new RangeError(`RateWindow spanMs (${spanMs}) must be a multiple of bucketMs (${bucketMs})`);
    }
    this.bucketMs = bucketMs;
    this.spanMs = spanMs;
    this.buckets = spanMs / bucketMs;
  }

  /** Records `count` events (default 1; 0 does nothing) at time `at` (ms). */
  record(at: number, count = 1): void {
    checkFinite(at, 'event time');
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new RangeError(`event count must be an integer >= 0, got ${String(count)}`);
    }
    if (count === 0) return;
    this.events += count;
    if (this.last === undefined || at > this.last) this.last = at;
    const bucket = Math.floor(at / this.bucketMs);
    if (bucket > this.newest) {
      this.newest = bucket;
      this.drop();
    }
    if (bucket <= this.newest - this.buckets) return; // older than the span: never counted
    const { bucket: b, counts } = this;
    const end = b.length;
    if (end === this.head || bucket > b[end - 1]!) {
      b.push(bucket);
      counts.push(count);
      return;
    }
    // An event at or before the latest bucket held: found by bisection (events come mostly in order).
    let lo = this.head;
    let hi = end;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (b[mid]! < bucket) lo = mid + 1;
      else hi = mid;
    }
    if (b[lo] === bucket) counts[lo]! += count;
    else {
      b.splice(lo, 0, bucket);
      counts.splice(lo, 0, count);
    }
  }

  /** Forget the buckets that fell out of the span; the lists are cut when half of them is forgotten. */
  private drop(): void {
    const { bucket: b, counts } = this;
    const limit = this.newest - this.buckets;
    while (this.head < b.length && b[this.head]! <= limit) this.head++;
    if (this.head > 32 && this.head * 2 > b.length) {
      b.splice(0, this.head);
      counts.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Events in the window of windowMs ending at `now` (see the class comment). */
  count(now: number, windowMs: number): number {
    checkFinite(now, 'now');
    if (!Number.isSafeInteger(windowMs) || windowMs <= 0 || windowMs > this.spanMs || windowMs % this.bucketMs !== 0) {
      throw new RangeError(
        `window must be a positive multiple of ${this.bucketMs} ms up to ${this.spanMs} ms, got ${String(windowMs)}`,
      );
    }
    const nowBucket = Math.floor(now / this.bucketMs);
    // Counted: buckets after both the window's start and the span's, up to now's.
    const after = Math.max(nowBucket - windowMs / this.bucketMs, this.newest - this.buckets);
    const { bucket: b, counts } = this;
    let sum = 0;
    for (let i = b.length - 1; i >= this.head; i--) {
      const bucket = b[i]!;
      if (bucket <= after) break;
      if (bucket <= nowBucket) sum += counts[i]!;
    }
    return sum;
  }

  /** Events per minute over the window of windowMs ending at `now`: count x 60 000 / windowMs. */
  perMinute(now: number, windowMs: number): number {
    return (this.count(now, windowMs) * MINUTE_MS) / windowMs;
  }

  /** Events ever recorded (including those too old to be kept). */
  get total(): number {
    return this.events;
  }

  /** Buckets in memory now, those forgotten but not yet cut included: at most about twice `buckets`. */
  get bucketsHeld(): number {
    return this.bucket.length;
  }

  /** Time of the latest event recorded, undefined before the first. */
  get lastAt(): number | undefined {
    return this.last;
  }
}

/** now - then in ms, at least 0 (a clock stepped back reads as 0); undefined when then is. */
export function timeSince(now: number, then: number | undefined): number | undefined {
  checkFinite(now, 'now');
  if (then === undefined) return undefined;
  checkFinite(then, 'time');
  return Math.max(0, now - then);
}

/**
 * Age at `now` of the oldest of `timestamps` (e.g. when the tokens waiting in a place arrived):
 * now - min(timestamps), at least 0; undefined when there are none.
 */
export function oldestAge(now: number, timestamps: Iterable<number>): number | undefined {
  checkFinite(now, 'now');
  let oldest = Infinity;
  let any = false;
  for (const t of timestamps) {
    checkFinite(t, 'timestamp');
    any = true;
    if (t < oldest) oldest = t;
  }
  return any ? Math.max(0, now - oldest) : undefined;
}

/** What TransitionStats.snapshot reports. Times in ms. */
export interface TransitionSnapshot {
  /** Firings ever recorded. */
  readonly firings: number;
  /** Firings per minute over the last minute. */
  readonly perMinute1: number;
  /** Firings per minute over the last 15 minutes (count / 15). */
  readonly perMinute15: number;
  /** Time since the last firing; undefined before the first. */
  readonly sinceLastMs: number | undefined;
  /** Mean of the recent service times; undefined when none. */
  readonly meanServiceMs: number | undefined;
  /** Nearest-rank 95th percentile of the recent service times; undefined when none. */
  readonly p95ServiceMs: number | undefined;
}

/**
 * The monitoring state of one transition: firing rates (1 and 15 minutes, per-second buckets)
 * and the last `samples` service times (default 1000).
 */
export class TransitionStats {
  readonly rate: RateWindow;
  readonly serviceTimes: SampleWindow;

  constructor(options: { samples?: number } = {}) {
    this.rate = new RateWindow();
    this.serviceTimes = new SampleWindow(options.samples ?? 1000);
  }

  /** Records a firing that ended at `now`, with its service time when known. */
  fired(now: number, serviceMs?: number): void {
    if (serviceMs !== undefined) {
      checkFinite(serviceMs, 'service time');
      if (serviceMs < 0) throw new RangeError(`service time must be >= 0, got ${serviceMs}`);
    }
    this.rate.record(now);
    if (serviceMs !== undefined) this.serviceTimes.add(serviceMs);
  }

  /** The metrics at `now`. */
  snapshot(now: number): TransitionSnapshot {
    const values = this.serviceTimes.values();
    return {
      firings: this.rate.total,
      perMinute1: this.rate.perMinute(now, MINUTE_MS),
      perMinute15: this.rate.perMinute(now, 15 * MINUTE_MS),
      sinceLastMs: timeSince(now, this.rate.lastAt),
      meanServiceMs: mean(values),
      p95ServiceMs: quantile(values, 0.95),
    };
  }
}
