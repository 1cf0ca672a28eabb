/**
 * The open firings' tally (src/net/run/firing-tally.ts) gives the answers of the walks it replaces:
 * heldBy (plan/marking.ts), mayCommit (plan/commit-order.ts), and the counts per transition, over
 * random sequences of firings opening, running, finishing, committing, refused and closing.
 */
import { describe, expect, it } from 'vitest';
import type { TransitionSpec } from '../../../src/net/model/model.js';
import type { Token } from '../../../src/net/place/token.js';
import { mayCommit } from '../../../src/net/plan/commit-order.js';
import { heldBy } from '../../../src/net/plan/marking.js';
import { FiringTally } from '../../../src/net/run/firing-tally.js';
import { SortedKeys } from '../../../src/net/run/sorted-keys.js';
import type { Firing } from '../../../src/net/run/state.js';
import { makeHeader } from '../../../src/packet/prepare.js';

const ORDER: Record<string, 'sequence' | 'arrival'> = { a: 'sequence', b: 'arrival', c: 'sequence', d: 'arrival' };
const isSequence = (p: string) => ORDER[p] === 'sequence';

function spec(name: string, inputs: Array<[string, number]>, outputs: string[], ordered: boolean): TransitionSpec {
  return {
    name,
    inputs: inputs.map(([place, take]) => ({ place, take })),
    outputs,
    outMode: 'all',
    env: {},
    cwd: '/',
    retries: 0,
    workers: 4,
    ordered,
    inhibit: [],
  };
}

const SPECS = [
  spec('one', [['a', 1]], ['b'], true),
  spec('free', [['b', 1]], ['c', 'd', 'c'], false),
  spec('batch', [['c', 3]], ['d'], true),
  spec(
    'merge',
    [
      ['a', 1],
      ['c', 1],
    ],
    ['a'],
    true,
  ),
];

/** A small deterministic random generator (xorshift), so that a failure can be replayed. */
function rng(seed: number): () => number {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function token(place: string, seq: bigint): Token {
  return {
    place,
    filename: `${place}-${seq}`,
    path: '',
    seq,
    key: '',
    header: makeHeader({ seq, cmd: { kind: 'NOP' } }),
    seen: 0,
  };
}

describe('FiringTally', () => {
  it('answers as the walks over the open firings do', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = rng(seed);
      const tally = new FiringTally(isSequence);
      const open = new Set<Firing>();
      const nextSeq: Record<string, bigint> = { a: 0n, b: 0n, c: 0n, d: 0n };
      const ordinals = new Map<string, number>();
      let begun = 0;
      for (let step = 0; step < 400; step++) {
        const r = rand();
        const list = [...open];
        const pick = list[Math.floor(rand() * list.length)];
        if (r < 0.3 || !pick) {
          const t = SPECS[Math.floor(rand() * SPECS.length)]!;
          const tokens: Token[] = [];
          for (const arc of t.inputs)
            for (let i = 0; i < arc.take; i++)
              tokens.push(
                token(
                  arc.place,
                  ORDER[arc.place] === 'arrival' && rand() < 0.3
                    ? BigInt(Math.floor(rand() * 50))
                    : nextSeq[arc.place]!++,
                ),
              );
          const ordinal = ordinals.get(t.name) ?? 0;
          ordinals.set(t.name, ordinal + 1);
          const f: Firing = {
            id: String(begun),
            transition: t,
            key: '',
            tokens,
            attempt: 0,
            started: 0,
            dir: '',
            ordinal,
            begun: begun++,
            running: rand() < 0.8,
          };
          if (!f.running) f.outcome = { nop: true };
          open.add(f);
          tally.opened(f);
        } else if (r < 0.5) {
          tally.setRunning(pick, !pick.running);
          if (!pick.running) pick.outcome = { nop: true };
        } else if (r < 0.75) {
          tally.setCommitting(pick, !pick.committing);
        } else {
          tally.closed(pick);
          open.delete(pick);
        }
        const notCommitting = [...open].filter((f) => !f.committing);
        expect(tally.running).toBe([...open].filter((f) => f.running).length);
        expect(new Set(tally.finished)).toEqual(new Set(notCommitting.filter((f) => !f.running)));
        for (const t of SPECS) {
          expect(tally.counts(t.name)).toEqual({
            open: notCommitting.filter((f) => f.transition === t).length,
            committing: [...open].filter((f) => f.transition === t && f.committing).length,
          });
        }
        for (const p of Object.keys(ORDER)) {
          for (const next of [0n, 5n, 1000n]) expect(tally.held(p, next)).toEqual(heldBy(p, next, open));
        }
        for (const f of notCommitting) expect(tally.mayCommit(f)).toBe(mayCommit(f, notCommitting, isSequence));
      }
    }
  });
});

describe('SortedKeys', () => {
  it('counts the keys below a key, with repeats, as keys come and go in any order', () => {
    const rand = rng(7);
    const keys = new SortedKeys<number>();
    const plain: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const k = Math.floor(rand() * 40);
      if (rand() < 0.55) {
        keys.add(k);
        plain.push(k);
      } else {
        keys.delete(k);
        const at = plain.indexOf(k);
        if (at >= 0) plain.splice(at, 1);
      }
      expect(keys.size).toBe(plain.length);
      expect(keys.max()).toBe(plain.length ? Math.max(...plain) : undefined);
      const q = Math.floor(rand() * 42);
      expect(keys.below(q)).toBe(plain.filter((x) => x < q).length);
    }
  });
});
