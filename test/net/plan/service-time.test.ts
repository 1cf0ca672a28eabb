import { describe, expect, it } from 'vitest';
import { allocateWorkers } from '../../../src/net/plan/allocate.js';
import { movingMean, ServiceTimeEstimator } from '../../../src/net/plan/service-time.js';

describe('movingMean', () => {
  it('averages the last window values, or gives the start value', () => {
    expect(movingMean([], 3, 250)).toBe(250);
    expect(movingMean([4], 3, 250)).toBe(4);
    expect(movingMean([1, 2, 3, 4, 5], 3, 250)).toBe(4);
    expect(movingMean([1, 2], 5, 0)).toBe(1.5);
  });

  it('rejects bad arguments', () => {
    expect(() => movingMean([1], 0, 1)).toThrow(RangeError);
    expect(() => movingMean([1], 2.5, 1)).toThrow(RangeError);
    expect(() => movingMean([1], 2, -1)).toThrow(RangeError);
    expect(() => movingMean([1], 2, Number.NaN)).toThrow(RangeError);
    expect(() => movingMean([1, Number.NaN], 2, 1)).toThrow(RangeError);
    expect(() => movingMean([-3, 1], 2, 1)).toThrow(RangeError);
    expect(movingMean([-3, 1], 1, 1)).toBe(1); // only the window is looked at
  });
});

describe('ServiceTimeEstimator', () => {
  it('gives the start value until a service time is known, then a moving mean', () => {
    const e = new ServiceTimeEstimator(3, 100);
    expect(e.mean()).toBe(100);
    expect(e.samples()).toEqual([100]);
    expect(e.count).toBe(0);
    expect(e.window).toBe(3);
    e.record(10);
    expect(e.mean()).toBe(10);
    expect(e.samples()).toEqual([10]);
    e.record(20);
    e.record(30);
    e.record(40);
    expect(e.mean()).toBe(30);
    expect(e.samples()).toEqual([20, 30, 40]);
    expect(e.count).toBe(3);
  });

  it('feeds allocateWorkers so that an unmeasured stage counts at its start value', () => {
    const fast = new ServiceTimeEstimator(10, 1);
    const unknown = new ServiceTimeEstimator(10, 1000);
    fast.record(1);
    const stats = new Map([
      ['fast', { queueLength: 10, serviceTimes: fast.samples() }],
      ['new', { queueLength: 1, serviceTimes: unknown.samples() }],
    ]);
    // 1 x 1000 outweighs 10 x 1: the worker goes to the unmeasured stage
    expect([...(allocateWorkers(1, stats, new Set()) ?? [])]).toEqual([
      ['fast', 0],
      ['new', 1],
    ]);
  });

  it('rejects bad arguments', () => {
    expect(() => new ServiceTimeEstimator(0, 1)).toThrow(RangeError);
    expect(() => new ServiceTimeEstimator(2, -1)).toThrow(RangeError);
    expect(() => new ServiceTimeEstimator(2, Infinity)).toThrow(RangeError);
    const e = new ServiceTimeEstimator(2, 1);
    for (const x of [-1, Number.NaN, Infinity]) expect(() => e.record(x)).toThrow(RangeError);
    expect(e.count).toBe(0);
  });
});
