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
 * past with memory fixed at spanMs / bucketMs buckets (900 by default).
 *
 * An event at time t falls in bucket floor(t / bucketMs). A window of windowMs at `now` holds the
 * bucket of `now` and the windowMs / bucketMs - 1 buckets before it: an event at t is in it
 * exactly when floor(now / bucketMs) - windowMs / bucketMs < floor(t / bucketMs) <=
 * floor(now / bucketMs). With the defaults, an event at t = 0 is in the 1-minute window until
 * now = 59 999 and out of it from now = 60 000. Events in buckets spanMs or more older than the
 * newest bucket recorded are never counted (whatever `now`), and are dropped as they arrive;
 * all others are counted exactly, whatever the order in which they were recorded.
 */
export class RateWindow {
  readonly bucketMs: number;
  readonly spanMs: number;
  /** Number of buckets kept: the bound on memory. */
  readonly buckets: number;
  /** Made at the first event: a net's idle transitions (thousands, maybe) hold none. */
  private index: Float64Array | undefined;
  private counts: Float64Array | undefined;
  private events = 0;
  private last: number | undefined;
  private newest = -Infinity;
  /** The oldest bucket recorded: count() looks at no bucket before it (nor after the newest). */
  private oldest = Infinity;

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

  private slot(bucket: number): number {
    return ((bucket % this.buckets) + this.buckets) % this.buckets;
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
    if (bucket > this.newest) this.newest = bucket;
    if (bucket <= this.newest - this.buckets) return; // older than the span: never counted
    if (bucket < this.oldest) this.oldest = bucket;
    const index = (this.index ??= new Float64Array(this.buckets).fill(-Infinity));
    const counts = (this.counts ??= new Float64Array(this.buckets));
    const s = this.slot(bucket);
    if (index[s] === bucket) {
      counts[s] = (counts[s] as number) + count;
    } else {
      // the slot holds nothing or a bucket at least spanMs older than this one
      index[s] = bucket;
      counts[s] = count;
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
    const index = this.index;
    const counts = this.counts;
    if (!index || !counts) return 0; // nothing recorded
    const nowBucket = Math.floor(now / this.bucketMs);
    // Only the buckets between the oldest and the newest recorded can hold events: a transition that
    // fired a few times is a few looks, not 900 (a net's live state counts each transition's rates).
    const from = Math.max(0, nowBucket - this.newest);
    const to = Math.min(windowMs / this.bucketMs, nowBucket - this.oldest + 1);
    let sum = 0;
    for (let k = from; k < to; k++) {
      const bucket = nowBucket - k;
      if (bucket <= this.newest - this.buckets) break;
      const s = this.slot(bucket);
      if (index[s] === bucket) sum += counts[s] as number;
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
