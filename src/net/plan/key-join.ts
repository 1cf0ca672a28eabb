/**
 * An and-merge's complete sets, kept up to date one token at a time: a token arriving in an input
 * place, a token leaving it (claimed, consumed, gone). The scheduler then finds the next complete
 * set in O(log n) however many tokens wait, not by a scan per decision.
 *
 * The order is the scheduler's: complete sets by the number of their token in the first input
 * place, lowest first; within a key, its tokens in each place pair up by number (the lowest with
 * the lowest). NOP tokens have no partner: they are never added (the scheduler skips them).
 */
import { isMerge, type TransitionSpec } from '../model/model.js';
import { PairHeap } from './heap.js';

/** What the join needs of a token: its number and its key. */
export interface Keyed {
  readonly seq: bigint;
  readonly key: string;
}

/** What the scheduler is shown of an and-merge (see mergeView in marking.ts). */
export interface MergeView<T extends Keyed = Keyed> {
  /** Keys with a token in every input place: the transition's queue length. */
  complete: number;
  /** The first complete sets in order, one token per input arc (in arc order). */
  sets: T[][];
}

/** One key: its tokens in each input place, by number. */
interface Entry<T> {
  lists: T[][];
  /** Input places holding at least one of its tokens. */
  present: number;
  /** The number under which it was last queued in the heap (undefined: not queued). */
  queued?: bigint;
}

/** Insert t into a list sorted by number (usually at its end: tokens arrive in order). */
function insertSorted<T extends Keyed>(list: T[], t: T): void {
  let i = list.length;
  while (i > 0 && list[i - 1]!.seq > t.seq) i--;
  list.splice(i, 0, t);
}

/** The complete sets of one and-merge, by key. */
export class KeyJoin<T extends Keyed> {
  /** For each input place, the arcs (indexes) that read it. */
  private readonly arcsOf = new Map<string, number[]>();
  private readonly arity: number;
  private readonly entries = new Map<string, Entry<T>>();
  /** Complete keys by the number of their first token in the first place (stale entries dropped as read). */
  private readonly heap = new PairHeap<bigint, string>();
  /** Keys with a token in every input place. */
  complete = 0;

  constructor(places: readonly string[]) {
    this.arity = places.length;
    places.forEach((p, i) => this.arcsOf.set(p, [...(this.arcsOf.get(p) ?? []), i]));
  }

  get places(): IterableIterator<string> {
    return this.arcsOf.keys();
  }

  /** A token now present (and free) in an input place; adding it twice adds it once. */
  add(place: string, t: T): void {
    const arcs = this.arcsOf.get(place);
    if (!arcs) return;
    let e = this.entries.get(t.key);
    if (!e) {
      e = { lists: Array.from({ length: this.arity }, () => []), present: 0 };
      this.entries.set(t.key, e);
    }
    for (const a of arcs) {
      const list = e.lists[a]!;
      if (list.includes(t)) continue;
      insertSorted(list, t);
      if (list.length === 1 && ++e.present === this.arity) this.complete++;
    }
    if (e.present === this.arity) this.queue(t.key, e);
  }

  /** A token no longer free in an input place (claimed, consumed or gone); unknown ones are ignored. */
  remove(place: string, t: Keyed): void {
    const arcs = this.arcsOf.get(place);
    const e = arcs && this.entries.get(t.key);
    if (!e) return;
    for (const a of arcs) {
      const list = e.lists[a]!;
      // biome-ignore lint/complexity/useIndexOf: list holds T, and t is a Keyed that may be one of them
      const i = list.findIndex((x) => x === t);
      if (i < 0) continue;
      list.splice(i, 1);
      if (list.length === 0 && e.present-- === this.arity) this.complete--;
    }
    if (e.present === 0) this.entries.delete(t.key);
    else if (e.present === this.arity) this.queue(t.key, e);
  }

  /** A complete key under the number of its first token in the first place (once per number). */
  private queue(key: string, e: Entry<T>): void {
    const seq = e.lists[0]![0]!.seq;
    if (e.queued === seq) return;
    e.queued = seq;
    this.heap.push(seq, key);
    // Stale entries pile up as keys change: rebuild now and then, so the heap stays O(keys).
    if (this.heap.size > 2 * this.entries.size + 64) this.rebuild();
  }

  private rebuild(): void {
    this.heap.clear();
    for (const [key, e] of this.entries) {
      e.queued = undefined;
      if (e.present === this.arity) {
        e.queued = e.lists[0]![0]!.seq;
        this.heap.push(e.queued, key);
      }
    }
  }

  /** The entry a heap entry stands for, if it is still current. */
  private current(seq: bigint, key: string): Entry<T> | undefined {
    const e = this.entries.get(key);
    if (e === undefined || e.queued !== seq) return undefined;
    if (e.present !== this.arity || e.lists[0]![0]!.seq !== seq) {
      e.queued = undefined; // queued again when complete again
      return undefined;
    }
    return e;
  }

  /**
   * The first `limit` complete sets in order. The first `limit` sets come from the first `limit`
   * keys (a later key's sets all come after one set of each of those), so this pops at most that
   * many live heap entries, and puts them back: O(limit x (limit + log n)).
   */
  first(limit: number): T[][] {
    const taken: Array<{ priority: bigint; value: string }> = [];
    const keys = new Set<string>();
    const sets: T[][] = [];
    while (keys.size < limit && this.heap.size > 0) {
      const top = this.heap.pop();
      const e = this.current(top.priority, top.value);
      if (!e || keys.has(top.value)) continue; // stale, or a second copy (dropped: one stays)
      keys.add(top.value);
      taken.push(top);
      const depth = Math.min(limit, ...e.lists.map((l) => l.length));
      for (let i = 0; i < depth; i++) sets.push(e.lists.map((l) => l[i]!));
    }
    for (const t of taken) this.heap.push(t.priority, t.value);
    sets.sort((a, b) => (a[0]!.seq < b[0]!.seq ? -1 : a[0]!.seq > b[0]!.seq ? 1 : 0));
    return sets.slice(0, limit);
  }

  /** What the scheduler is shown: how many keys are complete, and the first `limit` sets. */
  view(limit: number): MergeView<T> {
    return { complete: this.complete, sets: this.first(limit) };
  }
}

/** The joins of a run's and-merges, by transition name; a token reaches every join reading its place. */
export class MergeJoins<T extends Keyed> {
  readonly byTransition = new Map<string, KeyJoin<T>>();
  private readonly byPlace = new Map<string, Array<KeyJoin<T>>>();

  constructor(transitions: Iterable<TransitionSpec>) {
    for (const t of transitions) {
      if (!isMerge(t)) continue;
      const j = new KeyJoin<T>(t.inputs.map((a) => a.place));
      this.byTransition.set(t.name, j);
      for (const p of j.places) this.byPlace.set(p, [...(this.byPlace.get(p) ?? []), j]);
    }
  }

  reads(place: string): boolean {
    return this.byPlace.has(place);
  }

  add(place: string, t: T): void {
    for (const j of this.byPlace.get(place) ?? []) j.add(place, t);
  }

  remove(place: string, t: Keyed): void {
    for (const j of this.byPlace.get(place) ?? []) j.remove(place, t);
  }

  /** An and-merge's view for the scheduler (undefined for another transition). */
  view(t: TransitionSpec): MergeView<T> | undefined {
    return this.byTransition.get(t.name)?.view(t.workers);
  }
}
