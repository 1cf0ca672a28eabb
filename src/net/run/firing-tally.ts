/**
 * What a run's open firings amount to, kept up to date as each firing opens, starts or ends a
 * run of its command, enters or leaves its commit, and closes (OpenFirings calls these at each
 * change, and only OpenFirings changes `running` and `committing`), so that each answer is O(1)
 * or a binary search instead of a walk of the open firings. The answers are those of heldBy
 * (plan/marking.ts) and mayCommit (plan/commit-order.ts), which the simulation uses.
 */
import { SortedKeys } from './sorted-keys.js';
import type { Firing } from './state.js';

interface TransitionTally {
  /** Ordinals of its open firings not committing. */
  readonly ordinals: SortedKeys<number>;
  /** How many of its open firings are committing. */
  committing: number;
}

interface PlaceTally {
  /** Numbers of the tokens the open firings hold in this place. */
  readonly held: SortedKeys<bigint>;
  /** Of those, the ones held by firings not committing (sequence places only: the commit order). */
  readonly waiting: SortedKeys<bigint>;
  /** Open firings that may write into this place. */
  incoming: number;
}

/**
 * Who is told what each change means for the scheduler's view (the run's Scheduler): the tokens a
 * place's open firings hold, the firings on their way into a place, a transition's counts.
 */
export interface TallyListener {
  held(place: string): void;
  incoming(place: string): void;
  transition(name: string): void;
}

const nobody: TallyListener = { held: () => {}, incoming: () => {}, transition: () => {} };

export class FiringTally {
  /** Open firings holding a worker: running, or waiting to be retried. */
  running = 0;
  /** Open firings finished (not running) and not committing: the ones settle() may resolve. */
  readonly finished = new Set<Firing>();
  private readonly transitions = new Map<string, TransitionTally>();
  private readonly places = new Map<string, PlaceTally>();

  constructor(
    private readonly isSequence: (place: string) => boolean,
    private readonly listener: TallyListener = nobody,
  ) {}

  private transition(name: string): TransitionTally {
    let t = this.transitions.get(name);
    if (!t) this.transitions.set(name, (t = { ordinals: new SortedKeys<number>(), committing: 0 }));
    return t;
  }

  private place(name: string): PlaceTally {
    let p = this.places.get(name);
    if (!p)
      this.places.set(name, (p = { held: new SortedKeys<bigint>(), waiting: new SortedKeys<bigint>(), incoming: 0 }));
    return p;
  }

  /** A firing joins the open ones (not committing). */
  opened(f: Firing): void {
    if (f.running) this.running++;
    for (const tok of f.tokens) {
      this.place(tok.place).held.add(tok.seq);
      this.listener.held(tok.place);
    }
    for (const o of new Set(f.transition.outputs)) {
      this.place(o).incoming++;
      this.listener.incoming(o);
    }
    this.enter(f);
  }

  /** A firing leaves the open ones (committed, or dropped). */
  closed(f: Firing): void {
    if (f.running) this.running--;
    for (const tok of f.tokens) {
      this.place(tok.place).held.delete(tok.seq);
      this.listener.held(tok.place);
    }
    for (const o of new Set(f.transition.outputs)) {
      this.place(o).incoming--;
      this.listener.incoming(o);
    }
    if (f.committing) {
      this.transition(f.transition.name).committing--;
      this.listener.transition(f.transition.name);
    } else this.leave(f);
  }

  /** A firing starts running (or waits to be retried, holding its worker), or has finished. */
  setRunning(f: Firing, running: boolean): void {
    if (f.running === running) return;
    f.running = running;
    this.running += running ? 1 : -1;
    if (f.committing) return;
    if (running) this.finished.delete(f);
    else this.finished.add(f);
  }

  /** A firing's commit is asked for, or has ended (refused, or committed). */
  setCommitting(f: Firing, committing: boolean): void {
    if (!!f.committing === committing) return;
    f.committing = committing;
    const t = this.transition(f.transition.name);
    if (committing) {
      t.committing++;
      this.leave(f);
    } else {
      t.committing--;
      this.enter(f);
    }
  }

  /** Among the firings not committing. */
  private enter(f: Firing): void {
    this.transition(f.transition.name).ordinals.add(f.ordinal);
    this.listener.transition(f.transition.name);
    for (const tok of f.tokens) if (this.isSequence(tok.place)) this.place(tok.place).waiting.add(tok.seq);
    if (!f.running) this.finished.add(f);
  }

  /** No longer among the firings not committing. */
  private leave(f: Firing): void {
    this.transition(f.transition.name).ordinals.delete(f.ordinal);
    this.listener.transition(f.transition.name);
    for (const tok of f.tokens) if (this.isSequence(tok.place)) this.place(tok.place).waiting.delete(tok.seq);
    this.finished.delete(f);
  }

  /** A transition's open firings, not committing and committing (for transitionState). */
  counts(transition: string): { open: number; committing: number } {
    const t = this.transitions.get(transition);
    return t ? { open: t.ordinals.size, committing: t.committing } : { open: 0, committing: 0 };
  }

  /**
   * What the open firings mean for a place (as heldBy): the next number past the tokens they hold
   * (starting from `next`), how many they hold, and how many will write into it.
   */
  held(place: string, next: bigint): { next: bigint; claimed: number; incoming: number } {
    const p = this.places.get(place);
    if (!p) return { next, claimed: 0, incoming: 0 };
    const top = p.held.max();
    return { next: top !== undefined && top >= next ? top + 1n : next, claimed: p.held.size, incoming: p.incoming };
  }

  /**
   * Whether f (finished, not committing) may commit now, as mayCommit with the open firings not
   * committing: no earlier firing of its transition (unless `order: none`) among them, and none of
   * them holding a lower number than one of f's tokens of a sequence place.
   */
  mayCommit(f: Firing): boolean {
    if (f.transition.ordered && this.transition(f.transition.name).ordinals.below(f.ordinal) > 0) return false;
    if (f.tokens.length === 1) {
      const a = f.tokens[0]!;
      return !this.isSequence(a.place) || this.place(a.place).waiting.below(a.seq) === 0;
    }
    // A batch, or an and-merge: a lower number held by another firing below f's highest in each
    // place; f's own tokens below it are among those counted, and do not count.
    const top = new Map<string, bigint>();
    for (const a of f.tokens) {
      if (!this.isSequence(a.place)) continue;
      const t = top.get(a.place);
      if (t === undefined || a.seq > t) top.set(a.place, a.seq);
    }
    for (const [place, seq] of top) {
      let own = 0;
      for (const b of f.tokens) if (b.place === place && b.seq < seq) own++;
      if (this.place(place).waiting.below(seq) > own) return false;
    }
    return true;
  }
}
