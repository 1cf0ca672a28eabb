/** Unit tests of the heap moves (src/net/plan/heap.ts). */
import { expect, it } from 'vitest';
import { siftDown, siftUp, swapIn } from '../../../src/net/plan/heap.js';

it('siftUp and siftDown keep a min-heap in parallel arrays: popping gives the values in order, names alongside', () => {
  const vals: number[] = [];
  const names: string[] = [];
  const before = (i: number, j: number) => vals[i]! < vals[j]!;
  const swap = (i: number, j: number) => swapIn([vals, names], i, j);
  const input = [5, 3, 9, 1, 7, 2, 8, 6, 4, 0];
  for (const v of input) {
    vals.push(v);
    names.push(`n${v}`);
    siftUp(vals.length - 1, before, swap);
  }
  const out: string[] = [];
  while (vals.length) {
    out.push(names[0]!);
    vals[0] = vals[vals.length - 1]!;
    names[0] = names[names.length - 1]!;
    vals.pop();
    names.pop();
    siftDown(0, vals.length, before, swap);
  }
  expect(out).toEqual([...input].sort((a, b) => a - b).map((v) => `n${v}`));
});
