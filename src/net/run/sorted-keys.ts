/**
 * A multiset of numbers (or bigints) kept sorted in an array, for the run's counts of its open
 * firings (firing-tally.ts): "how many are below k" is a binary search. Keys come and go mostly in
 * order, which an array does in O(1); one out of order costs a short memmove.
 */
import { lowerBound } from '../plan/index-set.js';

export class SortedKeys<K extends number | bigint> {
  private readonly keys: K[] = [];

  get size(): number {
    return this.keys.length;
  }

  /** How many keys are below k (where k would go). */
  below(k: K): number {
    return lowerBound(this.keys, k);
  }

  add(k: K): void {
    const n = this.keys.length;
    if (n === 0 || this.keys[n - 1]! <= k) this.keys.push(k);
    else this.keys.splice(this.below(k), 0, k);
  }

  /** Remove one k (none if it holds none). */
  delete(k: K): void {
    const i = this.below(k);
    if (i >= this.keys.length || this.keys[i] !== k) return;
    if (i === 0) this.keys.shift();
    else this.keys.splice(i, 1);
  }

  max(): K | undefined {
    return this.keys[this.keys.length - 1];
  }
}
