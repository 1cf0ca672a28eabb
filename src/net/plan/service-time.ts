/**
 * The scheduler's estimate of a stage's service time: a moving mean over the last N service
 * times, and a start value until the first one is known (the allocator would otherwise count an
 * unknown stage as taking 1 unit per item).
 */
import { SampleWindow } from './samples.js';

function checkStart(start: number): void {
  if (typeof start !== 'number' || !Number.isFinite(start) || start < 0) {
    throw new RangeError(`start value must be a finite number >= 0, got ${String(start)}`);
  }
}

/**
 * Mean of the last `window` of `values`, or `start` when `values` is empty. RangeError unless
 * window is a positive integer, start a finite number >= 0 and so are the values averaged.
 */
export function movingMean(values: readonly number[], window: number, start: number): number {
  if (!Number.isSafeInteger(window) || window <= 0) {
    throw new RangeError(`window must be a positive integer, got ${String(window)}`);
  }
  checkStart(start);
  if (values.length === 0) return start;
  const recent = values.slice(-window);
  let sum = 0;
  for (const v of recent) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(`service time must be a finite number >= 0, got ${String(v)}`);
    }
    sum += v;
  }
  return sum / recent.length;
}

/** How many recent service times the runner and the simulation average (the same, so they agree). */
export const SERVICE_WINDOW = 20;

/** Moving mean of a stage's last `window` service times, `start` until there is one. */
export class ServiceTimeEstimator {
  readonly start: number;
  private readonly recent: SampleWindow;

  /** RangeError unless window is a positive integer and start a finite number >= 0. */
  constructor(window: number, start: number) {
    checkStart(start);
    this.start = start;
    this.recent = new SampleWindow(window);
  }

  /** Records one service time; RangeError when it is negative, NaN or infinite. */
  record(serviceTime: number): void {
    if (typeof serviceTime !== 'number' || serviceTime < 0) {
      throw new RangeError(`service time must be a finite number >= 0, got ${String(serviceTime)}`);
    }
    this.recent.add(serviceTime);
  }

  /** Service times held (at most window). */
  get count(): number {
    return this.recent.size;
  }

  /** The window size N. */
  get window(): number {
    return this.recent.capacity;
  }

  /** Mean of the last N service times, or the start value before the first. */
  mean(): number {
    return this.recent.mean() ?? this.start;
  }

  /**
   * The service times to hand to allocateWorkers: the last N, oldest first, or [start] before
   * the first, so that the allocator never falls back on its default of 1.
   */
  samples(): number[] {
    return this.recent.size === 0 ? [this.start] : this.recent.values();
  }
}
