/** The net file's schema: its issues as problems, and what of a refused file is left to cross-check. */
import { describe, expect, test } from 'vitest';
import { checkShape } from '../../../src/net/model/schema.js';

describe('checkShape', () => {
  test('a valid file: no problem, its data as the schema gives it (a place without settings is {})', () => {
    expect(checkShape({ places: { a: null, b: {} }, transitions: { t: { in: 'a', out: 'b' } } })).toEqual({
      problems: [],
      data: { places: { a: {}, b: {} }, transitions: { t: { in: 'a', out: 'b' } } },
      pruned: [],
    });
  });

  test('an unknown key: reported at the key, and taken out of what is cross-checked', () => {
    const r = checkShape({ places: { a: {} }, transitions: { t: { in: 'zz', colour: 'red' } } });
    expect(r.problems).toEqual([
      { path: ['transitions', 't', 'colour'], atKey: true, message: 'transitions.t: unknown key "colour"' },
    ]);
    expect(r.data).toEqual({ places: { a: {} }, transitions: { t: { in: 'zz' } } });
    expect(r.pruned).toEqual([['transitions', 't', 'colour']]);
  });

  test('a transition without in: taken out whole; a place with bad settings: kept, without them', () => {
    const r = checkShape({ places: { a: 3, b: { capacity: 0 } }, transitions: { t: { out: 'a' }, u: { in: 'a' } } });
    expect(r.problems.map((p) => p.path)).toEqual([
      ['places', 'a'],
      ['places', 'b', 'capacity'],
      ['transitions', 't', 'in'],
    ]);
    expect(r.data).toEqual({ places: { a: {}, b: {} }, transitions: { u: { in: 'a' } } });
    expect(r.pruned).toEqual(
      expect.arrayContaining([
        ['places', 'a'],
        ['places', 'b', 'capacity'],
        ['transitions', 't'],
      ]),
    );
  });

  test('a refused item of a list takes the whole list out (the other items keep their positions)', () => {
    const r = checkShape({ places: { a: {} }, transitions: { t: { in: 'a', inhibit: ['a', 3] } } });
    expect(r.problems.map((p) => p.path)).toEqual([['transitions', 't', 'inhibit', 1]]);
    expect(r.data).toEqual({ places: { a: {} }, transitions: { t: { in: 'a' } } });
  });

  test('no usable places: nothing is left to cross-check', () => {
    expect(checkShape({ places: 3, transitions: { t: { in: 'a' } } }).data).toBeUndefined();
    expect(checkShape({ transitions: { t: { in: 'a' } } }).data).toBeUndefined();
    expect(checkShape(['not', 'a', 'map']).data).toBeUndefined();
  });
});
