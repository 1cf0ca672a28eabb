import { describe, expect, it } from 'vitest';
import {
  LONG_RUN_INTERRUPT_BUDGET,
  longRunFlags,
  NET_RUN_HEAP_GROWING_PERCENT,
} from '../../src/cli/runtime/v8-tuning.js';

const BUDGET = `--interrupt-budget=${LONG_RUN_INTERRUPT_BUDGET}`;
const HEAP = `--heap-growing-percent=${NET_RUN_HEAP_GROWING_PERCENT}`;

describe('longRunFlags', () => {
  it("raises the interrupt budget for a run of many jobs, and a net run's heap grows more slowly too", () => {
    expect(longRunFlags('jobs', [], undefined)).toEqual([BUDGET]);
    expect(longRunFlags('net', [], undefined)).toEqual([BUDGET, HEAP]);
    expect(longRunFlags('net', ['--enable-source-maps'], '--max-old-space-size=4096')).toEqual([BUDGET, HEAP]);
  });

  it("leaves a user's own setting alone, on node's command line or in NODE_OPTIONS", () => {
    expect(longRunFlags('net', ['--heap-growing-percent=300'], undefined)).toEqual([BUDGET]);
    expect(longRunFlags('net', ['--heap_growing_percent=10'], undefined)).toEqual([BUDGET]);
    expect(longRunFlags('net', [], '--trace-gc --heap-growing-percent=20')).toEqual([BUDGET]);
    expect(longRunFlags('jobs', ['--interrupt-budget=1000'], undefined)).toEqual([]);
    expect(longRunFlags('net', [], '--interrupt_budget=1000 --heap-growing-percent=20')).toEqual([]);
  });

  it('sets none with FSPL_V8_TUNING=0 (the build makes its code cache so), and any other value changes nothing', () => {
    expect(longRunFlags('net', [], undefined, '0')).toEqual([]);
    expect(longRunFlags('jobs', [], undefined, '0')).toEqual([]);
    expect(longRunFlags('net', [], undefined, '1')).toEqual([BUDGET, HEAP]);
    expect(longRunFlags('net', [], undefined, '')).toEqual([BUDGET, HEAP]);
  });

  it('takes another flag that begins with the same words for another flag', () => {
    expect(longRunFlags('jobs', ['--interrupt-budget-for-feedback-allocation=10'], undefined)).toEqual([BUDGET]);
  });

  it('is a growing factor and a budget, never a limit on the heap', () => {
    for (const flag of longRunFlags('net', [], undefined)) expect(flag).not.toMatch(/max|limit|size/);
  });
});
