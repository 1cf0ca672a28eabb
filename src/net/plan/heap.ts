/**
 * The two moves of a binary heap kept in parallel arrays (no object per entry): the caller says
 * which entry goes first (`before`) and how two entries trade places (`swap`).
 */

/** Move entry i up until its parent goes before it. */
export function siftUp(i: number, before: (a: number, b: number) => boolean, swap: (a: number, b: number) => void): void {
  while (i > 0) {
    const up = (i - 1) >> 1;
    if (!before(i, up)) return;
    swap(i, up);
    i = up;
  }
}

/** Move entry i down (among the first n) until both its children come after it. */
export function siftDown(i: number, n: number, before: (a: number, b: number) => boolean, swap: (a: number, b: number) => void): void {
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
