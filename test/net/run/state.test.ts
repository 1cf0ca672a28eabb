import { afterEach, describe, expect, it, vi } from 'vitest';
import { Throttled } from '../../../src/net/run/state.js';

describe('Throttled', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A Throttled whose task takes `takes` ms of the (fake) clock; returns it and the times it ran at. */
  function throttled(everyMs: number, takes: number, share?: number) {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout', 'performance'] });
    const ran: number[] = [];
    const t = new Throttled(
      everyMs,
      (now) => {
        ran.push(now - start);
        vi.advanceTimersByTime(takes);
      },
      share,
    );
    const start = Date.now();
    return { t, ran, at: () => Date.now() - start };
  }

  it('runs at once, then at most every everyMs, and once more after the last ask', () => {
    const { t, ran } = throttled(500, 0);
    t.run();
    vi.advanceTimersByTime(100);
    t.run();
    t.run();
    expect(ran).toEqual([0]);
    vi.advanceTimersByTime(400);
    expect(ran).toEqual([0, 500]);
    vi.advanceTimersByTime(5000);
    expect(ran).toEqual([0, 500]); // nothing asked since
  });

  it('waits longer after a run that took more than its share of the time', () => {
    const { t, ran } = throttled(500, 20, 0.01); // 20 ms at 1 %: 2 s
    t.run();
    vi.advanceTimersByTime(600);
    t.run();
    expect(ran).toEqual([0]);
    vi.advanceTimersByTime(1400);
    expect(ran).toEqual([0, 2000]);
  });

  it('waits at most 20 times everyMs, however long a run took', () => {
    const { t, ran } = throttled(100, 1000, 0.01);
    t.run();
    t.run();
    vi.advanceTimersByTime(2000);
    expect(ran).toEqual([0, 2000]);
  });

  it('runs when forced, whatever the wait', () => {
    const { t, ran, at } = throttled(500, 20, 0.01);
    t.run();
    vi.advanceTimersByTime(10);
    t.run(true);
    expect(ran).toEqual([0, at() - 20]);
  });
});
