/**
 * The two moves of a binary heap kept in parallel arrays (no object per entry): the caller says
 * which entry goes first (`before`) and how two entries trade places (`swap`).
 */

/** Move entry i up until its parent goes before it. */
export function siftUp(
  i: number,
  before: (a: number, b: number) => boolean,
  swap: (a: number, b: number) => void,
): void {
  while (i > 0) {
    const up = (i - 1) >> 1;
    if (!before(i, up)) return;
    swap(i, up);
    i = up;
  }
}

/** Move entry i down (among the first n) until both its children come after it. */
export function siftDown(
  i: number,
  n: number,
  before: (a: number, b: number) => boolean,
  swap: (a: number, b: number) => void,
): void {
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < n && before(l, m)) m = l;
    if (r < n && before(r, m)) m = r;
    if (m === i) return;
    swap(i, m);
    i = m;
  }
}

/** Trade entries i and j in each of the parallel arrays. */
export function swapIn(arrays: ReadonlyArray<unknown[]>, i: number, j: number): void {
  for (const a of arrays) {
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/**
 * A min-heap of (priority, value) pairs in two parallel arrays (no object per entry), the lowest
 * priority first: an and-merge's complete keys by number (key-join.ts), batches by when they are
 * due (scheduler.ts).
 */
export class PairHeap<P extends number | bigint, V> {
  private priorities: P[] = [];
  private values: V[] = [];

  get size(): number {
    return this.priorities.length;
  }

  private readonly before = (i: number, j: number): boolean => this.priorities[i]! < this.priorities[j]!;

  private readonly swap = (i: number, j: number): void => swapIn([this.priorities, this.values], i, j);

  push(priority: P, value: V): void {
    this.priorities.push(priority);
    this.values.push(value);
    siftUp(this.priorities.length - 1, this.before, this.swap);
  }

  /** The lowest pair, left in the heap; undefined when it is empty. */
  peek(): { priority: P; value: V } | undefined {
    return this.priorities.length > 0 ? { priority: this.priorities[0]!, value: this.values[0]! } : undefined;
  }

  /** Take the lowest pair out (the heap must not be empty). */
  pop(): { priority: P; value: V } {
    const top = { priority: this.priorities[0]!, value: this.values[0]! };
    const priority = this.priorities.pop()!;
    const value = this.values.pop()!;
    if (this.priorities.length > 0) {
      this.priorities[0] = priority;
      this.values[0] = value;
      siftDown(0, this.priorities.length, this.before, this.swap);
    }
    return top;
  }

  clear(): void {
    this.priorities = [];
    this.values = [];
  }
}
