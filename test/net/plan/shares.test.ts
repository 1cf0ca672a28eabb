/**
 * The pool's shares kept stage by stage (src/net/plan/shares.ts): the same pick as allocateWorkers
 * over every stage with work, named by their place in the round-robin order, and the ready stage
 * furthest below its share.
 */
import { describe, expect, it } from 'vitest';
import { allocateWorkers, type StageStats } from '../../../src/net/plan/allocate.js';
import { Shares, type StageState } from '../../../src/net/plan/shares.js';
import { seeded } from '../helpers.js';

/** The pick by its definition: allocateWorkers over all stages, then the largest deficit, ties in round-robin order. */
function reference(stages: Array<StageState | undefined>, rotation: number, workers: number): number | undefined {
  const n = stages.length;
  const place = (i: number) => (i - rotation + n) % n;
  const stats = new Map<string, StageStats>();
  stages.forEach((s, i) => s && stats.set(String(place(i)).padStart(4, '0'), s.stats));
  const alloc = stats.size > 0 && workers > 0 ? allocateWorkers(workers, stats, new Set())! : new Map<string, number>();
  let pick: number | undefined;
  let best = -Infinity;
  for (let k = 0; k < n; k++) {
    const i = (rotation + k) % n;
    const s = stages[i];
    if (!s?.ready) continue;
    const deficit = (alloc.get(String(place(i)).padStart(4, '0')) ?? 0) - s.running;
    if (deficit > best) {
      best = deficit;
      pick = i;
    }
  }
  return pick;
}

describe('Shares', () => {
  it('picks as allocateWorkers over every stage does, through random changes (property)', () => {
    const rnd = seeded(99);
    for (let round = 0; round < 300; round++) {
      const n = 1 + rnd(25);
      const stages: Array<StageState | undefined> = Array.from({ length: n }, () => undefined);
      const shares = new Shares();
      for (let step = 0; step < 30; step++) {
        for (let k = 1 + rnd(4); k > 0; k--) {
          const i = rnd(n);
          // Queue lengths and service times from small sets, so that weights tie often.
          const s: StageState | undefined =
            rnd(4) === 0
              ? undefined
              : {
                  name: `t${i}`,
                  stats: {
                    queueLength: 1 + rnd(4),
                    serviceTimes: rnd(5) === 0 ? [0] : [10 * (1 + rnd(3)), 10 * (1 + rnd(3))],
                  },
                  running: rnd(3),
                  ready: rnd(3) > 0,
                };
          stages[i] = s;
          shares.set(i, s);
        }
        const rotation = rnd(n);
        const workers = 1 + rnd(5);
        expect(shares.pick(rotation, n, workers), `round ${round}, step ${step}`).toBe(
          reference(stages, rotation, workers),
        );
      }
    }
  });

  it('with nothing ready, picks nothing', () => {
    const s = new Shares();
    s.set(0, { name: 'a', stats: { queueLength: 2, serviceTimes: [5] }, running: 1, ready: false });
    expect(s.pick(0, 1, 4)).toBeUndefined();
    s.set(0, undefined);
    expect(s.pick(0, 1, 4)).toBeUndefined();
  });
});
