/**
 * A set of transitions' indexes kept sorted, for the round-robin questions of the scheduler
 * (shares.ts): "the members from index r on, then from 0". A change costs a binary search and a
 * memmove; a question, a binary search and the members it walks.
 */
/** How many of the sorted `keys` are below k (where k is, or would go): a binary search. */
export function lowerBound<K extends number | bigint>(keys: readonly K[], k: K): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[mid]! < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class IndexSet {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  /** Where i is, or would go. */
  private at(i: number): number {
    return lowerBound(this.items, i);
  }

  has(i: number): boolean {
    const k = this.at(i);
    return this.items[k] === i;
  }

  add(i: number): void {
    const n = this.items.length;
    if (n === 0 || this.items[n - 1]! < i) {
      this.items.push(i);
      return;
    }
    const k = this.at(i);
    if (this.items[k] !== i) this.items.splice(k, 0, i);
  }

  delete(i: number): void {
    const k = this.at(i);
    if (this.items[k] === i) this.items.splice(k, 1);
  }

  /** The members in round-robin order from `start`: those >= start, then those below it. */
  *from(start: number): IterableIterator<number> {
    const items = this.items;
    const k = this.at(start);
    for (let j = k; j < items.length; j++) yield items[j]!;
    for (let j = 0; j < k && j < items.length; j++) yield items[j]!;
  }
}
