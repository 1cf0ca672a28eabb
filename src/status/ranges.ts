/** Sequence numbers as runs ("7-9, 12"), as queue-status reports waiting and skipped jobs. */

/** An inclusive run of sequence numbers. */
export interface SeqRange {
  first: bigint;
  last: bigint;
}

/** Sorted, distinct sequence numbers as runs: [1, 2, 3, 7] gives 1-3 and 7-7. */
export function toRanges(sortedUnique: readonly bigint[]): SeqRange[] {
  const out: SeqRange[] = [];
  for (const s of sortedUnique) {
    const last = out[out.length - 1];
    if (last && s === last.last + 1n) last.last = s;
    else out.push({ first: s, last: s });
  }
  return out;
}

/** Runs as text: "7-9, 12". Beyond `max` runs, the rest are counted: "..., 40 (3 more runs)". */
export function formatRanges(ranges: readonly SeqRange[], max = Infinity): string {
  const text = ranges
    .slice(0, max)
    .map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`))
    .join(', ');
  return ranges.length > max ? `${text}, ... (${ranges.length - max} more runs)` : text;
}
