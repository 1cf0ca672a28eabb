/** Unit tests of the and-merge's incremental join (src/net/plan/key-join.ts): pure, no files. */

import { defineNet } from 'filespooler';
import { describe, expect, it } from 'vitest';
import { type Keyed, KeyJoin, MergeJoins } from '../../../src/net/plan/key-join.js';

interface Tok extends Keyed {
  id: string;
}

const tok = (place: string, seq: number, key: string): Tok => ({ id: `${place}${seq}`, seq: BigInt(seq), key });
const ids = (sets: Tok[][]) => sets.map((s) => s.map((t) => t.id).join('+'));

/** The sets as a scan of every token finds them (the scheduler's rule before the join): the reference. */
function bruteSets(places: string[], present: Map<string, Tok[]>): Tok[][] {
  const lists = places.map((p) => [...(present.get(p) ?? [])].sort((a, b) => (a.seq < b.seq ? -1 : 1)));
  const used = new Set<Tok>();
  const out: Tok[][] = [];
  for (const first of lists[0]!) {
    const partners = lists.slice(1).map((l) => l.find((t) => t.key === first.key && !used.has(t)));
    if (partners.some((x) => x === undefined)) continue;
    const set = [first, ...(partners as Tok[])];
    for (const t of set) used.add(t);
    out.push(set);
  }
  return out;
}

describe('KeyJoin', () => {
  it('finds a complete set by key, in the order of the first place, whatever order the tokens came in', () => {
    const j = new KeyJoin<Tok>(['l', 'r']);
    j.add('r', tok('r', 1, 'b'));
    j.add('l', tok('l', 1, 'a'));
    j.add('l', tok('l', 2, 'b'));
    expect(j.complete).toBe(1);
    expect(ids(j.first(4))).toEqual(['l2+r1']);
    j.add('r', tok('r', 2, 'a'));
    expect(j.complete).toBe(2);
    expect(ids(j.first(4))).toEqual(['l1+r2', 'l2+r1']);
    expect(ids(j.first(1))).toEqual(['l1+r2']);
  });

  it('pairs the tokens of a key lowest with lowest, and a second set of a key comes in its own turn', () => {
    const j = new KeyJoin<Tok>(['l', 'r']);
    for (const [p, s, k] of [
      ['l', 1, 'x'],
      ['l', 2, 'y'],
      ['l', 3, 'x'],
      ['r', 5, 'x'],
      ['r', 4, 'x'],
      ['r', 6, 'y'],
    ] as const)
      j.add(p, tok(p, s, k));
    expect(j.complete).toBe(2);
    expect(ids(j.first(10))).toEqual(['l1+r4', 'l2+r6', 'l3+r5']);
  });

  it('a removed token breaks its set; added back (a firing dropped), the set is there again, once', () => {
    const j = new KeyJoin<Tok>(['l', 'r']);
    const l1 = tok('l', 1, 'a');
    const r1 = tok('r', 1, 'a');
    j.add('l', l1);
    j.add('r', r1);
    j.remove('r', r1);
    expect(j.complete).toBe(0);
    expect(j.first(4)).toEqual([]);
    j.add('r', r1);
    j.add('r', r1); // twice: once
    expect(j.complete).toBe(1);
    expect(ids(j.first(4))).toEqual(['l1+r1']);
    j.remove('l', tok('l', 1, 'a')); // another object with the same number: not this token
    expect(j.complete).toBe(1);
    j.remove('z', l1); // not an input place
    expect(ids(j.first(4))).toEqual(['l1+r1']);
  });

  it('three inputs: complete only with all three', () => {
    const j = new KeyJoin<Tok>(['a', 'b', 'c']);
    j.add('a', tok('a', 1, 'k'));
    j.add('c', tok('c', 1, 'k'));
    expect(j.complete).toBe(0);
    j.add('b', tok('b', 9, 'k'));
    expect(ids(j.first(2))).toEqual(['a1+b9+c1']);
  });

  it('agrees with a scan of every token through thousands of random arrivals and departures', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const places = ['l', 'r'];
    const j = new KeyJoin<Tok>(places);
    const present = new Map<string, Tok[]>(places.map((p) => [p, []]));
    const next = new Map(places.map((p) => [p, 1]));
    for (let step = 0; step < 4000; step++) {
      const p = places[rand(2)]!;
      const list = present.get(p)!;
      if (rand(3) > 0 || list.length === 0) {
        const t = tok(p, next.get(p)!, `k${rand(40)}`);
        next.set(p, next.get(p)! + 1);
        list.push(t);
        j.add(p, t);
      } else {
        const [t] = list.splice(rand(list.length), 1);
        j.remove(p, t!);
      }
      if (step % 50 === 0) {
        const want = bruteSets(places, present);
        expect(ids(j.first(5))).toEqual(ids(want.slice(0, 5)));
        expect(j.complete).toBe(new Set(want.map((s) => s[0]!.key)).size);
      }
    }
  });
});

describe('MergeJoins', () => {
  it('keeps a join for each and-merge only, and a token reaches every join reading its place', () => {
    const net = defineNet({
      dir: '/nonexistent',
      places: { l: {}, r: {}, s: {}, o: {}, o2: {}, o3: {} },
      transitions: {
        m: { in: ['l', 'r'], out: 'o', run: null },
        m2: { in: ['r', 's'], out: 'o2', run: null },
        one: { in: 's', out: 'o3', run: null },
      },
    });
    const joins = new MergeJoins<Tok>(net.transitions.values());
    expect([...joins.byTransition.keys()]).toEqual(['m', 'm2']);
    expect(joins.reads('r')).toBe(true);
    expect(joins.reads('o')).toBe(false);
    const r1 = tok('r', 1, 'k');
    joins.add('l', tok('l', 1, 'k'));
    joins.add('r', r1);
    joins.add('s', tok('s', 1, 'k'));
    expect(ids(joins.view(net.transitions.get('m')!)!.sets)).toEqual(['l1+r1']);
    expect(ids(joins.view(net.transitions.get('m2')!)!.sets)).toEqual(['r1+s1']);
    expect(joins.view(net.transitions.get('one')!)).toBeUndefined();
    joins.remove('r', r1);
    expect(joins.view(net.transitions.get('m')!)!.complete).toBe(0);
    expect(joins.view(net.transitions.get('m2')!)!.complete).toBe(0);
  });
});
