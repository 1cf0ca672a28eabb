import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  mean,
  oldestAge,
  p95,
  quantile,
  RateWindow,
  SampleWindow,
  TransitionStats,
  timeSince,
} from '../../../src/net/run/stats.js';

const MIN = 60_000;

describe('quantile and p95 (nearest rank)', () => {
  const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  it('gives sorted[ceil(q n) - 1] on known arrays', () => {
    expect(p95(oneTo(100))).toBe(95);
    expect(p95(oneTo(20))).toBe(19); // 0.95 x 20 = 19
    expect(p95(oneTo(21))).toBe(20); // ceil(19.95) = 20
    expect(p95(oneTo(10))).toBe(10); // ceil(9.5) = 10
    expect(p95([7])).toBe(7);
    expect(p95([3, 1, 2])).toBe(3);
    expect(p95([5, 5, 5, 1])).toBe(5);
    expect(p95([])).toBeUndefined();
    // unsorted input, negative and fractional values
    expect(p95([0.5, -2, 10, 3.25, 1, 2, 8, 9, 4, 7, 6, 5, 11, 12, 13, 14, 15, 16, 17, 18])).toBe(17);
  });

  it('reads q as a decimal (0.55 x 100 is rank 55)', () => {
    expect(quantile(oneTo(100), 0.55)).toBe(55);
    expect(quantile(oneTo(100), 0.29)).toBe(29); // 0.29 x 100 = 28.999999999999996
    expect(quantile(oneTo(100), 0.555)).toBe(56);
    expect(quantile(oneTo(4), 0)).toBe(1);
    expect(quantile(oneTo(4), 1)).toBe(4);
    expect(quantile(oneTo(4), 0.5)).toBe(2);
    expect(quantile(oneTo(4), 0.51)).toBe(3);
  });

  it('is the nearest-rank definition on random arrays', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 1, maxLength: 200 }), (xs) => {
        const got = p95(xs) as number;
        // at least 95% of the values are <= got, and fewer than 95% are < got
        const le = xs.filter((x) => x <= got).length;
        const lt = xs.filter((x) => x < got).length;
        expect(le * 100).toBeGreaterThanOrEqual(95 * xs.length);
        expect(lt * 100).toBeLessThan(95 * xs.length);
      }),
    );
  });

  it('rejects q outside [0, 1]', () => {
    for (const q of [-0.1, 1.1, Number.NaN]) expect(() => quantile([1], q)).toThrow(RangeError);
  });

  it('mean', () => {
    expect(mean([1, 2, 3, 4])).toBe(2.5);
    expect(mean([])).toBeUndefined();
  });
});

describe('SampleWindow', () => {
  it('keeps the last capacity samples, oldest first', () => {
    const w = new SampleWindow(3);
    expect(w.values()).toEqual([]);
    expect(w.mean()).toBeUndefined();
    expect(w.p95()).toBeUndefined();
    w.add(1);
    w.add(2);
    expect(w.values()).toEqual([1, 2]);
    w.add(3);
    w.add(4);
    expect(w.values()).toEqual([2, 3, 4]);
    expect(w.size).toBe(3);
    expect(w.total).toBe(4);
    expect(w.mean()).toBe(3);
    expect(w.p95()).toBe(4);
    expect(w.quantile(0.5)).toBe(3);
    w.clear();
    expect(w.values()).toEqual([]);
    expect(w.total).toBe(4);
  });

  it('stays bounded after 1e6 samples', () => {
    const w = new SampleWindow(1000);
    for (let i = 0; i < 1_000_000; i++) w.add(i % 2000);
    expect(w.size).toBe(1000);
    expect(w.total).toBe(1_000_000);
    const values = w.values();
    expect(values.length).toBe(1000);
    expect(values[0]).toBe(1000);
    expect(values[999]).toBe(1999);
    expect(w.mean()).toBe(1499.5);
    expect(w.p95()).toBe(1949); // ceil(950) = 950th of 1000..1999
  });

  it('keeps the last capacity samples however many were added (its ring grows as they come)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 70 }),
        fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 200 }),
        (cap, xs) => {
          const w = new SampleWindow(cap);
          xs.forEach((x, n) => {
            w.add(x);
            expect(w.values()).toEqual(xs.slice(Math.max(0, n + 1 - cap), n + 1));
          });
          expect(w.size).toBe(Math.min(cap, xs.length));
        },
      ),
    );
  });

  it('rejects bad input', () => {
    expect(() => new SampleWindow(0)).toThrow(RangeError);
    expect(() => new SampleWindow(1.5)).toThrow(RangeError);
    const w = new SampleWindow(2);
    for (const x of [Number.NaN, Infinity]) expect(() => w.add(x)).toThrow(RangeError);
    expect(w.size).toBe(0);
  });
});

describe('RateWindow', () => {
  it('counts an event in a window exactly while its bucket is within the window', () => {
    const r = new RateWindow();
    r.record(0);
    expect(r.count(0, MIN)).toBe(1);
    expect(r.count(59_999, MIN)).toBe(1);
    expect(r.count(60_000, MIN)).toBe(0);
    expect(r.count(15 * MIN - 1, 15 * MIN)).toBe(1);
    expect(r.count(15 * MIN, 15 * MIN)).toBe(0);
    // an event late in its second counts from the start of that second
    const s = new RateWindow();
    s.record(999);
    expect(s.count(59_999, MIN)).toBe(1);
    expect(s.count(60_000, MIN)).toBe(0);
    // events after now are not counted, unless in now's bucket
    s.record(5_500);
    expect(s.count(5_000, MIN)).toBe(2);
    expect(s.count(4_999, MIN)).toBe(1);
  });

  it('gives firings per minute over 1 and 15 minutes', () => {
    const r = new RateWindow();
    // one event every 2 s for 20 minutes: t = 0, 2000, ..., 1_198_000
    for (let t = 0; t < 20 * MIN; t += 2000) r.record(t);
    const now = 20 * MIN - 1; // bucket 1199
    expect(r.count(now, MIN)).toBe(30); // buckets 1140..1199, even ones
    expect(r.perMinute(now, MIN)).toBe(30);
    expect(r.count(now, 15 * MIN)).toBe(450);
    expect(r.perMinute(now, 15 * MIN)).toBe(30);
    expect(r.total).toBe(600);
    expect(r.lastAt).toBe(1_198_000);
    // ten minutes of silence
    expect(r.perMinute(now + 10 * MIN, MIN)).toBe(0);
    expect(r.perMinute(now + 10 * MIN, 15 * MIN)).toBe(150 / 15);
  });

  it('matches a count over all timestamps on random histories', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 40 * MIN }), { maxLength: 300 }),
        fc.integer({ min: 0, max: 45 * MIN }),
        fc.constantFrom(1000, 60_000, 15 * MIN),
        (times, now, windowMs) => {
          const r = new RateWindow();
          for (const t of times) r.record(t); // in any order
          const sorted = [...times].sort((a, b) => a - b);
          const nowB = Math.floor(now / 1000);
          const k = windowMs / 1000;
          const newest = sorted.length ? Math.floor((sorted[sorted.length - 1] as number) / 1000) : -Infinity;
          const want = sorted.filter((t) => {
            const b = Math.floor(t / 1000);
            return b > nowB - k && b <= nowB && b > newest - 900; // kept: within the span of the newest
          }).length;
          expect(r.count(now, windowMs)).toBe(want);
        },
      ),
    );
  });

  it('takes events out of order within the span, drops older ones', () => {
    const r = new RateWindow();
    r.record(20 * MIN);
    r.record(5 * MIN); // 15 minutes older than the newest: dropped
    r.record(19 * MIN + 30_000);
    r.record(5 * MIN + 1000); // within the span
    expect(r.count(20 * MIN, 15 * MIN)).toBe(3);
    expect(r.count(20 * MIN, MIN)).toBe(2);
    expect(r.count(5 * MIN, MIN)).toBe(0); // not even in a window ending back then
    expect(r.count(5 * MIN + 1000, MIN)).toBe(1);
    expect(r.total).toBe(4);
  });

  it('keeps bounded memory after 1e6 events', () => {
    const r = new RateWindow();
    expect(r.buckets).toBe(900);
    // 1e6 events 11 ms apart: t = 0 ... 10 999 989, about 3 hours, far beyond the 15 minutes kept
    for (let i = 0; i < 1_000_000; i++) r.record(i * 11);
    const last = 999_999 * 11;
    expect(r.total).toBe(1_000_000);
    expect(r.lastAt).toBe(last);
    expect(r.buckets).toBe(900);
    // events from the first multiple of 11 in the window's first bucket up to the last one
    const inWindow = (from: number) => (last - Math.ceil(from / 11) * 11) / 11 + 1;
    expect(r.count(last, MIN)).toBe(inWindow(10_940_000)); // buckets 10940..10999
    expect(r.count(last, 15 * MIN)).toBe(inWindow(10_100_000)); // buckets 10100..10999
    expect(r.count(last, MIN)).toBe(5454);
    expect(r.bucketsHeld).toBeLessThanOrEqual(2 * r.buckets);
  });

  it('holds only the buckets that have events', () => {
    const r = new RateWindow();
    expect(r.bucketsHeld).toBe(0);
    r.record(5000);
    r.record(5500, 2);
    r.record(9000);
    expect(r.bucketsHeld).toBe(2);
    r.record(7000); // between the two: put in its place
    expect(r.bucketsHeld).toBe(3);
    expect(r.count(9000, MIN)).toBe(5);
    expect(r.count(7999, MIN)).toBe(4);
  });

  it('supports other bucket widths and rejects bad options', () => {
    const r = new RateWindow({ bucketMs: 100, spanMs: 1000 });
    expect(r.buckets).toBe(10);
    r.record(50);
    r.record(950);
    expect(r.count(999, 1000)).toBe(2);
    expect(r.count(1000, 1000)).toBe(1);
    expect(r.count(1000, 100)).toBe(0);
    expect(() => new RateWindow({ bucketMs: 0 })).toThrow(RangeError);
    expect(() => new RateWindow({ bucketMs: 7, spanMs: 100 })).toThrow(RangeError);
    expect(() => r.count(0, 1100)).toThrow(RangeError);
    expect(() => r.count(0, 150)).toThrow(RangeError);
    expect(() => r.count(Number.NaN, 100)).toThrow(RangeError);
    expect(() => r.record(Infinity)).toThrow(RangeError);
    expect(() => r.record(0, -1)).toThrow(RangeError);
  });

  it('handles times before the epoch', () => {
    const r = new RateWindow();
    r.record(-1); // bucket -1
    expect(r.count(-1, 1000)).toBe(1);
    expect(r.count(0, 1000)).toBe(0);
    expect(r.count(0, MIN)).toBe(1);
  });
});

describe('timeSince and oldestAge', () => {
  it('timeSince', () => {
    expect(timeSince(5000, 1000)).toBe(4000);
    expect(timeSince(5000, undefined)).toBeUndefined();
    expect(timeSince(1000, 5000)).toBe(0);
    expect(() => timeSince(Number.NaN, 1)).toThrow(RangeError);
  });

  it('oldestAge', () => {
    expect(oldestAge(10_000, [9000, 3000, 7000])).toBe(7000);
    expect(oldestAge(10_000, new Set([9500]))).toBe(500);
    expect(oldestAge(10_000, [])).toBeUndefined();
    expect(oldestAge(10_000, [20_000])).toBe(0);
    expect(() => oldestAge(10_000, [Number.NaN])).toThrow(RangeError);
  });
});

describe('TransitionStats', () => {
  it('reports rates, time since the last firing and service times', () => {
    const s = new TransitionStats({ samples: 100 });
    const empty = s.snapshot(0);
    expect(empty).toEqual({
      firings: 0,
      perMinute1: 0,
      perMinute15: 0,
      sinceLastMs: undefined,
      meanServiceMs: undefined,
      p95ServiceMs: undefined,
    });
    for (let i = 1; i <= 120; i++) s.fired(i * 5000, i); // every 5 s for 10 minutes
    s.fired(600_500); // service time unknown
    const snap = s.snapshot(601_000);
    expect(snap.firings).toBe(121);
    expect(snap.perMinute1).toBe(13); // buckets 542..601: t = 545 000 ... 600 000 (12) + 600 500
    expect(snap.perMinute15).toBe(121 / 15);
    expect(snap.sinceLastMs).toBe(500);
    expect(snap.meanServiceMs).toBe(70.5); // samples 21..120
    expect(snap.p95ServiceMs).toBe(115);
    expect(() => s.fired(1, -1)).toThrow(RangeError);
    expect(s.snapshot(601_000).firings).toBe(121);
  });
});
