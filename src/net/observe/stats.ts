/**
 * Metrics of a running net, computed without I/O: every function and method that depends on
 * time takes `now` (milliseconds, e.g. from Date.now()) from its caller and never reads a clock,
 * so histories can be replayed and tested exactly. Memory is bounded: rates are kept in fixed
 * time buckets and samples in a fixed ring.
 */

function checkFinite(value: number, what: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RangeError(`${what} must be a finite number, got ${String(value)}`);
  }
}

function checkPositiveInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${what} must be a positive integer, got ${String(value)}`);
  }
}

/** The arithmetic mean of `values`, or undefined when there are none. */
export function mean(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/**
 * The q-quantile of `values` by the nearest-rank method: the smallest value v such that at least
 * q x n of the n values are <= v, i.e. sorted[ceil(q x n) - 1] (the minimum for q = 0). No
 * interpolation: the result is always one of the values. q is read as the decimal it was written
 * as: a product q x n within 1e-9 of an integer counts as that integer (0.55 x 100 is 55, not
 * 55.00000000000001). Undefined when there are no values; RangeError unless 0 <= q <= 1.
 */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (typeof q !== 'number' || !(q >= 0 && q <= 1)) {
    throw new RangeError(`quantile must be between 0 and 1, got ${String(q)}`);
  }
  const n = values.length;
  if (n === 0) return undefined;
  const x = q * n;
  const near = Math.round(x);
  const rank = Math.abs(x - near) <= 1e-9 * Math.max(1, x) ? near : Math.ceil(x);
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.max(rank, 1) - 1] as number;
}

/** The 95th percentile by nearest rank (see quantile): sorted[ceil(0.95 x n) - 1]. */
export function p95(values: readonly number[]): number | undefined {
  return quantile(values, 0.95);
}

/**
 * The last `capacity` samples (e.g. service times in ms) in a ring: adding beyond capacity
 * forgets the oldest, so memory stays bounded however many are added.
 */
export class SampleWindow {
  readonly capacity: number;
  private readonly ring: Float64Array;
  private next = 0;
  private held = 0;
  private added = 0;

  /** RangeError unless capacity is a positive integer. */
  constructor(capacity: number) {
    checkPositiveInteger(capacity, 'SampleWindow capacity');
    this.capacity = capacity;
    this.ring = new Float64Array(capacity);
  }

  /** Adds a sample; RangeError when it is NaN or infinite. */
  add(sample: number): void {
    checkFinite(sample, 'sample');
    this.ring[this.next] = sample;
    this.next = (this.next + 1) % this.capacity;
    if (this.held < this.capacity) this.held++;
    this.added++;
  }

  /** Samples held now (at most capacity). */
  get size(): number {
    return this.held;
  }

  /** Samples ever added. */
  get total(): number {
    return this.added;
  }

  /** The samples held, oldest first. */
  values(): number[] {
    const out: number[] = [];
    const start = this.held < this.capacity ? 0 : this.next;
    for (let k = 0; k < this.held; k++) out.push(this.ring[(start + k) % this.capacity] as number);
    return out;
  }

  /** Mean of the samples held, undefined when none. */
  mean(): number | undefined {
    return mean(this.values());
  }

  /** Nearest-rank q-quantile of the samples held (see quantile), undefined when none. */
  quantile(q: number): number | undefined {
    return quantile(this.values(), q);
  }

  /** Nearest-rank 95th percentile of the samples held, undefined when none. */
  p95(): number | undefined {
    return quantile(this.values(), 0.95);
  }

  /** Forgets every sample (total is kept). */
  clear(): void {
    this.next = 0;
    this.held = 0;
  }
}

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
  private readonly index: Float64Array;
  private readonly counts: Float64Array;
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
    this.index = new Float64Array(this.buckets).fill(-Infinity);
    this.counts = new Float64Array(this.buckets);
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
    const s = this.slot(bucket);
    if (this.index[s] === bucket) {
      this.counts[s] = (this.counts[s] as number) + count;
    } else {
      // the slot holds nothing or a bucket at least spanMs older than this one
      this.index[s] = bucket;
      this.counts[s] = count;
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
    let sum = 0;
    for (let k = 0; k < windowMs / this.bucketMs; k++) {
      const bucket = nowBucket - k;
      if (bucket <= this.newest - this.buckets) break;
      const s = this.slot(bucket);
      if (this.index[s] === bucket) sum += this.counts[s] as number;
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
