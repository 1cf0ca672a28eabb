/**
 * The run's decisions (src/net/run/decisions.ts): told what changed, each decision looks at what
 * changed and nothing else, and decides as a decision over the whole marking would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net, type NetDefinition } from 'filespooler';
import { expect, test } from 'vitest';
import { netDir, tokensIn } from '../helpers.js';

/** A chain a -> b -> c of moves, beside `idle` places each read by a move of its own, with nothing in them. */
function withIdle(idle: number): Net {
  const dir = netDir();
  const def: NetDefinition = {
    dir,
    places: { a: {}, b: {}, c: {} },
    transitions: { m1: { in: 'a', out: 'b', run: null }, m2: { in: 'b', out: 'c', run: null } },
  };
  for (let i = 0; i < idle; i++) {
    def.places[`q${i}`] = {};
    def.transitions[`u${i}`] = { in: `q${i}`, run: null };
  }
  const net = Net.define(def);
  net.init();
  return net;
}

test("a decision's work does not grow with the places left alone", async () => {
  const visits = async (idle: number) => {
    const net = withIdle(idle);
    for (let i = 0; i < 40; i++) await net.put('a', Buffer.from(`${i}\n`), { key: `k${i}` });
    const seen: Array<{ transitions: number; places: number }> = [];
    const summary = await net.run({ drain: true, workers: 2, decisionProbe: (v) => seen.push({ ...v }) });
    expect(summary.fired).toBe(80);
    expect((await tokensIn(path.join(net.model.dir, 'places/c'))).length).toBe(40);
    return seen;
  };
  const few = await visits(10);
  const many = await visits(2000);
  // The first decision reads everything; every later one only what changed since.
  expect(many[0]!.transitions).toBeGreaterThanOrEqual(2002);
  const worst = (seen: Array<{ transitions: number; places: number }>) =>
    Math.max(...seen.slice(1).map((v) => v.transitions + v.places));
  expect(worst(few)).toBeLessThanOrEqual(24);
  expect(worst(many)).toBeLessThanOrEqual(24);
}, 60_000);

test('10,000 places, each read by a transition with no output: every token fires once', async () => {
  const n = 10_000;
  const dir = netDir();
  const def: NetDefinition = { dir, places: {}, transitions: {} };
  for (let i = 0; i < n; i++) {
    def.places[`q${i}`] = {};
    def.transitions[`t${i}`] = { in: `q${i}`, run: null };
  }
  const net = Net.define(def);
  net.init();
  // One token in every 20th place, two in every 100th: the rest stay idle.
  const filled: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const place = `q${i}`;
    filled.push(place);
    await net.put(place, Buffer.from('x'), { key: `k${i}` });
    if (i % 100 === 0) await net.put(place, Buffer.from('y'), { key: `k${i}b` });
  }
  const summary = await net.run({ drain: true, workers: 2 });
  expect(summary.fired).toBe(filled.length + n / 100);
  expect(summary.leftovers).toEqual([]);
  for (const place of filled) expect(fs.readdirSync(path.join(dir, 'places', place, 'jobs'))).toEqual([]);
}, 60_000);

test('decisions over capacities, inhibitors, batches, and-merges, ' +
  'retries and error places match decisions from scratch', async () => {
  const dir = netDir();
  let calls = 0;
  const net = Net.define({
    dir,
    places: { a: {}, b: { capacity: 2 }, c: {}, l: {}, r: {}, m: {}, hold: {}, d: {}, bad: {}, e: {} },
    transitions: {
      // Every third call fails once, and is retried.
      first: {
        in: 'a',
        out: 'b',
        workers: 3,
        retries: 1,
        fn: async (ctx) => (++calls % 3 === 0 ? Promise.reject(new Error('once')) : `${ctx.key}\n`),
      },
      batch: { in: { place: 'b', take: 3, 'max-wait': 0.05 }, out: 'c', run: null },
      merge: { in: ['l', 'r'], out: 'm', workers: 2, run: null },
      held: { in: 'm', out: 'd', inhibit: ['hold'], run: null },
      failing: {
        in: 'd',
        out: 'e',
        error: 'bad',
        fn: (ctx) => (ctx.key.endsWith('3') ? Promise.reject(new Error('no')) : undefined),
      },
    },
  });
  net.init();
  for (let i = 0; i < 10; i++) {
    await net.put('a', Buffer.from(`${i}\n`), { key: `k${i}` });
    await net.put('r', Buffer.from(`r${i}\n`), { key: `k${i}` });
  }
  for (let i = 9; i >= 0; i--) await net.put('l', Buffer.from(`l${i}\n`), { key: `k${i}` });
  const summary = await net.run({ drain: true, workers: 3, checkDecisions: true });
  // Batches of up to 3 (b holds 2 at most: they fire with what there is after max-wait).
  expect(
    (await tokensIn(path.join(dir, 'places/a'))).length + (await tokensIn(path.join(dir, 'places/b'))).length,
  ).toBe(0);
  expect((await tokensIn(path.join(dir, 'places/c'))).length).toBeGreaterThanOrEqual(4);
  expect(
    (await tokensIn(path.join(dir, 'places/e'))).length + (await tokensIn(path.join(dir, 'places/bad'))).length,
  ).toBe(10);
  expect(summary.leftovers).toEqual([]);
}, 60_000);
