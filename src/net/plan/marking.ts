/**
 * The scheduler's input (scheduler.ts) as the runner and the simulation both build it: how many
 * of a place's tokens the scheduler is shown, what the open firings mean for a place, and a
 * transition's state. One formula each, so that the simulation does what the runner does. Its
 * types (a place's and a transition's state, a start's claim) are here, below the scheduler and
 * its enabling rules, which both read them.
 */
import type { InputArc, TransitionSpec } from '../model/model.js';
import type { MergeView } from './key-join.js';

/** A token as the scheduler sees it. */
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

/** A start's tokens, per input arc in arc order. */
export type StartTokens = Array<{ place: string; token: TokenRef }>;

export interface Start {
  transition: string;
  /** Claimed tokens per input arc, in arc order; a batch is in sequence order. */
  tokens: StartTokens;
  /** A NOP token consumed with no firing (no worker, no command). */
  skip: boolean;
}

/**
 * How many of a place's tokens the scheduler is shown, given the transitions that read it: as
 * many as its readers could take at once, plus NOPs ahead. An and-merge finds its sets by key in
 * its join (key-join.ts), not in this head of the place, which it needs only for NOPs.
 */
export function lookaheadOf(readers: readonly TransitionSpec[]): number {
  return readers.reduce((n, t) => n + t.workers * Math.max(...t.inputs.map((a) => a.take)), 0) + 64;
}

/** A firing started and not yet committed, as the marking sees it. */
export interface OpenFiring {
  transition: TransitionSpec;
  tokens: ReadonlyArray<{ place: string; seq: bigint }>;
}

/**
 * What the open firings mean for a place: how many of its tokens they hold (claimed), the next
 * number past those (starting from the place's next), and how many will write into it (incoming).
 */
export function heldBy(
  place: string,
  next: bigint,
  open: Iterable<OpenFiring>,
): { next: bigint; claimed: number; incoming: number } {
  let incoming = 0;
  let claimed = 0;
  for (const f of open) {
    for (const tok of f.tokens) {
      if (tok.place !== place) continue;
      claimed++;
      if (tok.seq >= next) next = tok.seq + 1n;
    }
    if (f.transition.outputs.includes(place)) incoming++;
  }
  return { next, claimed, incoming };
}

/** A transition as the scheduler sees it. */
export function transitionState(
  t: TransitionSpec,
  running: number,
  stopped: boolean,
  serviceTimes: number[],
  merge?: MergeView<TokenRef>,
): TransitionState {
  return {
    name: t.name,
    inputs: t.inputs,
    outputs: t.outputs,
    inhibit: t.inhibit,
    workers: t.workers,
    running,
    stopped,
    serviceTimes,
    merge,
  };
}
