import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocateWorkers, compareCodePoints, type StageStats } from '../../../src/net/plan/allocate.js';

/** QueueStats l ts, as the article writes it. */
function qs(queueLength: number, serviceTimes: number[]): StageStats {
  return { queueLength, serviceTimes };
}

describe('allocateWorkers: the article REPL examples', () => {
  // Transcribed from "Planning flows like Thomas Jefferson" (M = Data.Map, S = Data.Set);
  // `Just (Config (fromList xs))` is written as the list xs, `Nothing` as null.
  const cases: {
    repl: string;
    workers: number;
    stats: [string, StageStats][];
    done: string[];
    expected: [string, number][] | null;
  }[] = [
    {
      repl: 'allocateWorkers 2 (M.fromList [("A", QueueStats 3 []), ("B", QueueStats 0 [])]) S.empty',
      workers: 2,
      stats: [
        ['A', qs(3, [])],
        ['B', qs(0, [])],
      ],
      done: [],
      expected: [
        ['A', 2],
        ['B', 0],
      ],
    },
    {
      repl: 'allocateWorkers 2 (M.fromList [("A", QueueStats 1 [1,1]), ("B", QueueStats 2 [])]) S.empty',
      workers: 2,
      stats: [
        ['A', qs(1, [1, 1])],
        ['B', qs(2, [])],
      ],
      done: [],
      expected: [
        ['A', 1],
        ['B', 1],
      ],
    },
    {
      repl: 'allocateWorkers 2 (M.fromList [("A", QueueStats 0 [1,1,1]), ("B", QueueStats 2 [1])]) (S.fromList ["A"])',
      workers: 2,
      stats: [
        ['A', qs(0, [1, 1, 1])],
        ['B', qs(2, [1])],
      ],
      done: ['A'],
      expected: [
        ['A', 0],
        ['B', 2],
      ],
    },
    {
      repl:
        'allocateWorkers 2 (M.fromList [("A", QueueStats 0 [1,1,1]), ' +
        '("B", QueueStats 0 [1,1,1])]) (S.fromList ["A", "B"])',
      workers: 2,
      stats: [
        ['A', qs(0, [1, 1, 1])],
        ['B', qs(0, [1, 1, 1])],
      ],
      done: ['A', 'B'],
      expected: null,
    },
  ];

  it.each(cases)('$repl', ({ workers, stats, done, expected }) => {
    const got = allocateWorkers(workers, new Map(stats), new Set(done));
    expect(got === null ? null : [...got]).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------
// A brute force: the article's Haskell, transcribed (enumeration order and stable sort included),
// with scores as exact fractions of bigints instead of Doubles.

/** Data.List.subsequences, in its order. */
function subsequences<T>(xs: readonly T[]): T[][] {
  const nonEmpty = (ys: readonly T[]): T[][] => {
    if (ys.length === 0) return [];
    const [x, ...rest] = ys as [T, ...T[]];
    // nonEmptySubsequences (x:xs) = [x] : foldr f [] (nonEmptySubsequences xs)
    //   where f ys r = ys : (x : ys) : r
    let r: T[][] = [];
    const inner = nonEmpty(rest);
    for (let i = inner.length - 1; i >= 0; i--) {
      const zs = inner[i] as T[];
      r = [zs, [x, ...zs], ...r];
    }
    return [[x], ...r];
  };
  return [[], ...nonEmpty(xs)];
}

function possibleConfigs(cpus: number, stages: number): number[][] {
  const range: number[] = [];
  for (let c = 0; c <= cpus + stages - 1; c++) range.push(c);
  const combinations = subsequences(range).filter((s) => s.length === cpus);
  return combinations
    .map((choice) => {
      const slot = choice.map((c, i) => c - i);
      const counts: number[] = new Array<number>(stages).fill(0);
      for (const i of slot) if (i < stages) counts[i] = (counts[i] as number) + 1; // update i succ
      return counts;
    })
    .filter((counts) => counts.reduce((a, b) => a + b, 0) === cpus);
}

/** Exact fraction. */
interface Frac {
  num: bigint;
  den: bigint;
}
const add = (a: Frac, b: Frac): Frac => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
const less = (a: Frac, b: Frac): boolean => a.num * b.den < b.num * a.den;

/** The exact value of a finite double, from its bits (sign ignored: inputs are >= 0). */
function fracOfDouble(x: number): Frac {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const exponent = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = exponent === 0 ? fraction : fraction | (1n << 52n);
  const e = (exponent === 0 ? 1 : exponent) - 1075; // x = mantissa * 2^e
  return e >= 0 ? { num: mantissa << BigInt(e), den: 1n } : { num: mantissa, den: 1n << BigInt(-e) };
}

interface Stage {
  name: string;
  queueLength: Frac;
  times: Frac[]; // service times
}

function bruteForce(workers: number, stages: Stage[], done: Set<string>): Map<string, number> | null {
  const byCodePoint = (a: string, b: string): number => {
    const x = [...a].map((c) => c.codePointAt(0) as number);
    const y = [...b].map((c) => c.codePointAt(0) as number);
    for (let i = 0; i < Math.min(x.length, y.length); i++)
      if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
    return x.length - y.length;
  };
  const sorted = [...stages].sort((a, b) => byCodePoint(a.name, b.name)); // Map.keys order
  const configs = possibleConfigs(workers, sorted.length).filter(
    (cfg) => !cfg.some((w, i) => done.has((sorted[i] as Stage).name) && w > 0),
  );
  let best: number[] | undefined;
  let bestScore: Frac | undefined;
  for (const cfg of configs) {
    let score: Frac = { num: 0n, den: 1n };
    cfg.forEach((w, i) => {
      const s = sorted[i] as Stage;
      // l * t / (w + 1), t = mean service time, 1 when there is none
      const n = s.times.length;
      const total = s.times.reduce(add, { num: 0n, den: 1n });
      const mean: Frac = n === 0 ? { num: 1n, den: 1n } : { num: total.num, den: total.den * BigInt(n) };
      score = add(score, { num: s.queueLength.num * mean.num, den: s.queueLength.den * mean.den * BigInt(w + 1) });
    });
    if (bestScore === undefined || less(score, bestScore)) {
      best = cfg;
      bestScore = score;
    }
  }
  if (best === undefined) return null;
  const chosen = best;
  return new Map(sorted.map((s, i) => [s.name, chosen[i] as number]));
}

const names = ['A', 'B', 'C', 'a', 'AB', 'é', '\uffff', '😀', ''];

const arbCase = fc.record({
  workers: fc.integer({ min: 0, max: 6 }),
  per: fc.constantFrom(1, 4),
  stages: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom(...names),
      queueLength: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 })),
      ticks: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
    }),
    { selector: (s) => s.name, maxLength: 4 },
  ),
  doneMask: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
});

describe('allocateWorkers against the article enumeration', () => {
  it('the subsequence enumeration has the article order on the first example', () => {
    expect(possibleConfigs(2, 2)).toEqual([
      [2, 0],
      [1, 1],
      [0, 2],
    ]);
  });

  it('equals the brute force (ties and all) on random small cases', () => {
    fc.assert(
      fc.property(arbCase, ({ workers, per, stages, doneMask }) => {
        const done = new Set(stages.filter((_, i) => doneMask[i]).map((s) => s.name));
        done.add('not a stage'); // names in done that are not stages are ignored
        const stats = new Map(
          stages.map((s) => [
            s.name,
            qs(
              s.queueLength,
              s.ticks.map((t) => t / per),
            ),
          ]),
        );
        const got = allocateWorkers(workers, stats, done);
        const exactStages = stages.map((s) => ({
          name: s.name,
          queueLength: { num: BigInt(s.queueLength), den: 1n },
          times: s.ticks.map((t) => ({ num: BigInt(t), den: BigInt(per) })),
        }));
        const want = bruteForce(workers, exactStages, done);
        expect(got === null ? null : [...got]).toEqual(want === null ? null : [...want]);
      }),
      { numRuns: 1500 },
    );
  });

  it('equals the brute force on random doubles', () => {
    const double = fc.oneof(
      fc.double({ min: 0, max: 1e6, noNaN: true }),
      fc.constantFrom(0, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 2.3, 3, 3.3, 14.7, 1e-310, 1e300),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5 }),
        fc.uniqueArray(
          fc.record({
            name: fc.constantFrom(...names),
            queueLength: double,
            times: fc.array(double, { maxLength: 3 }),
          }),
          {
            selector: (s) => s.name,
            maxLength: 4,
          },
        ),
        (workers, stages) => {
          const stats = new Map(stages.map((s) => [s.name, qs(s.queueLength, s.times)]));
          const got = allocateWorkers(workers, stats, new Set());
          const exactStages = stages.map((s) => ({
            name: s.name,
            queueLength: fracOfDouble(s.queueLength),
            times: s.times.map(fracOfDouble),
          }));
          const want = bruteForce(workers, exactStages, new Set());
          expect(got === null ? null : [...got]).toEqual(want === null ? null : [...want]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("is not plain D'Hondt: the minimum of the sum, not the largest quotient, wins", () => {
    // votes 1 and 2.5: D'Hondt seats B twice (sum 1 + 2.5/3 = 1.833...); (1, 1) sums to 1.75
    const got = allocateWorkers(
      2,
      new Map([
        ['A', qs(1, [1])],
        ['B', qs(5, [0.5])],
      ]),
      new Set(),
    );
    expect(got && [...got]).toEqual([
      ['A', 1],
      ['B', 1],
    ]);
  });
});

describe('allocateWorkers: rules and edges', () => {
  it('breaks ties towards the names that sort first, by code point', () => {
    const tie = (a: string, b: string) =>
      allocateWorkers(
        1,
        new Map([
          [b, qs(2, [1])],
          [a, qs(2, [1])],
        ]),
        new Set(),
      );
    expect([...(tie('x', 'y') ?? [])]).toEqual([
      ['x', 1],
      ['y', 0],
    ]);
    // U+FFFF sorts before U+1F600 by code point, though not by UTF-16 unit
    expect([...(tie('\uffff', '😀') ?? [])]).toEqual([
      ['\uffff', 1],
      ['😀', 0],
    ]);
    expect(compareCodePoints('\uffff', '😀')).toBe(-1);
    expect(compareCodePoints('a', 'ab')).toBe(-1);
    expect(compareCodePoints('ab', 'ab')).toBe(0);
  });

  it('gives every worker to the first open stage when no open stage has work', () => {
    const got = allocateWorkers(
      3,
      new Map([
        ['c', qs(0, [])],
        ['b', qs(5, [2])],
        ['a', qs(0, [9])],
      ]),
      new Set(['b']),
    );
    expect(got && [...got]).toEqual([
      ['a', 3],
      ['b', 0],
      ['c', 0],
    ]);
  });

  it('gives done stages nothing, even with a queue', () => {
    const got = allocateWorkers(
      4,
      new Map([
        ['A', qs(100, [10])],
        ['B', qs(1, [1])],
      ]),
      new Set(['A']),
    );
    expect(got && [...got]).toEqual([
      ['A', 0],
      ['B', 4],
    ]);
  });

  it('returns null exactly when workers > 0 and no stage is open', () => {
    expect(allocateWorkers(1, new Map(), new Set())).toBeNull();
    expect(allocateWorkers(3, new Map([['A', qs(4, [1])]]), new Set(['A']))).toBeNull();
    expect(allocateWorkers(0, new Map(), new Set())).toEqual(new Map());
    expect([...(allocateWorkers(0, new Map([['A', qs(4, [1])]]), new Set(['A'])) ?? [])]).toEqual([['A', 0]]);
    expect([...(allocateWorkers(2, new Map([['A', qs(0, [])]]), new Set()) ?? [])]).toEqual([['A', 2]]);
  });

  it('counts empty service times as a mean of 1', () => {
    // A: 3 x 1, B: 2 x 2: the second worker goes where 3/2 beats 4/6
    const got = allocateWorkers(
      3,
      new Map([
        ['A', qs(3, [])],
        ['B', qs(2, [2])],
      ]),
      new Set(),
    );
    expect(got && [...got]).toEqual([
      ['A', 1],
      ['B', 2],
    ]);
  });

  it('fracOfDouble (the brute force oracle) is exact', () => {
    expect(fracOfDouble(0.5)).toEqual({ num: 1n << 52n, den: 1n << 53n });
    expect(fracOfDouble(3)).toEqual({ num: 3n << 51n, den: 1n << 51n });
    const tenth = fracOfDouble(0.1);
    expect(Number(tenth.num) / Number(tenth.den)).toBe(0.1);
    expect(fracOfDouble(5e-324)).toEqual({ num: 1n, den: 1n << 1074n });
    expect(fracOfDouble(2 ** 60)).toEqual({ num: 1n << 60n, den: 1n });
  });

  it('compares exactly: ties stay ties and rounding never decides a near tie', () => {
    // 0.1 x 3 and 0.3 x 1 are the same score as real numbers but not as doubles
    // (0.1 * 3 = 0.30000000000000004); exactly, 3 x 0.1 (binary) is a bit more than 0.3 (binary).
    const got = allocateWorkers(
      1,
      new Map([
        ['A', qs(1, [0.3])],
        ['B', qs(3, [0.1])],
      ]),
      new Set(),
    );
    expect(got && [...got]).toEqual([
      ['A', 0],
      ['B', 1],
    ]);
    // 7 x mean(0.7, 3.3, 2.3) is 14.700000000000001 in floating point but, exactly, less than
    // the double 14.7: floating point alone would pick A.
    const reversed = allocateWorkers(
      1,
      new Map([
        ['A', qs(7, [0.7, 3.3, 2.3])],
        ['B', qs(1, [14.7])],
      ]),
      new Set(),
    );
    expect(7 * ((0.7 + 3.3 + 2.3) / 3)).toBeGreaterThan(14.7);
    expect(reversed && [...reversed]).toEqual([
      ['A', 0],
      ['B', 1],
    ]);
    const equal = allocateWorkers(
      1,
      new Map([
        ['A', qs(1, [0.5])],
        ['B', qs(2, [0.25])],
      ]),
      new Set(),
    );
    expect(equal && [...equal]).toEqual([
      ['A', 1],
      ['B', 0],
    ]);
  });

  it('rejects bad numbers with a RangeError', () => {
    const one = (s: StageStats) => new Map([['A', s]]);
    for (const w of [-1, 1.5, Number.NaN, Infinity]) {
      expect(() => allocateWorkers(w, one(qs(1, [1])), new Set())).toThrow(RangeError);
    }
    for (const l of [-1, Number.NaN, Infinity, -Infinity]) {
      expect(() => allocateWorkers(1, one(qs(l, [1])), new Set())).toThrow(RangeError);
    }
    for (const t of [-0.5, Number.NaN, Infinity]) {
      expect(() => allocateWorkers(1, one(qs(1, [1, t])), new Set())).toThrow(RangeError);
    }
    expect(() => allocateWorkers(1, one(qs(Number.NaN, [1])), new Set())).toThrow(/queueLength of stage "A"/);
  });

  it('handles 50 stages and 64 workers, reaching the minimum', () => {
    // Deterministic pseudo-random stages (a small LCG), some done, some idle.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const stats = new Map<string, StageStats>();
    const done = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const name = `t${String(i).padStart(2, '0')}`;
      const times = Array.from({ length: rand(20) }, () => 1 + rand(5000));
      stats.set(name, qs(rand(4) === 0 ? 0 : rand(1000), times));
      if (rand(10) === 0) done.add(name);
    }
    const got = allocateWorkers(64, stats, done);
    expect(got).not.toBeNull();
    const alloc = got as Map<string, number>;
    expect([...alloc.values()].reduce((a, b) => a + b, 0)).toBe(64);
    for (const name of done) expect(alloc.get(name)).toBe(0);
    // Optimal iff no single worker moved between open stages lowers the sum (convexity):
    // taking one from a costs v_a/(w_a(w_a+1)), giving one to b saves v_b/((w_b+1)(w_b+2)).
    const v = (name: string): Frac => {
      const s = stats.get(name) as StageStats;
      const n = s.serviceTimes.length;
      if (n === 0) return { num: BigInt(s.queueLength), den: 1n };
      return { num: BigInt(s.queueLength * s.serviceTimes.reduce((a, b) => a + b, 0)), den: BigInt(n) };
    };
    const open = [...alloc.keys()].filter((n) => !done.has(n));
    for (const a of open) {
      const wa = BigInt(alloc.get(a) as number);
      if (wa === 0n) continue;
      for (const b of open) {
        if (a === b) continue;
        const wb = BigInt(alloc.get(b) as number);
        const cost = { num: v(a).num, den: v(a).den * wa * (wa + 1n) };
        const saving = { num: v(b).num, den: v(b).den * (wb + 1n) * (wb + 2n) };
        expect(less(cost, saving)).toBe(false);
      }
    }
  });
});
