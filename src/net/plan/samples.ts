/**
 * Samples and their statistics, computed without I/O or a clock: the mean, nearest-rank
 * quantiles, and a bounded ring of the last samples (service times), which the planner's
 * estimates (service-time.ts) and the run's metrics (run/stats.ts) both use.
 */

export function checkFinite(value: number, what: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RangeError(`${what} must be a finite number, got ${String(value)}`);
  }
}

export function checkPositiveInteger(value: number, what: string): void {
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
  /**
   * Made at the first sample, and grown by doubling up to capacity: a net's idle transitions
   * (thousands, maybe) hold none, and one that fired a few times holds a few, not 1,000.
   */
  private ring: Float64Array | undefined;
  private next = 0;
  private held = 0;
  private added = 0;

  /** RangeError unless capacity is a positive integer. */
  constructor(capacity: number) {
    checkPositiveInteger(capacity, 'SampleWindow capacity');
    this.capacity = capacity;
  }

  /** Adds a sample; RangeError when it is NaN or infinite. */
  add(sample: number): void {
    checkFinite(sample, 'sample');
    let ring = this.ring;
    if (ring === undefined || (this.next === ring.length && ring.length < this.capacity)) {
      // Not full yet, so the samples lie in order from 0: the larger ring starts with them.
      const larger = new Float64Array(Math.min(this.capacity, Math.max(8, 2 * (ring?.length ?? 0))));
      if (ring) larger.set(ring);
      this.ring = ring = larger;
    }
    ring[this.next] = sample;
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
    for (let k = 0; k < this.held; k++) out.push(this.ring![(start + k) % this.capacity] as number);
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
