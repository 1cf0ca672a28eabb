/** The sorted set of transitions' indexes (src/net/plan/index-set.ts). */
import { expect, it } from 'vitest';
import { IndexSet } from '../../../src/net/plan/index-set.js';

it('holds each index once, and walks them in round-robin order from any start', () => {
  const s = new IndexSet();
  for (const i of [5, 1, 9, 5, 3]) s.add(i);
  expect(s.size).toBe(4);
  expect([...s.from(0)]).toEqual([1, 3, 5, 9]);
  expect([...s.from(4)]).toEqual([5, 9, 1, 3]);
  expect([...s.from(9)]).toEqual([9, 1, 3, 5]);
  expect([...s.from(10)]).toEqual([1, 3, 5, 9]);
  s.delete(3);
  s.delete(4);
  expect(s.has(3)).toBe(false);
  expect(s.has(9)).toBe(true);
  expect([...s.from(2)]).toEqual([5, 9, 1]);
});
