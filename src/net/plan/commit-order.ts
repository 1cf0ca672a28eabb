/**
 * When a finished firing may commit, shared by the runner and the simulation: only once every
 * firing started before it on the same sequence place has committed (so a sequence place's
 * tokens are consumed in order), and, unless its transition has `order: none`, every earlier
 * firing of its own transition (so outputs appear in input order). A failed firing that is being
 * retried stays in the set, so what comes after it waits.
 */
export interface OrderedFiring {
  transition: { name: string; ordered: boolean };
  /** Position among its transition's firings, in start order. */
  ordinal: number;
  tokens: ReadonlyArray<{ place: string; seq: bigint }>;
}

export function mayCommit<F extends OrderedFiring>(
  f: F,
  open: Iterable<F>,
  isSequence: (place: string) => boolean,
): boolean {
  for (const g of open) {
    if (g === f) continue;
    if (f.transition.ordered && g.transition.name === f.transition.name && g.ordinal < f.ordinal) return false;
    for (const a of f.tokens) {
      if (!isSequence(a.place)) continue;
      if (g.tokens.some((b) => b.place === a.place && b.seq < a.seq)) return false;
    }
  }
  return true;
}
