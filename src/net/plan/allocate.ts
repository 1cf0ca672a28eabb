/**
 * Sharing a pool of workers among the stages (transitions) of a net, after "Planning flows like
 * Thomas Jefferson": each stage s has a score (l_s x t_s) / (w_s + 1), where l_s is its queue
 * length, t_s its mean service time and w_s the workers given to it; the allocation returned is
 * the one with the smallest sum of scores among all ways of handing out every worker.
 *
 * The article enumerates every configuration. This module gets the same answer greedily: giving
 * stage s its (w+1)-th worker lowers the sum by v_s/((w+1)(w+2)), with v_s = l_s x t_s, and that
 * gain shrinks as w grows, so handing out the workers one at a time, each to the stage whose next
 * worker gains most, reaches the minimum (the greedy rule for separable convex allocation).
 * Note the gain is v/((w+1)(w+2)), not Jefferson's (D'Hondt's) quotient v/(w+1): plain D'Hondt
 * does not always minimise the article's sum (votes 1 and 2.5 for two seats: D'Hondt gives (0, 2)
 * with sum 1.833..., the minimum is (1, 1) with 1.75).
 */

/** What the scheduler knows of one stage. */
export interface StageStats {
  /** Items waiting in the stage's input queue: a finite number >= 0 (normally an integer). */
  readonly queueLength: number;
  /**
   * Recent service times of the stage, finite numbers >= 0 in any one unit. Their mean is t_s.
   * When empty, t_s is 1, as in the article; callers should supply a start value instead (see
   * ServiceTimeEstimator.samples()).
   */
  readonly serviceTimes: readonly number[];
}

/** An exact non-negative rational num/den, den > 0. */
export interface Ratio {
  readonly num: bigint;
  readonly den: bigint;
}

/**
 * The exact value of a finite non-negative double. Scores are compared exactly so that a tie is a
 * real tie, broken by the documented rule, and never an accident of rounding.
 */
function exact(x: number): Ratio {
  if (Number.isInteger(x)) return { num: BigInt(x), den: 1n };
  // A non-integer double is below 2^53; doubling it is exact and ends within 1074 steps.
  let y = x;
  let den = 1n;
  while (!Number.isInteger(y)) {
    y *= 2;
    den *= 2n;
  }
  return { num: BigInt(y), den };
}

/** Sum of ratios whose denominators are powers of two (as exact() makes them). */
function addPow2(a: Ratio, b: Ratio): Ratio {
  if (a.den >= b.den) return { num: a.num + b.num * (a.den / b.den), den: a.den };
  return { num: b.num + a.num * (b.den / a.den), den: b.den };
}

/** `what` is called only to word the error: the scheduler weighs every service time per decision. */
function checkNumber(value: number, what: () => string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`allocateWorkers: ${what()} must be a finite number >= 0, got ${String(value)}`);
  }
}

/** Below this, doubles may be subnormal and lose relative precision: use exact arithmetic. */
const TINY = 2 ** -1000;

/** A stage's weight v = queue length x mean service time (1 when there are none). */
export interface Weight {
  /** Whether v > 0, exactly. */
  readonly positive: boolean;
  /** v in floating point, within (n + 2) ulps of the exact value; NaN where that may fail. */
  readonly approx: number;
  /** The exact v, computed when first needed. */
  exact?: Ratio;
}

/** Validates a stage and computes its weight in floating point. */
function weigh(name: string, stats: StageStats): Weight {
  checkNumber(stats.queueLength, () => `queueLength of stage ${JSON.stringify(name)}`);
  const l = stats.queueLength;
  const times = stats.serviceTimes;
  let sum = 0;
  let anyPositive = false;
  const what = () => `service time of stage ${JSON.stringify(name)}`;
  for (const t of times) {
    checkNumber(t, what);
    sum += t;
    if (t > 0) anyPositive = true;
  }
  const positive = l > 0 && (times.length === 0 || anyPositive);
  const mean = times.length === 0 ? 1 : sum / times.length;
  const approx = l * mean;
  const precise = l >= TINY && mean >= TINY && approx >= TINY && Number.isFinite(approx);
  return { positive, approx: precise ? approx : Number.NaN };
}

/** The exact v of a stage (inputs already validated). */
function exactWeight(stats: StageStats): Ratio {
  const l = exact(stats.queueLength);
  const times = stats.serviceTimes;
  if (times.length === 0) return l;
  let sum: Ratio = { num: 0n, den: 1n };
  for (const t of times) sum = addPow2(sum, exact(t));
  return { num: l.num * sum.num, den: l.den * sum.den * BigInt(times.length) };
}

/** A stage's weight v (queue length x mean service time), for ranking stages (compareWeights). */
export interface StageWeight {
  readonly stats: StageStats;
  readonly weight: Weight;
}

/** Weighs a stage (validating it as allocateWorkers does: RangeError on a negative, NaN or infinite number). */
export function weighStage(stats: StageStats, name = 'stage'): StageWeight {
  return { stats, weight: weigh(name, stats) };
}

/**
 * The sign of v_a - v_b, exactly: in floating point where the difference is beyond the rounding
 * of both (as gainsMore decides), in rational arithmetic otherwise. Every weight that is not
 * positive (an empty queue, or service times of 0) is equal to every other.
 */
export function compareWeights(a: StageWeight, b: StageWeight): number {
  const va = a.weight;
  const vb = b.weight;
  if (!va.positive || !vb.positive) return (va.positive ? 1 : 0) - (vb.positive ? 1 : 0);
  if (sameStats(a.stats, b.stats)) return 0; // the usual tie (stages not yet measured): no rational arithmetic
  if (!Number.isNaN(va.approx) && !Number.isNaN(vb.approx)) {
    const margin = (Math.max(1, a.stats.serviceTimes.length, b.stats.serviceTimes.length) + 4) * 2 ** -49;
    const diff = va.approx - vb.approx;
    if (Math.abs(diff) > margin * Math.max(va.approx, vb.approx)) return diff > 0 ? 1 : -1;
  }
  va.exact ??= exactWeight(a.stats);
  vb.exact ??= exactWeight(b.stats);
  const x = va.exact.num * vb.exact.den;
  const y = vb.exact.num * va.exact.den;
  return x === y ? 0 : x > y ? 1 : -1;
}

/** Whether two stages have the same queue length and the same service times (so the same weight). */
export function sameStats(a: StageStats, b: StageStats): boolean {
  if (a.queueLength !== b.queueLength || a.serviceTimes.length !== b.serviceTimes.length) return false;
  for (let i = 0; i < a.serviceTimes.length; i++) if (a.serviceTimes[i] !== b.serviceTimes[i]) return false;
  return true;
}

/** Orders strings by Unicode code point, as Haskell's Map orders its String keys. */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(j) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  const ra = a.length - i;
  const rb = b.length - j;
  return ra === rb ? 0 : ra < rb ? -1 : 1;
}

/**
 * Hands out `workers` workers to the stages of `stats`, minimising the sum over all stages of
 * (queueLength x mean service time) / (workers given + 1), and returns every stage of `stats`
 * with its count, in code-point order of the names.
 *
 * - Every worker is handed out: the counts add up to `workers`.
 * - Stages in `done` (they will get no more input) get 0 workers, whatever their queue holds.
 *   Names in `done` that are not in `stats` are ignored.
 * - Returns null, as the article returns Nothing, exactly when no allocation exists: `workers`
 *   > 0 and every stage of `stats` is done (or `stats` is empty). With 0 workers the answer is
 *   every stage at 0, even then. Stages with empty queues are not special: when no stage that
 *   is not done has work, all allocations score 0 and the tie rule gives every worker to the
 *   first stage that is not done.
 * - Ties (several allocations with the same, exactly computed, minimal sum) are broken as the
 *   article's enumeration order and stable sort break them: with stages sorted by name (code
 *   points), the allocation chosen is the one with the fewest workers on the last stage, then on
 *   the one before, and so on; i.e. tied workers go to the stages whose names sort first.
 * - Empty serviceTimes count as a mean of 1, as in the article. Scores are compared exactly
 *   (rational arithmetic on the inputs' binary values, used where floating point cannot
 *   decide); the article floors the mean to whole picoseconds and sums in floating point, which
 *   only matters for values that differ by less than that.
 *
 * Runs in O(workers x stages) comparisons after one pass over the service times. Throws RangeError when `workers` is
 * not a non-negative safe integer, or a queue length or service time is negative, NaN or infinite.
 */
export function allocateWorkers(
  workers: number,
  stats: ReadonlyMap<string, StageStats>,
  done: ReadonlySet<string>,
): Map<string, number> | null {
  if (!Number.isSafeInteger(workers) || workers < 0) {
    throw new RangeError(`allocateWorkers: workers must be an integer >= 0, got ${String(workers)}`);
  }
  const names = [...stats.keys()].sort(compareCodePoints);
  const all = names.map((name) => stats.get(name) as StageStats);
  const weights = names.map((name, i) => weigh(name, all[i] as StageStats));
  const counts = names.map(() => 0);
  const open: number[] = [];
  names.forEach((name, i) => {
    if (!done.has(name)) open.push(i);
  });
  if (workers > 0 && open.length === 0) return null;

  // Gains are compared in floating point when they differ by more than the rounding of both
  // weights can explain (summing n values errs by at most (n - 1) ulps, the mean, product and
  // gain add 3; the margin below is 16 times that), and exactly otherwise: ties and near ties.
  const longest = Math.max(1, ...all.map((s) => s.serviceTimes.length));
  const margin = (longest + 4) * 2 ** -49;
  const exactOf = (i: number): Ratio => {
    const w = weights[i] as Weight;
    if (w.exact === undefined) w.exact = exactWeight(all[i] as StageStats);
    return w.exact;
  };

  /** Does the next worker of stage a lower the sum strictly more than that of stage b? */
  const gainsMore = (a: number, b: number): boolean => {
    const va = weights[a] as Weight;
    const vb = weights[b] as Weight;
    if (!va.positive) return false;
    if (!vb.positive) return true;
    const wa = counts[a] as number;
    const wb = counts[b] as number;
    // (w + 1)(w + 2) is an exact integer in a double for any safe number of workers below 2^26
    const ga = va.approx * ((wb + 1) * (wb + 2));
    const gb = vb.approx * ((wa + 1) * (wa + 2));
    if (Number.isFinite(ga) && Number.isFinite(gb) && wa < 2 ** 26 && wb < 2 ** 26) {
      const diff = ga - gb;
      if (Math.abs(diff) > margin * Math.max(ga, gb)) return diff > 0;
    }
    const ea = exactOf(a);
    const eb = exactOf(b);
    const xa = BigInt(wa);
    const xb = BigInt(wb);
    return ea.num * eb.den * (xb + 1n) * (xb + 2n) > eb.num * ea.den * (xa + 1n) * (xa + 2n);
  };

  for (let handed = 0; handed < workers; handed++) {
    let best = open[0] as number;
    for (let k = 1; k < open.length; k++) {
      const i = open[k] as number;
      if (gainsMore(i, best)) best = i; // strict: on a tie the earlier name keeps the worker
    }
    counts[best] = (counts[best] as number) + 1;
  }
  return new Map(names.map((name, i) => [name, counts[i] as number]));
}
