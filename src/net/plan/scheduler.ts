/**
 * The scheduler: pure decisions, no I/O and no clock of its own, shared by `net run` and
 * `net simulate`. Given the marking (the unclaimed tokens of each place, how full each place is,
 * what is running), it says which firings to start now, on which tokens.
 *
 * - Enabling. A transition with one input place takes its tokens in the place's order: for a
 *   sequence place the next numbers with no gap (as queue-process), for an arrival place the
 *   lowest numbers present. A batch (`take: N`) waits for N tokens, or for what there is once
 *   the oldest has waited `max-wait`. An and-merge fires on one token of each input place with
 *   one key; keys still missing a partner wait and block nothing. An inhibited transition (a
 *   token in any `inhibit` place) is disabled. A firing that could push an output place past its
 *   capacity, counting the tokens already on their way there (and not the ones that running
 *   firings have taken from it: the commit that would overfill it waits for them to leave),
 *   does not start.
 * - Allocation. Free workers go to enabled transitions by the Jefferson/D'Hondt objective of
 *   allocateWorkers (the article: queue length x mean service time / (workers + 1)); each
 *   transition is capped by its own `workers`. Ties, and the workers the objective leaves over,
 *   go round-robin from a rotating start, so no enabled transition starves (Perpetuum).
 * - NOP tokens (a sender's no-op, or the filler recovery writes for a number whose token was
 *   never written) are consumed without firing and without a worker.
 */
import { allocateWorkers } from './allocate.js';
import { KeyJoin, type MergeView } from './key-join.js';
import type { InputArc } from '../model/model.js';

export interface TokenRef {
  filename: string;
  seq: bigint;
  key: string;
  /** ms when first seen. */
  seen: number;
  nop: boolean;
}

export interface PlaceState {
  name: string;
  order: 'sequence' | 'arrival';
  /** For sequence places: the next number to claim (nextseq, past what is already claimed). */
  next: bigint;
  /** Unclaimed tokens, sorted by sequence number. */
  tokens: TokenRef[];
  /** Tokens in the place, claimed or not (what counts against the capacity). */
  count: number;
  /** Tokens on their way in: one per running firing that may write here. */
  incoming: number;
  /**
   * Of `count`, the tokens that firings have claimed: they leave when those firings commit. A
   * producer may start while they are still there; its commit waits for room (the runner checks
   * the place under its writers' lock), which is "blocking after service" in a pipeline.
   */
  claimed?: number;
  capacity?: number;
}

export interface TransitionState {
  name: string;
  inputs: InputArc[];
  outputs: string[];
  inhibit: string[];
  /** The transition's own cap on simultaneous firings. */
  workers: number;
  running: number;
  /** A transition that failed with no error place stops; it starts nothing more. */
  stopped: boolean;
  /** Recent service times in ms (for the allocation); empty until it has data. */
  serviceTimes: number[];
  /**
   * An and-merge's complete sets, kept up to date by the caller (key-join.ts), so that its
   * places need show only their head (NOPs): O(1) in the tokens waiting. Without it, the sets
   * are found in the places' tokens (which must then be all of them).
   */
  merge?: MergeView<TokenRef>;
}

export interface SchedulerInput {
  places: Map<string, PlaceState>;
  transitions: Map<string, TransitionState>;
  /** The pool: all workers, and how many are free now. */
  totalWorkers: number;
  freeWorkers: number;
  now: number;
  /** Where the round-robin starts this time (the previous result's `rotation`). */
  rotation: number;
  /** Service time assumed for a transition with no measurements yet (ms). */
  defaultServiceTime?: number;
}

export interface Start {
  transition: string;
  /** Claimed tokens per input arc, in arc order; a batch is in sequence order. */
  tokens: Array<{ place: string; token: TokenRef }>;
  /** A NOP token consumed with no firing (no worker, no command). */
  skip: boolean;
}

export interface SchedulerResult {
  starts: Start[];
  rotation: number;
  /** The earliest time a batch waiting for max-wait becomes due (ms), if any. */
  wakeAt?: number;
}

/** Service time assumed for a transition with no measurements yet (ms). */
export const DEFAULT_SERVICE_MS = 100;

/** The next firing a transition could start on the current marking, without claiming it. */
function candidate(t: TransitionState, places: Map<string, PlaceState>, now: number): { tokens: Array<{ place: string; token: TokenRef }>; wakeAt?: number } | undefined {
  if (t.inputs.length === 1) {
    const arc = t.inputs[0]!;
    const p = places.get(arc.place)!;
    const run = available(p);
    if (run.length === 0) return undefined;
    if (run.length >= arc.take) return { tokens: run.slice(0, arc.take).map((token) => ({ place: p.name, token })) };
    if (arc.maxWait === undefined) return undefined;
    const due = run[0]!.seen + arc.maxWait * 1000;
    if (now >= due) return { tokens: run.map((token) => ({ place: p.name, token })) };
    return { tokens: [], wakeAt: due };
  }
  // And-merge: the earliest complete set (claim() drops the sets a start has taken from).
  const set = mergeOf(t, places).sets[0];
  return set && { tokens: set.map((token, i) => ({ place: t.inputs[i]!.place, token })) };
}

/** An and-merge's complete sets: as the caller keeps them, or found in the places' tokens. */
function mergeOf(t: TransitionState, places: Map<string, PlaceState>): MergeView<TokenRef> {
  if (t.merge) return t.merge;
  const j = new KeyJoin<TokenRef>(t.inputs.map((a) => a.place));
  for (const a of t.inputs) for (const tok of places.get(a.place)!.tokens) if (!tok.nop) j.add(a.place, tok);
  return j.view(Infinity);
}

/**
 * available()'s last answer for each place of a schedule() call (its own copies: nothing else
 * changes them, and claim() gives a place a new tokens array): candidate, queueLength and
 * doneTransitions ask it several times per start, each a walk of the place's head.
 */
const lastAvailable = new WeakMap<PlaceState, { tokens: TokenRef[] | undefined; next: bigint; run: TokenRef[] }>();

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

/** How many firings a transition could start on the current marking (its queue length). */
export function queueLength(t: TransitionState, places: Map<string, PlaceState>): number {
  if (t.inputs.length === 1) {
    const arc = t.inputs[0]!;
    return Math.ceil(available(places.get(arc.place)!).length / arc.take);
  }
  return mergeOf(t, places).complete;
}

function inhibited(t: TransitionState, places: Map<string, PlaceState>): boolean {
  return t.inhibit.some((name) => places.get(name)!.count > 0);
}

function hasRoom(t: TransitionState, places: Map<string, PlaceState>): boolean {
  return t.outputs.every((name) => {
    const p = places.get(name)!;
    return p.capacity === undefined || p.count - (p.claimed ?? 0) + p.incoming + 1 <= p.capacity;
  });
}

/**
 * Claim a start's tokens in the marking (so the next candidate looks past them), and in the
 * and-merges' sets: a set with a claimed token is gone, and a key with no set left is no longer
 * complete.
 */
function claim(start: Start, places: Map<string, PlaceState>, transitions: Map<string, TransitionState>): void {
  const claimed = new Set<TokenRef>();
  for (const { place, token } of start.tokens) {
    const p = places.get(place)!;
    p.tokens = p.tokens.filter((x) => x !== token);
    p.claimed = (p.claimed ?? 0) + 1;
    if (p.order === 'sequence' && token.seq >= p.next) p.next = token.seq + 1n;
    claimed.add(token);
  }
  for (const t of transitions.values()) {
    if (!t.merge) continue;
    const gone = t.merge.sets.filter((set) => set.some((tok) => claimed.has(tok)));
    if (gone.length === 0) continue;
    const sets = t.merge.sets.filter((set) => !gone.includes(set));
    const keys = new Set(gone.map((set) => set[0]!.key));
    for (const set of sets) keys.delete(set[0]!.key);
    t.merge = { complete: t.merge.complete - keys.size, sets };
  }
}

/** NOP tokens to consume now: at the head of a sequence place, anywhere in an arrival place. */
function nopSkips(t: TransitionState, places: Map<string, PlaceState>, transitions: Map<string, TransitionState>): Start[] {
  const out: Start[] = [];
  for (const arc of t.inputs) {
    const p = places.get(arc.place)!;
    for (;;) {
      const head = p.order === 'sequence' ? p.tokens.find((x) => x.seq >= p.next) : p.tokens.find((x) => x.nop);
      if (!head || !head.nop || (p.order === 'sequence' && head.seq !== p.next)) break;
      const s: Start = { transition: t.name, tokens: [{ place: p.name, token: head }], skip: true };
      claim(s, places, transitions);
      out.push(s);
    }
  }
  return out;
}

/**
 * Transitions that can never fire again, as the article's "done" stages: stopped, or nothing to
 * fire, nothing running, and nothing upstream that could still feed them (no transition writing
 * one of their input places is running, has tokens to fire, or is itself fed). Tokens that arrive
 * from outside the net (put) make a transition live again at the next decision.
 */
export function doneTransitions(transitions: Map<string, TransitionState>, places: Map<string, PlaceState>): Set<string> {
  const live = new Set<string>();
  for (const t of transitions.values()) if (!t.stopped && (t.running > 0 || queueLength(t, places) > 0)) live.add(t.name);
  for (let grew = true; grew; ) {
    grew = false;
    const fed = new Set<string>();
    for (const t of transitions.values()) if (live.has(t.name)) for (const o of t.outputs) fed.add(o);
    for (const t of transitions.values()) {
      if (live.has(t.name) || t.stopped) continue;
      if (t.inputs.some((a) => fed.has(a.place))) {
        live.add(t.name);
        grew = true;
      }
    }
  }
  return new Set([...transitions.keys()].filter((n) => !live.has(n)));
}

/**
 * Decide the firings to start now. The input is not modified; what it returns is in start order.
 */
export function schedule(input: SchedulerInput): SchedulerResult {
  // Each place copied, not its tokens: claim() gives a place a new array, never changes one.
  const places = new Map([...input.places].map(([k, p]) => [k, { ...p }]));
  for (const p of places.values()) lastAvailable.set(p, { tokens: undefined, next: p.next, run: [] });
  // An and-merge's sets are found once (when the caller does not keep them), then claims update them.
  const transitions = new Map([...input.transitions].map(([k, t]) => [k, { ...t, merge: t.inputs.length > 1 ? mergeOf(t, places) : undefined }]));
  const names = [...transitions.keys()];
  const starts: Start[] = [];
  let wakeAt: number | undefined;
  for (const t of transitions.values()) if (!t.stopped) starts.push(...nopSkips(t, places, transitions));

  let free = input.freeWorkers;
  let rotation = input.rotation % Math.max(1, names.length);
  while (free > 0) {
    // Which transitions could start a firing now.
    const ready = new Map<string, { tokens: Array<{ place: string; token: TokenRef }> }>();
    for (const t of transitions.values()) {
      if (t.stopped || t.running >= t.workers || inhibited(t, places) || !hasRoom(t, places)) continue;
      const c = candidate(t, places, input.now);
      if (!c) continue;
      if (c.tokens.length === 0) {
        if (c.wakeAt !== undefined) wakeAt = wakeAt === undefined ? c.wakeAt : Math.min(wakeAt, c.wakeAt);
        continue;
      }
      ready.set(t.name, c);
    }
    if (ready.size === 0) break;
    // The objective's share for each transition, over the whole pool.
    // allocateWorkers gives tied workers to the names that sort first: the stages are named here
    // by their place in the round-robin order, so that ties go round (Perpetuum), not always to
    // the same transition.
    const stats = new Map<string, { queueLength: number; serviceTimes: number[] }>();
    const alias = new Map<string, string>();
    const doneNames = doneTransitions(transitions, places);
    const done = new Set<string>();
    for (let i = 0; i < names.length; i++) {
      const t = transitions.get(names[(rotation + i) % names.length]!)!;
      const id = String(i).padStart(8, '0');
      alias.set(id, t.name);
      if (doneNames.has(t.name)) done.add(id);
      const q = queueLength(t, places) + t.running;
      stats.set(id, { queueLength: q, serviceTimes: t.serviceTimes.length ? t.serviceTimes : [input.defaultServiceTime ?? DEFAULT_SERVICE_MS] });
    }
    const share = new Map([...(allocateWorkers(input.totalWorkers, stats, done) ?? [])].map(([id, n]) => [alias.get(id)!, n]));
    // The ready transition furthest below its share; ties (and no one below) in round-robin order.
    let pick: string | undefined;
    let best = -Infinity;
    for (let i = 0; i < names.length; i++) {
      const name = names[(rotation + i) % names.length]!;
      if (!ready.has(name)) continue;
      const deficit = (share.get(name) ?? 0) - transitions.get(name)!.running;
      if (deficit > best) {
        best = deficit;
        pick = name;
      }
    }
    const t = transitions.get(pick!)!;
    const start: Start = { transition: t.name, tokens: ready.get(t.name)!.tokens, skip: false };
    claim(start, places, transitions);
    for (const o of t.outputs) places.get(o)!.incoming++;
    t.running++;
    free--;
    starts.push(start);
    rotation = (names.indexOf(t.name) + 1) % names.length;
  }
  return { starts, rotation, wakeAt };
}
