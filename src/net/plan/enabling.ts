/**
 * Enabling: what one transition could start on the marking, read from the places it touches and
 * nothing else (its input places, its inhibiting places, its bounded output places). The
 * scheduler (scheduler.ts) asks these for the transitions whose places changed, and claims the
 * tokens of each start here, so that the next question looks past them.
 *
 * - A transition with one input place takes its tokens in the place's order: for a sequence place
 *   the next numbers with no gap (as queue-process), for an arrival place the lowest numbers
 *   present. A batch (`take: N`) waits for N tokens, or for what there is once the oldest has
 *   waited `max-wait`.
 * - An and-merge fires on one token of each input place with one key (its complete sets, from
 *   its join, key-join.ts); keys still missing a partner wait and block nothing.
 * - An inhibited transition (a token in any `inhibit` place) is disabled.
 * - A firing that could push an output place past its capacity, counting the tokens already on
 *   their way there (and not the ones that running firings have taken from it: the commit that
 *   would overfill it waits for them to leave), does not start.
 * - NOP tokens are consumed without firing: at the head of a sequence place, anywhere in an
 *   arrival place.
 */
import { KeyJoin, type MergeView } from './key-join.js';
import type { PlaceState, Start, StartTokens, TokenRef, TransitionState } from './marking.js';

/** The places as one decision sees them, by name (its own copies: claims change them). */
export type PlaceLookup = (name: string) => PlaceState;

/**
 * available()'s last answer for each place copy of a decision (claim() gives a copy a new tokens
 * array), since candidate and queueLength ask it several times per start.
 */
const lastAvailable = new WeakMap<PlaceState, { tokens: TokenRef[] | undefined; next: bigint; run: TokenRef[] }>();

/** Remember available()'s answers for this place copy. */
export function watch(p: PlaceState): void {
  lastAvailable.set(p, { tokens: undefined, next: p.next, run: [] });
}

/** The tokens a reader may take now, in order: a gap-free run from `next`, or all by number. */
function available(p: PlaceState): TokenRef[] {
  const last = lastAvailable.get(p);
  if (last && last.tokens === p.tokens && last.next === p.next) return last.run;
  const run = availableNow(p);
  if (last) {
    last.tokens = p.tokens;
    last.next = p.next;
    last.run = run;
  }
  return run;
}

function availableNow(p: PlaceState): TokenRef[] {
  if (p.order === 'arrival') return p.tokens.filter((t) => !t.nop);
  const out: TokenRef[] = [];
  let want = p.next;
  for (const t of p.tokens) {
    if (t.seq < want) continue;
    if (t.seq !== want || t.nop) break;
    out.push(t);
    want++;
  }
  return out;
}

/** An and-merge's complete sets: as the caller keeps them, or found in the places' tokens. */
export function mergeOf(t: TransitionState, places: PlaceLookup): MergeView<TokenRef> {
  if (t.merge) return t.merge;
  const j = new KeyJoin<TokenRef>(t.inputs.map((a) => a.place));
  for (const a of t.inputs) for (const tok of places(a.place).tokens) if (!tok.nop) j.add(a.place, tok);
  return j.view(Infinity);
}

/** The next firing a transition could start on the current marking, without claiming it. */
export function candidate(
  t: TransitionState,
  places: PlaceLookup,
  now: number,
): { tokens: StartTokens; wakeAt?: number } | undefined {
  if (t.inputs.length === 1) {
    const arc = t.inputs[0]!;
    const p = places(arc.place);
    const run = available(p);
    if (run.length === 0) return undefined;
    if (run.length >= arc.take) return { tokens: run.slice(0, arc.take).map((token) => ({ place: p.name, token })) };
    if (arc.maxWait === undefined) return undefined;
    const due = run[0]!.seen + arc.maxWait * 1000;
    if (now >= due) return { tokens: run.map((token) => ({ place: p.name, token })) };
    return { tokens: [], wakeAt: due };
  }
  // And-merge: the earliest complete set (claims drop the sets a start has taken from).
  const set = mergeOf(t, places).sets[0];
  return set && { tokens: set.map((token, i) => ({ place: t.inputs[i]!.place, token })) };
}

/** How many firings a transition could start on the current marking (its queue length). */
export function queueLength(t: TransitionState, places: PlaceLookup): number {
  if (t.inputs.length === 1) {
    const arc = t.inputs[0]!;
    return Math.ceil(available(places(arc.place)).length / arc.take);
  }
  return mergeOf(t, places).complete;
}

export function inhibited(t: TransitionState, places: PlaceLookup): boolean {
  return t.inhibit.some((name) => places(name).count > 0);
}

/** Whether each of its bounded output places has room for one more token. */
export function hasRoom(t: TransitionState, places: PlaceLookup, bounded: ReadonlySet<string>): boolean {
  return t.outputs.every((name) => {
    if (!bounded.has(name)) return true;
    const p = places(name);
    return p.capacity === undefined || p.count - (p.claimed ?? 0) + p.incoming + 1 <= p.capacity;
  });
}

/** Claim a start's tokens in the places (so the next candidate looks past them). */
export function claimTokens(start: Start, places: PlaceLookup): void {
  for (const { place, token } of start.tokens) {
    const p = places(place);
    p.tokens = p.tokens.filter((x) => x !== token);
    p.claimed = (p.claimed ?? 0) + 1;
    if (p.order === 'sequence' && token.seq >= p.next) p.next = token.seq + 1n;
  }
}

/**
 * An and-merge's sets once tokens are claimed: a set with a claimed token is gone, and a key with
 * no set left is no longer complete. The same view when none of its sets is touched.
 */
export function withoutClaimed(merge: MergeView<TokenRef>, claimed: ReadonlySet<TokenRef>): MergeView<TokenRef> {
  const gone = merge.sets.filter((set) => set.some((tok) => claimed.has(tok)));
  if (gone.length === 0) return merge;
  const sets = merge.sets.filter((set) => !gone.includes(set));
  const keys = new Set(gone.map((set) => set[0]!.key));
  for (const set of sets) keys.delete(set[0]!.key);
  return { complete: merge.complete - keys.size, sets };
}

/** The NOP token a transition would consume next in one of its places, if any. */
export function nopAtHead(p: PlaceState): TokenRef | undefined {
  const head = p.order === 'sequence' ? p.tokens.find((x) => x.seq >= p.next) : p.tokens.find((x) => x.nop);
  if (!head?.nop || (p.order === 'sequence' && head.seq !== p.next)) return undefined;
  return head;
}
