/** What a run keeps per transition (src/net/run/monitor.ts): rates, p95 and failures on synthetic histories. */
import { describe, expect, test } from 'vitest';
import { FAILING_FOR_MS, isFailing, TransitionMonitor } from '../../../src/net/run/monitor.js';

const T0 = 1_700_000_000_000; // a whole second

describe('TransitionMonitor', () => {
  test('firing rates over 1 and 15 minutes follow the history', () => {
    const m = new TransitionMonitor();
    // One firing a second for 2 minutes, then silence.
    for (let s = 0; s < 120; s++) m.fired(T0 + s * 1000, 10);
    let r = m.snapshot(T0 + 119_500);
    expect(r.perMinute1).toBe(60);
    expect(r.perMinute15).toBe(120 / 15);
    r = m.snapshot(T0 + 150_000); // the last minute holds seconds 91..119
    expect(r.perMinute1).toBe(29);
    r = m.snapshot(T0 + 180_000 + 120_000); // 3 minutes after the last one
    expect(r.perMinute1).toBe(0);
    expect(r.perMinute15).toBe(8);
    r = m.snapshot(T0 + 16 * 60_000 + 120_000); // beyond 15 minutes
    expect(r.perMinute15).toBe(0);
  });

  test('mean and nearest-rank p95 of the service times', () => {
    const m = new TransitionMonitor();
    expect(m.snapshot(T0).meanServiceMs).toBeUndefined();
    expect(m.snapshot(T0).p95ServiceMs).toBeUndefined();
    for (let i = 1; i <= 100; i++) m.fired(T0 + i, i * 10); // 10, 20, ... 1000 ms
    const r = m.snapshot(T0 + 200);
    expect(r.meanServiceMs).toBe(505);
    expect(r.p95ServiceMs).toBe(950);
    // A single slow outlier among many fast ones moves the mean, not the p95.
    const n = new TransitionMonitor();
    for (let i = 0; i < 99; i++) n.fired(T0, 100);
    n.fired(T0, 100_000);
    expect(n.snapshot(T0).p95ServiceMs).toBe(100);
    expect(n.snapshot(T0).meanServiceMs).toBeCloseTo(1099, 6);
  });

  test('failures: their rate and the last one, stderr trimmed to its end', () => {
    const m = new TransitionMonitor();
    for (let i = 0; i < 30; i++)
      m.failed(T0 + i * 1000, { key: `k${i}`, reason: 'exited with status 1', stderrTail: 'x' });
    m.failed(T0 + 30_000, { key: 'last', reason: 'timed out', stderrTail: `${'a'.repeat(5000)}END` });
    const r = m.snapshot(T0 + 30_000);
    expect(r.failedPerMinute15).toBeCloseTo(31 / 15, 10);
    expect(r.perMinute1).toBe(0);
    expect(m.lastFailure).toMatchObject({ at: T0 + 30_000, key: 'last', reason: 'timed out' });
    expect(m.lastFailure!.stderrTail.length).toBe(2048);
    expect(m.lastFailure!.stderrTail.endsWith('END')).toBe(true);
  });

  test('failing: stopped, or an attempt failed in the last 5 minutes', () => {
    expect(isFailing({}, T0)).toBe(false);
    expect(isFailing({ stopped: { reason: 'x' } }, T0)).toBe(true);
    expect(isFailing({ lastFailure: { at: T0 } }, T0 + FAILING_FOR_MS - 1)).toBe(true);
    expect(isFailing({ lastFailure: { at: T0 } }, T0 + FAILING_FOR_MS)).toBe(false);
    expect(isFailing({ lastFailure: { at: T0 + 5000 } }, T0)).toBe(true); // a clock stepped back
  });
});
