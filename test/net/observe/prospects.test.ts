/**
 * What can still happen in a net: which transitions may fire, which places may still receive, and so which leftovers
 * are stuck.
 */

import { defineNet, type NetDefinition } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { type NetModel, readersOf, writersOf } from '../../../src/net/model/model.js';
import { mayStillCome, type NetNow, prospects } from '../../../src/net/observe/prospects.js';
import type { Leftover, LeftoverCode } from '../../../src/net/run/leftovers.js';

const net = (transitions: NetDefinition['transitions'], places: string[]): NetModel =>
  defineNet({ dir: '/nonexistent-prospects', places: Object.fromEntries(places.map((p) => [p, {}])), transitions });

function now(tokens: Record<string, number>, extra: Partial<NetNow> = {}): NetNow {
  return { holds: (p) => tokens[p] ?? 0, open: new Set(), stopped: new Set(), ...extra };
}

const sorted = (s: ReadonlySet<string>) => [...s].sort();

/** The video net's shape: an and-branch, an xor-branch, an xor-merge, an and-merge. */
const VIDEO = net(
  {
    decode: { in: 'inbox', run: null, out: 'decoded' },
    split: { in: 'decoded', run: null, out: ['audio', 'video'] },
    triage: { in: 'video', run: 'true', out: { 'one-of': ['shaky', 'steady'] } },
    stabilize: { in: 'shaky', run: null, out: 'stabilized', error: 'failed' },
    pass: { in: 'steady', run: null, out: 'stabilized' },
    mux: { in: ['audio', 'stabilized'], run: null, out: 'done' },
  },
  ['inbox', 'decoded', 'audio', 'video', 'shaky', 'steady', 'stabilized', 'done', 'failed'],
);

describe('prospects', () => {
  test('tokens upstream reach every place downstream of them, and only those', () => {
    const p = prospects(VIDEO, now({ video: 1, audio: 1 }));
    expect(sorted(p.mayFire)).toEqual(['mux', 'pass', 'stabilize', 'triage']);
    expect(sorted(p.mayReceive)).toEqual(['done', 'failed', 'shaky', 'stabilized', 'steady']);
  });

  test('an and-merge may fire only when every input has tokens or may receive some', () => {
    expect(prospects(VIDEO, now({ stabilized: 1 })).mayFire.has('mux')).toBe(false);
    expect(prospects(VIDEO, now({ stabilized: 1, inbox: 1 })).mayFire.has('mux')).toBe(true);
  });

  test('an open firing (its tokens already taken) still brings its outputs', () => {
    const p = prospects(VIDEO, now({ audio: 1 }, { open: new Set(['split']) }));
    expect(p.mayReceive.has('stabilized')).toBe(true);
    expect(p.mayFire.has('mux')).toBe(true);
  });

  test('a stopped transition brings nothing, even with its tokens there or a firing open', () => {
    const p = prospects(
      VIDEO,
      now({ audio: 1, shaky: 1 }, { stopped: new Set(['stabilize']), open: new Set(['stabilize']) }),
    );
    expect(p.mayFire.has('stabilize')).toBe(false);
    expect(p.mayReceive.has('stabilized')).toBe(false);
  });

  test('a batch without max-wait needs its full count; with max-wait, one token', () => {
    const shape = (maxWait?: number) =>
      net({ b: { in: { place: 'x', take: 3, ...(maxWait ? { 'max-wait': maxWait } : {}) }, run: null, out: 'y' } }, [
        'x',
        'y',
      ]);
    expect(prospects(shape(), now({ x: 2 })).mayReceive.has('y')).toBe(false);
    expect(prospects(shape(), now({ x: 3 })).mayReceive.has('y')).toBe(true);
    expect(prospects(shape(5), now({ x: 1 })).mayReceive.has('y')).toBe(true);
  });

  test('a cycle with nothing in it stays dead; one token anywhere in it wakes it all', () => {
    const ring = net({ f: { in: 'x', run: null, out: 'y' }, g: { in: 'y', run: null, out: 'x' } }, ['x', 'y']);
    expect(prospects(ring, now({})).mayReceive.size).toBe(0);
    expect(sorted(prospects(ring, now({ y: 1 })).mayReceive)).toEqual(['x', 'y']);
  });

  test('a place another host feeds may always receive', () => {
    const p = prospects(VIDEO, now({}, { fedFromElsewhere: new Set(['steady']) }));
    expect(sorted(p.mayReceive)).toEqual(['stabilized', 'steady']);
  });

  test('a long chain is followed to its end (one pass over the arcs)', () => {
    const n = 2000;
    const transitions: NetDefinition['transitions'] = {};
    for (let i = 0; i < n; i++) transitions[`t${i}`] = { in: `p${i}`, run: null, out: `p${i + 1}` };
    const chain = net(
      transitions,
      Array.from({ length: n + 1 }, (_, i) => `p${i}`),
    );
    const p = prospects(chain, now({ p0: 1 }));
    expect(p.mayReceive.size).toBe(n);
    expect(p.mayReceive.has(`p${n}`)).toBe(true);
  });
});

describe('stuck or waiting', () => {
  const left = (code: LeftoverCode, on?: string[]): Leftover => ({
    place: 'x',
    seq: 1n,
    key: 'k',
    filename: 'f',
    code,
    reason: code,
    on,
  });
  const judge = (model: NetModel, l: Leftover, n: NetNow) =>
    mayStillCome(
      l,
      prospects(model, n),
      n,
      (p) => readersOf(model, p),
      (p) => writersOf(model, p),
    );

  test('no partner: waiting while every place that lacks it may still receive', () => {
    expect(judge(VIDEO, left('no-partner', ['stabilized']), now({ audio: 1, steady: 1 }))).toBe(true);
    expect(judge(VIDEO, left('no-partner', ['stabilized']), now({ audio: 1 }))).toBe(false);
  });

  test('stopped and below-next are stuck; paused waits for its resume', () => {
    expect(judge(VIDEO, left('stopped'), now({ inbox: 1 }))).toBe(false);
    expect(judge(VIDEO, left('below-next'), now({ inbox: 1 }))).toBe(false);
    expect(judge(VIDEO, left('paused'), now({}))).toBe(true);
  });

  test('a missing number waits only while a writer of its place has a firing open', () => {
    expect(judge(VIDEO, left('waits-for-number', ['decoded']), now({ inbox: 3 }))).toBe(false);
    expect(judge(VIDEO, left('waits-for-number', ['decoded']), now({}, { open: new Set(['decode']) }))).toBe(true);
  });

  test('room and inhibitors wait for a reader that may still fire', () => {
    expect(judge(VIDEO, left('no-room', ['decoded']), now({ decoded: 1 }))).toBe(true);
    expect(judge(VIDEO, left('no-room', ['decoded']), now({ decoded: 1 }, { stopped: new Set(['split']) }))).toBe(
      false,
    );
    // a sink: nothing in the net empties it
    expect(judge(VIDEO, left('no-room', ['done']), now({ done: 5 }))).toBe(false);
    expect(judge(VIDEO, left('inhibited', ['stabilized']), now({ stabilized: 1 }))).toBe(false);
    expect(judge(VIDEO, left('inhibited', ['stabilized']), now({ stabilized: 1, audio: 1 }))).toBe(true);
  });
});
