/**
 * The scheduler: pure decisions, no I/O and no clock of its own, shared by `net run` and
 * `net simulate`. Given the marking (the unclaimed tokens of each place, how full each place is,
 * what is running), it says which firings to start now, on which tokens.
 *
 * - Enabling (enabling.ts): which transitions could start a firing, on which tokens; NOP tokens
 *   (a sender's no-op, or the filler recovery writes for a number whose token was never
 *   written) are consumed without firing and without a worker.
 * - Allocation (shares.ts): free workers go to enabled transitions by the Jefferson/D'Hondt
 *   objective of allocateWorkers (the article: queue length x mean service time / (workers +
 *   1)); each transition is capped by its own `workers`. Ties, and the workers the objective
 *   leaves over, go round-robin from a rotating start, so no enabled transition starves.
 *
 * A Scheduler keeps what it found out about each transition between decisions, and is told what
 * changed since (placeChanged, transitionChanged): a decision looks again only at the
 * transitions those changes touch. `schedule` is one decision of a new Scheduler over a whole marking.
 */
import {
  candidate,
  claimTokens,
  hasRoom,
  inhibited,
  mergeOf,
  nopAtHead,
  type PlaceLookup,
  queueLength,
  watch,
  withoutClaimed,
} from './enabling.js';
import { PairHeap } from './heap.js';
import type { PlaceState, Start, StartTokens, TokenRef, TransitionState } from './marking.js';
import { Shares } from './shares.js';

export type { PlaceState, Start, TokenRef, TransitionState } from './marking.js';

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

export interface SchedulerResult {
  starts: Start[];
  rotation: number;
  /** The earliest time a batch waiting for max-wait becomes due (ms), if any. */
  wakeAt?: number;
}

/** Service time assumed for a transition with no measurements yet (ms). */
export const DEFAULT_SERVICE_MS = 100;

/** Where a Scheduler reads the marking: one place or one transition at a time, when it needs it. */
export interface MarkingSource {
  place(name: string): PlaceState;
  transition(name: string): TransitionState;
}

/** A decision's pool: all workers, how many are free, and the time. */
export interface Pool {
  totalWorkers: number;
  freeWorkers: number;
  now: number;
}

/** A net's shape as the scheduler needs it: its transitions (in round-robin order) and the places' capacities. */
export type TransitionShape = Pick<TransitionState, 'name' | 'inputs' | 'outputs' | 'inhibit'>;

/** What one decision looked at (a test's measure: it must not grow with the places left alone). */
export interface DecisionVisits {
  /** Transitions weighed (some more than once: again after a start touches their places). */
  transitions: number;
  /** Places read from the marking. */
  places: number;
}

export class Scheduler {
  /** Where the round-robin starts at the next decision (moved past each transition started). */
  rotation = 0;
  /** What the last decision looked at. */
  visits: DecisionVisits = { transitions: 0, places: 0 };
  private readonly names: string[];
  /**
   * For each place, the transitions to look at again when it changes: its readers and inhibited transitions, and its
   * writers if it is bounded.
   */
  private readonly deps = new Map<string, number[]>();
  /** The decision's copies of the places and transitions (claims and starts change them). */
  private readonly places = new Map<string, PlaceState>();
  private readonly states: Array<TransitionState | undefined> = [];
  /** Each transition's next firing (tokens), or when its batch is due. */
  private readonly next: Array<{ tokens?: StartTokens; due?: number } | undefined> = [];
  private readonly shares = new Shares();
  /**
   * Batches waiting for their max-wait: when each is due, and its
   * transition (an entry is stale once the transition's due moved).
   */
  private readonly dues = new PairHeap<number, number>();
  private readonly changedPlaces = new Set<string>();
  private readonly changedTransitions = new Set<number>();
  private readonly index = new Map<string, number>();
  /** For each transition, the batch it was last put in (enqueue): a list each, no set per decision. */
  private readonly stamps: number[] = [];
  private stamp = 0;
  /** Places with a capacity: the only ones whose incoming firings matter, to their writers. */
  private readonly bounded = new Set<string>();
  private everything = true;
  private now = 0;
  private readonly defaultServiceTime: number;
  private readonly lookup: PlaceLookup = (name) => this.place(name);

  constructor(
    transitions: Iterable<TransitionShape>,
    places: Iterable<{ name: string; capacity?: number }>,
    private readonly source: MarkingSource,
    opts: { defaultServiceTime?: number } = {},
  ) {
    this.defaultServiceTime = opts.defaultServiceTime ?? DEFAULT_SERVICE_MS;
    const shapes = [...transitions];
    this.names = shapes.map((t) => t.name);
    const bounded = this.bounded;
    for (const p of places) if (p.capacity !== undefined) bounded.add(p.name);
    const deps = new Map<string, Set<number>>();
    const add = (place: string, i: number) => {
      let s = deps.get(place);
      if (!s) deps.set(place, (s = new Set()));
      s.add(i);
    };
    shapes.forEach((t, i) => {
      this.index.set(t.name, i);
      for (const a of t.inputs) add(a.place, i);
      for (const p of t.inhibit) add(p, i);
      for (const o of t.outputs) if (bounded.has(o)) add(o, i);
    });
    for (const [p, s] of deps) this.deps.set(p, [...s]);
  }

  /** A place's tokens, count, claims or incoming firings changed since the last decision. */
  placeChanged(name: string): void {
    if (!this.everything) this.changedPlaces.add(name);
  }

  /** A transition's state (running, stopped, service times, and-merge sets) changed. */
  transitionChanged(name: string): void {
    const i = this.index.get(name);
    if (i !== undefined && !this.everything) this.changedTransitions.add(i);
  }

  /** Look at everything again at the next decision. */
  everythingChanged(): void {
    this.everything = true;
    this.changedPlaces.clear();
    this.changedTransitions.clear();
  }

  /**
   * Decide the firings to start now, in start order; the caller starts
   * all of them, and says what changed before the next decision.
   */
  decide(pool: Pool): SchedulerResult {
    this.visits = { transitions: 0, places: 0 };
    this.now = pool.now;
    const dirty = this.dirty(pool.now);
    for (const i of dirty) this.fetch(i);
    const starts: Start[] = [];
    const again = this.batch();
    for (const i of dirty) this.enqueue(i, again);
    for (const i of dirty) if (!this.states[i]!.stopped) this.nopSkips(i, again, starts);
    for (const i of again) this.evaluate(i);
    let free = pool.freeWorkers;
    const n = this.names.length;
    while (free > 0) {
      const i = this.shares.pick(this.rotation, n, pool.totalWorkers);
      if (i === undefined) break;
      const t = this.states[i]!;
      const start: Start = { transition: t.name, tokens: this.next[i]!.tokens!, skip: false };
      const touched = this.batch();
      this.claim(start, touched);
      t.running++;
      this.changedTransitions.add(i); // read again at the next decision: the caller's view has it by then
      for (const o of t.outputs) {
        if (!this.bounded.has(o)) continue; // what is on its way into a place matters only against a capacity
        this.place(o).incoming++;
        this.changedPlaces.add(o);
        for (const j of this.deps.get(o) ?? []) this.enqueue(j, touched);
      }
      this.enqueue(i, touched);
      for (const j of touched) this.evaluate(j);
      free--;
      starts.push(start);
      this.rotation = (i + 1) % n;
    }
    const wakeAt = pool.freeWorkers > 0 ? this.earliestDue()?.priority : undefined;
    return { starts, rotation: this.rotation, wakeAt };
  }

  /** A new list of transitions to weigh again, each once (enqueue). */
  private batch(): number[] {
    this.stamp++;
    return [];
  }

  /** Put transition i in the current batch, unless it is there already. */
  private enqueue(i: number, batch: number[]): void {
    if (this.stamps[i] === this.stamp) return;
    this.stamps[i] = this.stamp;
    batch.push(i);
  }

  /** The transitions to look at again, in index order; what the caller said changed is forgotten. */
  private dirty(now: number): number[] {
    const dirty = this.batch();
    if (this.everything) {
      this.everything = false;
      this.places.clear();
      for (let i = 0; i < this.names.length; i++) dirty.push(i);
      this.changedPlaces.clear();
      this.changedTransitions.clear();
      return dirty;
    }
    for (const p of this.changedPlaces) {
      this.places.delete(p);
      for (const i of this.deps.get(p) ?? []) this.enqueue(i, dirty);
    }
    for (const i of this.changedTransitions) this.enqueue(i, dirty);
    // Batches whose max-wait has come.
    for (let d = this.earliestDue(); d && d.priority <= now; d = this.earliestDue()) {
      this.enqueue(d.value, dirty);
      this.dues.pop();
    }
    this.changedPlaces.clear();
    this.changedTransitions.clear();
    return dirty.length > 1 ? dirty.sort((a, b) => a - b) : dirty;
  }

  /** The earliest batch still waiting for its max-wait (stale entries on the way are dropped). */
  private earliestDue(): { priority: number; value: number } | undefined {
    for (let d = this.dues.peek(); d; d = this.dues.peek()) {
      if (this.next[d.value]?.due === d.priority) return d;
      this.dues.pop();
    }
    return undefined;
  }

  /** A place, as this decision sees it (read from the marking once). */
  private place(name: string): PlaceState {
    let p = this.places.get(name);
    if (!p) {
      this.visits.places++;
      p = { ...this.source.place(name) };
      watch(p);
      this.places.set(name, p);
    }
    return p;
  }

  /** Read a transition's state from the marking again. */
  private fetch(i: number): TransitionState {
    const t = { ...this.source.transition(this.names[i]!) };
    // An and-merge's sets are found once (when the caller does not keep them), then claims update them.
    t.merge = t.inputs.length > 1 ? mergeOf(t, this.lookup) : undefined;
    this.states[i] = t;
    return t;
  }

  /** Weigh transition i again: its queue, whether it could start a firing, on which tokens. */
  private evaluate(i: number): void {
    this.visits.transitions++;
    const t = this.states[i] ?? this.fetch(i);
    if (t.stopped) {
      this.next[i] = undefined;
      this.shares.set(i, undefined);
      return;
    }
    const places = this.lookup;
    const queue = queueLength(t, places);
    const c =
      t.running < t.workers && !inhibited(t, places) && hasRoom(t, places, this.bounded)
        ? candidate(t, places, this.now)
        : undefined;
    const tokens = c && c.tokens.length > 0 ? c.tokens : undefined;
    const due = c && !tokens ? c.wakeAt : undefined;
    if (due !== undefined && this.next[i]?.due !== due) this.dues.push(due, i);
    this.next[i] = tokens || due !== undefined ? { tokens, due } : undefined;
    const l = queue + t.running;
    const serviceTimes = t.serviceTimes.length ? t.serviceTimes : [this.defaultServiceTime];
    this.shares.set(
      i,
      l > 0
        ? { name: t.name, stats: { queueLength: l, serviceTimes }, running: t.running, ready: !!tokens }
        : undefined,
    );
  }

  /**
   * Claim a start's tokens in this decision's places (so the next candidate looks past them) and
   * in the and-merges' sets; the transitions to weigh again go into `touched`.
   */
  private claim(start: Start, touched: number[]): void {
    claimTokens(start, this.lookup);
    let claimed: Set<TokenRef> | undefined;
    for (const { place } of start.tokens) {
      this.changedPlaces.add(place); // read again at the next decision
      for (const j of this.deps.get(place) ?? []) {
        this.enqueue(j, touched);
        const s = this.states[j];
        if (s?.merge) s.merge = withoutClaimed(s.merge, (claimed ??= new Set(start.tokens.map((x) => x.token))));
      }
    }
  }

  /** NOP tokens transition i consumes now (claimed): at the head of a sequence place, anywhere in an arrival place. */
  private nopSkips(i: number, touched: number[], out: Start[]): void {
    const t = this.states[i]!;
    for (const arc of t.inputs) {
      const p = this.place(arc.place);
      for (let head = nopAtHead(p); head; head = nopAtHead(p)) {
        const s: Start = { transition: t.name, tokens: [{ place: p.name, token: head }], skip: true };
        this.claim(s, touched);
        out.push(s);
      }
    }
  }
}

/**
 * Decide the firings to start now over a whole marking (one decision of a new Scheduler). The
 * input is not modified; what it returns is in start order.
 */
export function schedule(input: SchedulerInput): SchedulerResult {
  const source: MarkingSource = {
    place: (name) => input.places.get(name)!,
    transition: (name) => input.transitions.get(name)!,
  };
  const s = new Scheduler(input.transitions.values(), input.places.values(), source, {
    defaultServiceTime: input.defaultServiceTime,
  });
  s.rotation = input.rotation % Math.max(1, input.transitions.size);
  return s.decide(input);
}
