/** Pure unit tests of the scheduler (src/net/plan/scheduler.ts): no files, no clock. */
import { describe, expect, it } from 'vitest';
import {
  type DecisionVisits,
  type MarkingSource,
  type PlaceState,
  Scheduler,
  type SchedulerInput,
  type SchedulerResult,
  type Start,
  schedule,
  type TokenRef,
  type TransitionState,
} from '../../../src/net/plan/scheduler.js';
import { seeded } from '../helpers.js';

function tok(seq: number, opts: { key?: string; seen?: number; nop?: boolean } = {}): TokenRef {
  return {
    filename: `f${seq}`,
    seq: BigInt(seq),
    key: opts.key ?? `k${seq}`,
    seen: opts.seen ?? 0,
    nop: opts.nop ?? false,
  };
}

function place(name: string, tokens: TokenRef[], opts: Partial<PlaceState> = {}): PlaceState {
  return {
    name,
    order: 'sequence',
    next: tokens.length ? tokens[0]!.seq : 1n,
    tokens,
    count: tokens.length,
    incoming: 0,
    ...opts,
  };
}

function trans(
  name: string,
  inp: string | Array<{ place: string; take?: number; maxWait?: number }>,
  out: string[],
  opts: Partial<TransitionState> = {},
): TransitionState {
  const inputs = (typeof inp === 'string' ? [{ place: inp }] : inp).map((a) => ({
    place: a.place,
    take: a.take ?? 1,
    maxWait: a.maxWait,
  }));
  return { name, inputs, outputs: out, inhibit: [], workers: 1, running: 0, stopped: false, serviceTimes: [], ...opts };
}

function input(
  places: PlaceState[],
  transitions: TransitionState[],
  extra: Partial<SchedulerInput> = {},
): SchedulerInput {
  return {
    places: new Map(places.map((p) => [p.name, p])),
    transitions: new Map(transitions.map((t) => [t.name, t])),
    totalWorkers: 4,
    freeWorkers: 4,
    now: 0,
    rotation: 0,
    ...extra,
  };
}

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
const seqsOf = (s: { tokens: Array<{ token: TokenRef }> }) => s.tokens.map((x) => Number(x.token.seq));

describe('schedule', () => {
  it('starts up to the transition cap, on consecutive tokens in order', () => {
    const r = schedule(
      input(
        [
          place(
            'a',
            range(1, 11).map((i) => tok(i)),
          ),
          place('b', []),
        ],
        [trans('t', 'a', ['b'], { workers: 3 })],
        { freeWorkers: 8, totalWorkers: 8 },
      ),
    );
    expect(r.starts.map(seqsOf)).toEqual([[1], [2], [3]]);
  });

  it('does not start past the free workers of the pool', () => {
    const r = schedule(
      input(
        [
          place(
            'a',
            range(1, 11).map((i) => tok(i)),
          ),
          place('b', []),
        ],
        [trans('t', 'a', ['b'], { workers: 8 })],
        { freeWorkers: 2 },
      ),
    );
    expect(r.starts).toHaveLength(2);
  });

  it('counts running firings against the cap', () => {
    const r = schedule(
      input(
        [
          place(
            'a',
            range(5, 11).map((i) => tok(i)),
          ),
          place('b', []),
        ],
        [trans('t', 'a', ['b'], { workers: 3, running: 2 })],
      ),
    );
    expect(r.starts.map(seqsOf)).toEqual([[5]]);
  });

  it('waits for the next number of a sequence place: a gap stops it', () => {
    const r = schedule(
      input(
        [place('a', [tok(1), tok(2), tok(4)], { next: 1n }), place('b', [])],
        [trans('t', 'a', ['b'], { workers: 4 })],
      ),
    );
    expect(r.starts.map(seqsOf)).toEqual([[1], [2]]);
    const r2 = schedule(
      input([place('a', [tok(2), tok(3)], { next: 1n }), place('b', [])], [trans('t', 'a', ['b'], { workers: 4 })]),
    );
    expect(r2.starts).toEqual([]);
  });

  it('takes an arrival place by lowest number, gaps or not', () => {
    const r = schedule(
      input(
        [place('a', [tok(2), tok(5), tok(9)], { order: 'arrival', next: 1n }), place('b', [])],
        [trans('t', 'a', ['b'], { workers: 4 })],
      ),
    );
    expect(r.starts.map(seqsOf)).toEqual([[2], [5], [9]]);
  });

  it('never lets a place exceed its capacity, counting tokens there and on their way', () => {
    // b holds 1 and one firing already writes there: with capacity 3 one more may start.
    const r = schedule(
      input(
        [
          place(
            'a',
            range(1, 11).map((i) => tok(i)),
          ),
          place('b', [tok(1)], { capacity: 3, incoming: 1 }),
        ],
        [trans('t', 'a', ['b'], { workers: 8, running: 1 })],
        { freeWorkers: 8, totalWorkers: 9 },
      ),
    );
    expect(r.starts).toHaveLength(1);
    const full = schedule(
      input(
        [place('a', [tok(1)]), place('b', [tok(1), tok(2)], { capacity: 2 })],
        [trans('t', 'a', ['b'], { workers: 8 })],
      ),
    );
    expect(full.starts).toEqual([]);
  });

  it('lets a producer start while the reader of the place holds its token (the commit waits for room)', () => {
    // b (capacity 1) holds one token that u has claimed: t may start, its output replaces it.
    const ts = [trans('t', 'a', ['b'], { workers: 4 }), trans('u', 'b', ['c'], { running: 1 })];
    const r = schedule(
      input([place('a', [tok(1), tok(2)]), place('b', [], { count: 1, claimed: 1, capacity: 1 }), place('c', [])], ts),
    );
    expect(r.starts.map((s) => s.transition)).toEqual(['t']);
    // An unclaimed token there, or one already on its way: no start.
    expect(
      schedule(
        input([place('a', [tok(1)]), place('b', [tok(5)], { capacity: 1 }), place('c', [])], [trans('t', 'a', ['b'])]),
      ).starts,
    ).toEqual([]);
    expect(
      schedule(
        input(
          [place('a', [tok(1)]), place('b', [], { count: 1, claimed: 1, incoming: 1, capacity: 1 }), place('c', [])],
          [trans('t', 'a', ['b'])],
        ),
      ).starts,
    ).toEqual([]);
  });

  it('capacity holds over random markings (property)', () => {
    const rnd = seeded(7);
    for (let round = 0; round < 300; round++) {
      const cap = 1 + rnd(4);
      const count = rnd(cap + 1);
      const incoming = rnd(cap + 1 - count);
      const a = place(
        'a',
        range(1, 2 + rnd(10)).map((i) => tok(i)),
      );
      const b = place(
        'b',
        range(1, count + 1).map((i) => tok(i)),
        { capacity: cap, incoming },
      );
      const c = place('c', [], { capacity: 1 + rnd(3) });
      const ts = [trans('t', 'a', ['b'], { workers: 1 + rnd(6) }), trans('u', 'b', ['c'], { workers: 1 + rnd(6) })];
      const r = schedule(input([a, b, c], ts, { freeWorkers: 1 + rnd(8), totalWorkers: 8 }));
      const into = (p: PlaceState, name: string) =>
        p.count +
        p.incoming +
        r.starts.filter((s) => ts.find((t) => t.name === s.transition)!.outputs.includes(name)).length;
      expect(into(b, 'b')).toBeLessThanOrEqual(Math.max(cap, count + incoming));
      expect(into(c, 'c')).toBeLessThanOrEqual(c.capacity!);
    }
  });

  it('does not start an inhibited transition, and starts it once the place is empty', () => {
    const a = place('a', [tok(1)]);
    const b = place('b', []);
    const t = trans('t', 'a', ['b'], { inhibit: ['pause'] });
    expect(schedule(input([a, b, place('pause', [tok(1)])], [t])).starts).toEqual([]);
    // Claimed but not yet consumed counts too: count, not the unclaimed tokens.
    expect(schedule(input([a, b, place('pause', [], { count: 1 })], [t])).starts).toEqual([]);
    expect(schedule(input([a, b, place('pause', [])], [t])).starts.map(seqsOf)).toEqual([[1]]);
  });

  it('matches an and-merge by key, the rest waiting', () => {
    const l = place('l', [tok(1, { key: 'x' }), tok(2, { key: 'y' })], { order: 'arrival' });
    const r = place('r', [tok(1, { key: 'y' }), tok(2, { key: 'z' })], { order: 'arrival' });
    const res = schedule(
      input([l, r, place('o', [])], [trans('m', [{ place: 'l' }, { place: 'r' }], ['o'], { workers: 4 })]),
    );
    expect(res.starts).toHaveLength(1);
    expect(res.starts[0]!.tokens.map((x) => [x.place, x.token.key])).toEqual([
      ['l', 'y'],
      ['r', 'y'],
    ]);
  });

  it(
    'an and-merge given its join (merge): starts its first ' +
      'sets, up to its cap, with only the heads of its places shown',
    () => {
      const l = place('l', [tok(1, { key: 'x' })], { order: 'arrival', count: 3 });
      const r = place('r', [tok(1, { key: 'y' })], { order: 'arrival', count: 3 });
      const [l2, l3, r2, r3] = [tok(2, { key: 'y' }), tok(3, { key: 'z' }), tok(2, { key: 'z' }), tok(3, { key: 'w' })];
      const m = trans('m', [{ place: 'l' }, { place: 'r' }], ['o'], {
        workers: 4,
        merge: {
          complete: 2,
          sets: [
            [l2, tok(1, { key: 'y' })],
            [l3, r2],
          ],
        },
      });
      const res = schedule(input([l, r, place('o', [])], [m]));
      expect(res.starts.map((s) => s.tokens.map((x) => `${x.place}${x.token.seq}`))).toEqual([
        ['l2', 'r1'],
        ['l3', 'r2'],
      ]);
      // The same sets found in the places' tokens (no join given): the same starts.
      const all = schedule(
        input(
          [
            place('l', [tok(1, { key: 'x' }), l2, l3], { order: 'arrival' }),
            place('r', [tok(1, { key: 'y' }), r2, r3], { order: 'arrival' }),
            place('o', []),
          ],
          [trans('m', [{ place: 'l' }, { place: 'r' }], ['o'], { workers: 4 })],
        ),
      );
      expect(all.starts.map((s) => s.tokens.map((x) => `${x.place}${x.token.seq}`))).toEqual([
        ['l2', 'r1'],
        ['l3', 'r2'],
      ]);
    },
  );

  it('a set taken by one and-merge is gone for another reading the same place, and its key no longer counts', () => {
    const [r1, s1, l1] = [tok(1, { key: 'k' }), tok(1, { key: 'k' }), tok(1, { key: 'k' })];
    const m1 = trans('m1', [{ place: 'l' }, { place: 'r' }], ['o'], { merge: { complete: 1, sets: [[l1, r1]] } });
    const m2 = trans('m2', [{ place: 'r' }, { place: 's' }], ['o'], { merge: { complete: 1, sets: [[r1, s1]] } });
    const res = schedule(
      input(
        [
          place('l', [], { order: 'arrival' }),
          place('r', [], { order: 'arrival' }),
          place('s', [], { order: 'arrival' }),
          place('o', []),
        ],
        [m1, m2],
      ),
    );
    expect(res.starts).toHaveLength(1);
  });

  it('consumes NOP tokens at the head without a worker, and not behind a gap', () => {
    const a = place('a', [tok(1, { nop: true }), tok(2), tok(3, { nop: true }), tok(4)]);
    const r = schedule(input([a, place('b', [])], [trans('t', 'a', ['b'], { workers: 4 })], { freeWorkers: 1 }));
    const skips = r.starts.filter((s) => s.skip);
    const fires = r.starts.filter((s) => !s.skip);
    expect(skips.map(seqsOf)).toEqual([[1]]);
    expect(fires.map(seqsOf)).toEqual([[2]]);
    const gap = schedule(
      input([place('a', [tok(3, { nop: true })], { next: 2n }), place('b', [])], [trans('t', 'a', ['b'])]),
    );
    expect(gap.starts).toEqual([]);
  });

  it('batches: N tokens in order, or what there is once the oldest has waited max-wait; wakeAt says when', () => {
    const mk = (n: number, seen: number) =>
      place(
        'a',
        range(1, n + 1).map((i) => tok(i, { seen })),
      );
    const t = trans('t', [{ place: 'a', take: 10, maxWait: 0.2 }], ['b'], { workers: 4 });
    const full = schedule(input([mk(23, 1000), place('b', [])], [t], { now: 1000 }));
    expect(full.starts.map(seqsOf)).toEqual([range(1, 11), range(11, 21)]);
    expect(full.wakeAt).toBe(1200); // the 3 left wait for max-wait
    const early = schedule(input([mk(3, 1000), place('b', [])], [t], { now: 1100 }));
    expect(early.starts).toEqual([]);
    expect(early.wakeAt).toBe(1200);
    const due = schedule(input([mk(3, 1000), place('b', [])], [t], { now: 1200 }));
    expect(due.starts.map(seqsOf)).toEqual([[1, 2, 3]]);
    const noWait = schedule(
      input([mk(3, 1000), place('b', [])], [trans('t', [{ place: 'a', take: 10 }], ['b'])], { now: 99_999 }),
    );
    expect(noWait.starts).toEqual([]);
    expect(noWait.wakeAt).toBeUndefined();
  });

  it('shares the pool by the Jefferson objective: the heavier stage gets more workers', () => {
    const a = place(
      'a',
      range(1, 21).map((i) => tok(i)),
    );
    const b = place(
      'b',
      range(1, 21).map((i) => tok(i)),
    );
    const ts = [
      trans('fast', 'a', ['x'], { workers: 8, serviceTimes: [10] }),
      trans('slow', 'b', ['y'], { workers: 8, serviceTimes: [40] }),
    ];
    const r = schedule(input([a, b, place('x', []), place('y', [])], ts, { freeWorkers: 5, totalWorkers: 5 }));
    const n = (t: string) => r.starts.filter((s) => s.transition === t).length;
    expect(n('fast') + n('slow')).toBe(5);
    expect(n('slow')).toBeGreaterThan(n('fast'));
    expect(n('fast')).toBeGreaterThanOrEqual(1);
  });

  it('gives workers the objective leaves over to whoever is ready (work conserving)', () => {
    const r = schedule(
      input(
        [
          place('a', [tok(1)]),
          place(
            'b',
            range(1, 9).map((i) => tok(i)),
          ),
          place('o', []),
        ],
        [trans('p', 'a', ['o'], { workers: 4 }), trans('q', 'b', ['o'], { workers: 2 })],
        { freeWorkers: 4 },
      ),
    );
    expect(r.starts).toHaveLength(3); // p has one token, q its cap of 2
  });

  it('does not modify its input', () => {
    const a = place(
      'a',
      range(1, 5).map((i) => tok(i)),
    );
    const inp = input([a, place('b', [])], [trans('t', 'a', ['b'], { workers: 4 })]);
    const before = JSON.stringify(inp, (_k, v) => (typeof v === 'bigint' ? String(v) : v instanceof Map ? [...v] : v));
    schedule(inp);
    expect(JSON.stringify(inp, (_k, v) => (typeof v === 'bigint' ? String(v) : v instanceof Map ? [...v] : v))).toBe(
      before,
    );
  });

  it('no starvation: two transitions with equal scores and one worker both fire within a few rounds', () => {
    // Each round: one worker, both transitions with the same queue and service time; the winner's
    // firing ends before the next round. Both must get turns, alternately.
    let rotation = 0;
    const wins = new Map([
      ['p', 0],
      ['q', 0],
    ]);
    const firstWin = new Map<string, number>();
    for (let round = 0; round < 20; round++) {
      const r = schedule(
        input(
          [
            place(
              'a',
              range(1, 6).map((i) => tok(i)),
            ),
            place(
              'b',
              range(1, 6).map((i) => tok(i)),
            ),
            place('o', []),
          ],
          [trans('p', 'a', ['o'], { serviceTimes: [5] }), trans('q', 'b', ['o'], { serviceTimes: [5] })],
          {
            freeWorkers: 1,
            totalWorkers: 1,
            rotation,
          },
        ),
      );
      expect(r.starts).toHaveLength(1);
      const w = r.starts[0]!.transition;
      wins.set(w, wins.get(w)! + 1);
      if (!firstWin.has(w)) firstWin.set(w, round);
      rotation = r.rotation;
    }
    expect(firstWin.get('p')).toBeLessThanOrEqual(1);
    expect(firstWin.get('q')).toBeLessThanOrEqual(1);
    expect(wins.get('p')).toBe(10);
    expect(wins.get('q')).toBe(10);
  });

  it('no starvation with three tied transitions and one worker: each within 3 rounds', () => {
    let rotation = 0;
    const last = new Map<string, number>();
    for (let round = 0; round < 30; round++) {
      const ts = ['p', 'q', 'r'].map((n) => trans(n, `${n}in`, ['o'], { serviceTimes: [7] }));
      const ps = ['p', 'q', 'r'].map((n) =>
        place(
          `${n}in`,
          range(1, 4).map((i) => tok(i)),
        ),
      );
      const r = schedule(input([...ps, place('o', [])], ts, { freeWorkers: 1, totalWorkers: 1, rotation }));
      last.set(r.starts[0]!.transition, round);
      rotation = r.rotation;
      if (round >= 2) for (const n of ['p', 'q', 'r']) expect(round - (last.get(n) ?? -99)).toBeLessThan(3);
    }
  });
});

describe('idle transitions and the allocation', () => {
  it(
    'a transition with nothing queued and nothing running ' + 'gets no share, even when upstream could still feed it',
    () => {
      // t1 runs and writes b, so t2 (reading b, empty) could still get work: the article counts it as
      // not done. It weighs nothing either way, and never takes a worker from a stage that weighs
      // more: t3, the only weighed stage, gets both workers' worth of share, and both starts.
      const ts = [
        trans('t1', 'a', ['b'], { running: 1, serviceTimes: [10] }),
        trans('t2', 'b', ['c'], { serviceTimes: [10] }),
        trans('t3', 'd', ['e'], { workers: 4, serviceTimes: [10] }),
      ];
      const r = schedule(
        input(
          [
            place('a', []),
            place('b', []),
            place('c', []),
            place(
              'd',
              range(1, 6).map((i) => tok(i)),
            ),
            place('e', []),
          ],
          ts,
          { totalWorkers: 3, freeWorkers: 2, rotation: 1 },
        ),
      );
      expect(r.starts.map((s) => s.transition)).toEqual(['t3', 't3']);
    },
  );

  it(
    'with every weight zero (service times of 0), the first transition with work ' +
      'in round-robin order has the share: a deliberate difference from the article',
    () => {
      // Moves and quick functions measure 0 ms: every stage weighs 0, and allocateWorkers gives every
      // worker to the first stage that is not done. The article's "done" leaves t2 in (t1, running,
      // feeds it), and t2 would get the share though it has nothing to fire; the scheduler leaves out
      // every transition with nothing queued and nothing running, so the share goes to t3, the
      // first in round-robin order (from t2) with work, and its deficit (2 - 1) is the largest.
      // Knowing what upstream could still feed would cost a walk of the net per decision.
      const ts = [
        trans('t1', 'a', ['b'], { running: 1, serviceTimes: [0] }),
        trans('t2', 'b', ['c'], { serviceTimes: [0] }),
        trans('t3', 'd', ['x'], { workers: 2, running: 1, serviceTimes: [0] }),
        trans('t4', 'f', ['x'], { serviceTimes: [0] }),
      ];
      const ps = [
        place('a', []),
        place('b', []),
        place('c', []),
        place('d', [tok(1)]),
        place('f', [tok(1)]),
        place('x', []),
      ];
      const r = schedule(input(ps, ts, { totalWorkers: 2, freeWorkers: 1, rotation: 1 }));
      expect(r.starts.map((s) => s.transition)).toEqual(['t3']);
      // With a weighed stage anywhere, nothing of this matters: t4's share (it weighs more) wins.
      const weighed = ts.map((t) => (t.name === 't4' ? { ...t, serviceTimes: [5] } : t));
      expect(
        schedule(input(ps, weighed, { totalWorkers: 2, freeWorkers: 1, rotation: 1 })).starts.map((s) => s.transition),
      ).toEqual(['t4']);
    },
  );
});

/** A marking that changes as a run's would, for the incremental scheduler. */
class World {
  places = new Map<string, PlaceState>();
  transitions = new Map<string, TransitionState>();
  /** Firings started and not ended: their transition and tokens. */
  open: Array<{ t: string; tokens: Array<{ place: string; token: TokenRef }> }> = [];
  seq = new Map<string, number>();
  now = 0;
  constructor(private readonly rnd: (n: number) => number) {}

  /** As the runner shows them: the head of each place only (its lookahead, here 3 tokens). */
  source(): MarkingSource {
    return {
      place: (n) => {
        const p = this.places.get(n)!;
        return p.tokens.length > 3 ? { ...p, tokens: p.tokens.slice(0, 3) } : p;
      },
      transition: (n) => this.transitions.get(n)!,
    };
  }

  /** The whole marking, as the source shows it. */
  marking(): { places: Map<string, PlaceState>; transitions: Map<string, TransitionState> } {
    const src = this.source();
    return { places: new Map([...this.places.keys()].map((n) => [n, src.place(n)])), transitions: this.transitions };
  }

  setPlace(name: string, change: (p: PlaceState) => Partial<PlaceState>): void {
    const p = this.places.get(name)!;
    this.places.set(name, { ...p, ...change(p) });
  }

  setTransition(name: string, change: (t: TransitionState) => Partial<TransitionState>): void {
    const t = this.transitions.get(name)!;
    this.transitions.set(name, { ...t, ...change(t) });
  }

  /** A new token (sometimes a NOP) arrives in a place. */
  arrive(name: string): void {
    const n = this.seq.get(name) ?? 1;
    this.seq.set(name, n + 1);
    const t = {
      filename: `${name}-${n}`,
      seq: BigInt(n),
      key: `k${this.rnd(4)}`,
      seen: this.now,
      nop: this.rnd(8) === 0,
    };
    this.setPlace(name, (p) => ({ tokens: [...p.tokens, t], count: p.count + 1 }));
  }

  /** A start, as the runner's claims and tally make it. */
  begin(s: Start): void {
    for (const { place, token } of s.tokens) {
      this.setPlace(place, (p) => ({
        tokens: p.tokens.filter((x) => x.filename !== token.filename),
        claimed: (p.claimed ?? 0) + 1,
        next: p.order === 'sequence' && token.seq >= p.next ? token.seq + 1n : p.next,
      }));
    }
    if (s.skip) {
      this.consume(s.tokens);
      return;
    }
    const t = this.transitions.get(s.transition)!;
    this.setTransition(t.name, (x) => ({ running: x.running + 1 }));
    for (const o of t.outputs) this.setPlace(o, (p) => ({ incoming: p.incoming + 1 }));
    this.open.push({ t: t.name, tokens: s.tokens });
  }

  private consume(tokens: Array<{ place: string }>): void {
    for (const { place } of tokens)
      this.setPlace(place, (p) => ({ claimed: (p.claimed ?? 0) - 1, count: p.count - 1 }));
  }

  /** The k-th open firing ends and commits: its outputs written, its inputs consumed, a service time recorded. */
  end(k: number): { places: string[]; transition: string } {
    const [f] = this.open.splice(k, 1);
    const t = this.transitions.get(f!.t)!;
    this.consume(f!.tokens);
    this.setTransition(t.name, (x) => ({
      running: x.running - 1,
      serviceTimes: [...x.serviceTimes, this.rnd(3) * 10].slice(-3),
    }));
    for (const o of t.outputs) {
      this.setPlace(o, (p) => ({ incoming: p.incoming - 1 }));
      this.arrive(o);
    }
    return { places: [...f!.tokens.map((x) => x.place), ...t.outputs], transition: t.name };
  }
}

describe('Scheduler: decisions told what changed', () => {
  it('decides as schedule() over the whole marking, through random changes (property)', () => {
    for (let round = 0; round < 150; round++) {
      const rnd = seeded(round * 7919 + 1);
      const w = new World(rnd);
      const np = 2 + rnd(6);
      for (let i = 0; i < np; i++)
        w.places.set(`p${i}`, {
          name: `p${i}`,
          order: rnd(2) ? 'sequence' : 'arrival',
          next: 1n,
          tokens: [],
          count: 0,
          incoming: 0,
          claimed: 0,
          capacity: rnd(4) === 0 ? 1 + rnd(3) : undefined,
        });
      for (let i = 0; i < 2 + rnd(6); i++) {
        const a = rnd(np);
        const b = (a + 1 + rnd(np - 1)) % np;
        const merge = rnd(5) === 0;
        const inputs = merge
          ? [
              { place: `p${a}`, take: 1 },
              { place: `p${b}`, take: 1 },
            ]
          : [{ place: `p${a}`, take: rnd(4) === 0 ? 2 : 1, maxWait: rnd(3) === 0 ? 0.05 : undefined }];
        w.transitions.set(`t${i}`, {
          name: `t${i}`,
          inputs,
          outputs: rnd(3) ? [`p${rnd(np)}`] : [],
          inhibit: rnd(6) === 0 ? [`p${rnd(np)}`] : [],
          workers: 1 + rnd(3),
          running: 0,
          stopped: false,
          serviceTimes: rnd(2) ? [] : [rnd(3) * 10],
        });
      }
      const pool = 1 + rnd(4);
      const s = new Scheduler(w.transitions.values(), w.places.values(), w.source());
      for (let step = 0; step < 60; step++) {
        // What happens between two decisions, told to the scheduler as the runner tells it.
        for (let k = rnd(3); k > 0; k--) {
          const what = rnd(10);
          if (what < 4) {
            const p = `p${rnd(np)}`;
            w.arrive(p);
            s.placeChanged(p);
          } else if (what < 8 && w.open.length > 0) {
            const e = w.end(rnd(w.open.length));
            for (const p of e.places) s.placeChanged(p);
            s.transitionChanged(e.transition);
          } else if (what === 8) {
            const t = `t${rnd(w.transitions.size)}`;
            w.setTransition(t, (x) => ({ stopped: !x.stopped }));
            s.transitionChanged(t);
          } else w.now += 30;
        }
        const running = w.open.length;
        const inputOf = { totalWorkers: pool, freeWorkers: pool - running, now: w.now };
        const expected = schedule({ ...w.marking(), ...inputOf, rotation: s.rotation });
        const got = s.decide(inputOf);
        const show = (r: SchedulerResult) =>
          JSON.stringify({
            starts: r.starts.map((x) => [x.transition, x.skip, x.tokens.map((t) => t.token.filename)]),
            rotation: r.rotation,
            wakeAt: r.wakeAt,
          });
        expect(show(got), `round ${round}, step ${step}`).toBe(show(expected));
        // The starts change the marking; the scheduler is not told (it knows what it started).
        for (const x of got.starts) w.begin(x);
      }
    }
  });

  it("a decision's work does not grow with the places and transitions left alone", () => {
    const visits = (idle: number) => {
      const w = new World(() => 0);
      const add = (i: number) => {
        w.places.set(`p${i}`, {
          name: `p${i}`,
          order: 'sequence',
          next: 1n,
          tokens: [],
          count: 0,
          incoming: 0,
          claimed: 0,
        });
        w.transitions.set(`t${i}`, {
          name: `t${i}`,
          inputs: [{ place: `p${i}`, take: 1 }],
          outputs: [],
          inhibit: [],
          workers: 1,
          running: 0,
          stopped: false,
          serviceTimes: [],
        });
      };
      for (let i = 0; i < idle + 3; i++) add(i);
      const s = new Scheduler(w.transitions.values(), w.places.values(), w.source());
      s.decide({ totalWorkers: 2, freeWorkers: 2, now: 0 }); // the first decision reads everything
      expect(s.visits.transitions).toBe(idle + 3);
      const seen: DecisionVisits[] = [];
      for (let k = 0; k < 20; k++) {
        // Tokens arrive in three places; firings start, end, start again.
        const p = `p${idle + (k % 3)}`;
        w.arrive(p);
        s.placeChanged(p);
        if (w.open.length > 0) {
          const e = w.end(0);
          for (const q of e.places) s.placeChanged(q);
          s.transitionChanged(e.transition);
        }
        const r = s.decide({ totalWorkers: 2, freeWorkers: 2 - w.open.length, now: 0 });
        for (const x of r.starts) w.begin(x);
        seen.push({ ...s.visits });
      }
      return seen;
    };
    const few = visits(10);
    expect(visits(10_000)).toEqual(few);
    for (const v of few) expect(v.transitions + v.places).toBeLessThanOrEqual(12);
  });
});
