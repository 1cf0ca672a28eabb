/**
 * The scheduler's input (scheduler.ts) as the runner and the simulation both build it: how many
 * of a place's tokens the scheduler is shown, what the open firings mean for a place, and a
 * transition's state. One formula each, so that the simulation does what the runner does.
 */
import type { TransitionSpec } from '../model/model.js';
import type { MergeView } from './key-join.js';
import type { TokenRef, TransitionState } from './scheduler.js';

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
export function heldBy(place: string, next: bigint, open: Iterable<OpenFiring>): { next: bigint; claimed: number; incoming: number } {
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
export function transitionState(t: TransitionSpec, running: number, stopped: boolean, serviceTimes: number[], merge?: MergeView<TokenRef>): TransitionState {
  return { name: t.name, inputs: t.inputs, outputs: t.outputs, inhibit: t.inhibit, workers: t.workers, running, stopped, serviceTimes, merge };
}
