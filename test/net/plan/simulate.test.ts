/** `net simulate`: the scheduler in virtual time (src/net/plan/simulate.ts) and its CLI. */

import { defineNet } from 'filespooler';
import { simulate } from 'filespooler/net';
import { describe, expect, it } from 'vitest';
import { parseService } from '../../../src/net/plan/simulate.js';
import { makeNet, runFspl } from '../helpers.js';

const chain = (caps: { workers?: number; capacity?: number } = {}) =>
  defineNet({
    dir: '/nonexistent-sim',
    places: {
      a: {},
      b: caps.capacity ? { capacity: caps.capacity } : {},
      c: caps.capacity ? { capacity: caps.capacity } : {},
      d: {},
    },
    transitions: {
      s10: { in: 'a', out: 'b', run: null, workers: caps.workers ?? 4 },
      s20: { in: 'b', out: 'c', run: null, workers: caps.workers ?? 4 },
      s40: { in: 'c', out: 'd', run: null, workers: caps.workers ?? 4 },
    },
  });
const service = { s10: { mean: 10, jitter: 0 }, s20: { mean: 20, jitter: 0 }, s40: { mean: 40, jitter: 0 } };

describe('simulate', () => {
  it('with one worker, the makespan is the total work, and every token arrives', () => {
    const r = simulate(chain(), { tokens: 50, workers: 1, service });
    expect(r.makespan).toBe(50 * 70);
    expect(r.lowerBound).toBe(50 * 70);
    expect(r.places.d!.final).toBe(50);
    expect(r.transitions.s40!.firings).toBe(50);
    expect(r.transitions.s40!.share).toBeCloseTo(40 / 70, 6);
    expect(r.leftover).toBe(0);
  });

  it('shares 4 workers close to the lower bound, and above it', () => {
    const r = simulate(chain(), { tokens: 200, workers: 4, service });
    expect(r.lowerBound).toBe((200 * 70) / 4);
    expect(r.makespan).toBeGreaterThanOrEqual(r.lowerBound);
    expect(r.makespan).toBeLessThanOrEqual(r.lowerBound * 1.05);
  });

  it('with one worker per stage the slowest stage sets the pace', () => {
    const r = simulate(chain({ workers: 1 }), { tokens: 100, workers: 3, service });
    expect(r.makespan).toBe(10 + 20 + 100 * 40);
  });

  it('never lets a bounded place pass its capacity', () => {
    for (const capacity of [1, 2, 3]) {
      const r = simulate(chain({ capacity }), {
        tokens: 100,
        workers: 8,
        service: { s10: { mean: 5, jitter: 1 }, s20: { mean: 20, jitter: 1 }, s40: { mean: 10, jitter: 1 } },
      });
      expect(r.places.b!.peak).toBeLessThanOrEqual(capacity);
      expect(r.places.c!.peak).toBeLessThanOrEqual(capacity);
      expect(r.places.d!.final).toBe(100);
    }
  });

  it('is repeatable for one seed, and the seed matters with jitter', () => {
    const o = { tokens: 100, workers: 2, service: { ...service, s20: { mean: 20, jitter: 0.5 } } };
    expect(simulate(chain(), { ...o, seed: 3 })).toEqual(simulate(chain(), { ...o, seed: 3 }));
    expect(simulate(chain(), { ...o, seed: 3 }).makespan).not.toBe(simulate(chain(), { ...o, seed: 4 }).makespan);
  });

  it('capacity 1 with no jitter pipelines as well as unbounded places (blocking after service)', () => {
    const s = { s10: { mean: 20, jitter: 0 }, s20: { mean: 20, jitter: 0 }, s40: { mean: 20, jitter: 0 } };
    const bounded = simulate(chain({ workers: 1, capacity: 1 }), { tokens: 50, workers: 3, service: s });
    const free = simulate(chain({ workers: 1 }), { tokens: 50, workers: 3, service: s });
    expect(bounded.makespan).toBe(free.makespan);
    expect(free.makespan).toBe(40 + 50 * 20);
  });

  it('runs batches with max-wait in virtual time: 103 tokens, take 10, give 11 firings', () => {
    const net = defineNet({
      dir: '/nonexistent-sim',
      places: { a: {}, b: {} },
      transitions: { t: { in: { place: 'a', take: 10, 'max-wait': 0.2 }, out: 'b', run: null, workers: 2 } },
    });
    const r = simulate(net, { tokens: 103, workers: 2, service: { t: { mean: 10, jitter: 0 } } });
    expect(r.transitions.t!.firings).toBe(11);
    expect(r.places.b!.final).toBe(11);
  });

  it('an inhibited transition fires once its pause place has been emptied', () => {
    const net = defineNet({
      dir: '/nonexistent-sim',
      places: { a: {}, pause: {}, b: {} },
      transitions: { t: { in: 'a', out: 'b', run: null, inhibit: ['pause'] }, p: { in: 'pause', out: 'b', run: null } },
    });
    // pause is a source too, so it gets tokens; p empties it, then t runs.
    const r = simulate(net, {
      tokens: 5,
      workers: 1,
      service: { t: { mean: 1, jitter: 0 }, p: { mean: 1, jitter: 0 } },
    });
    expect(r.places.b!.final).toBe(10);
  });

  it('rejects unknown transitions and bad numbers', () => {
    expect(() => simulate(chain(), { tokens: 1, workers: 0 })).toThrow(/workers/);
    expect(() => simulate(chain(), { tokens: 1, workers: 1, service: { nope: { mean: 1, jitter: 0 } } })).toThrow(
      /nope/,
    );
  });
});

describe('parseService', () => {
  it('reads MEAN with a unit and an optional jitter', () => {
    expect(parseService('slow=40ms±50%')).toEqual({ transition: 'slow', service: { mean: 40, jitter: 0.5 } });
    expect(parseService('t=1.5s')).toEqual({ transition: 't', service: { mean: 1500, jitter: 0 } });
    expect(parseService('t=2m+-10%')).toEqual({ transition: 't', service: { mean: 120_000, jitter: 0.1 } });
  });
  it('rejects a missing unit, a jitter over 100% and garbage', () => {
    expect(() => parseService('t=40')).toThrow(/unit/);
    expect(() => parseService('t=40ms±150%')).toThrow(/100%/);
    expect(() => parseService('40ms')).toThrow(/TRANSITION=MEAN/);
  });
});

describe('fspl net simulate', () => {
  it('prints the makespan, the bound, the transitions and the places', async () => {
    const { file } = makeNet(`
places: { a: {}, b: { capacity: 2 }, c: {} }
transitions:
  fast: { in: a, out: b, run: [cat], workers: 2 }
  slow: { in: b, out: c, run: [cat], workers: 2 }
`);
    const r = await runFspl([
      'net',
      'simulate',
      file,
      '--tokens',
      '20',
      '--workers',
      '2',
      '--service',
      'fast=10ms',
      '--service',
      'slow=30ms±20%',
    ]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^20 tokens per source, 2 workers/);
    expect(r.stdout).toMatch(/makespan\s+\d/);
    expect(r.stdout).toMatch(/lower bound\s+\d/);
    expect(r.stdout).toMatch(/slow\s+30\.0 ms ±20%\s+20\s/);
    expect(r.stdout).toMatch(/b\s+[12]\s+2\s+0/);
    const j = await runFspl(['net', 'simulate', file, '-n', '20', '-w', '2', '--json']);
    expect(JSON.parse(j.stdout).transitions.fast.assumed).toBe(true);
  });

  it('a bad --service is a usage error on one line', async () => {
    const { file } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: a, out: b, run: [cat] }
`);
    for (const bad of ['t=40', 'zz=1ms', 't=1ms±200%']) {
      const r = await runFspl(['net', 'simulate', file, '--tokens', '5', '--service', bad]);
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: /);
    }
  });
});
