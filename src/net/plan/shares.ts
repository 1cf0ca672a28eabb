/**
 * The pool's shares (the Jefferson/D'Hondt objective of allocate.ts) and the pick of the next
 * firing, kept up to date one transition at a time, so that a decision costs the same with 50
 * transitions or 10,000.
 *
 * allocateWorkers hands the W workers out one at a time, each to the stage whose next worker
 * lowers the objective most (v / ((w + 1)(w + 2)), v = queue length x mean service time), ties to
 * the stage first in round-robin order. A stage's first worker gains v / 2, more than any of its
 * later ones, so the stages that get a worker at all are the first of the ranking by v (heaviest
 * first, ties in round-robin order), at most W of them: allocateWorkers over those few gives the
 * same counts as over every stage. Stages with nothing queued and nothing running weigh nothing
 * and are left out of the ranking; a stage that weighs nothing never takes a worker from one
 * that weighs more.
 *
 * The pick is then the ready stage furthest below its share (share minus running; ties in
 * round-robin order): one of the at most W stages with a share, or, among the ready ones without,
 * the one running fewest, first in round-robin order (ready stages are kept by how many they run).
 */
import {
  allocateWorkers,
  compareWeights,
  type StageStats,
  type StageWeight,
  sameStats,
  weighStage,
} from './allocate.js';
import { IndexSet } from './index-set.js';

/** A transition as the allocation sees it (only while it has something queued or running). */
export interface StageState {
  /** For error messages. */
  name: string;
  /** Its queue length (the firings it could start, plus the ones it runs) and service times. */
  stats: StageStats;
  /** The firings it counts as running: its deficit is its share minus these. */
  running: number;
  /** Whether it could start a firing now. */
  ready: boolean;
}

/** Stages of one weight (exactly), by index. */
interface Group {
  readonly w: StageWeight;
  readonly members: IndexSet;
}

interface Held {
  readonly w: StageWeight;
  readonly group: Group;
  readonly running: number;
  readonly ready: boolean;
}

export class Shares {
  /** The ranking: every stage held, in groups of one weight, heaviest first. */
  private readonly groups: Group[] = [];
  /** Ready stages by how many firings they run. */
  private readonly ready = new Map<number, IndexSet>();
  /** The keys of `ready`, ascending. */
  private readonly readyKeys: number[] = [];
  private readonly stages = new Map<number, Held>();

  /** Stage i as it is now; undefined when it has nothing queued or running (or is halted). */
  set(i: number, s: StageState | undefined): void {
    const h = this.stages.get(i);
    if (h && s && h.running === s.running && h.ready === s.ready && sameStats(h.w.stats, s.stats)) return; // as it was
    this.remove(i);
    if (!s) return;
    const w = weighStage(s.stats, s.name);
    const group = this.groupOf(w);
    group.members.add(i);
    this.stages.set(i, { w, group, running: s.running, ready: s.ready });
    if (s.ready) this.bucket(s.running).add(i);
  }

  private remove(i: number): void {
    const h = this.stages.get(i);
    if (!h) return;
    this.stages.delete(i);
    h.group.members.delete(i);
    if (h.group.members.size === 0) this.groups.splice(this.find(h.w).at, 1);
    if (!h.ready) return;
    const b = this.ready.get(h.running)!;
    b.delete(i);
    if (b.size > 0) return;
    this.ready.delete(h.running);
    this.readyKeys.splice(this.readyKeys.indexOf(h.running), 1);
  }

  /** Where the group of weight w is in the ranking (found), or would go. */
  private find(w: StageWeight): { at: number; found: boolean } {
    let lo = 0;
    let hi = this.groups.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const c = compareWeights(this.groups[mid]!.w, w);
      if (c === 0) return { at: mid, found: true };
      if (c > 0) lo = mid + 1;
      else hi = mid;
    }
    return { at: lo, found: false };
  }

  private groupOf(w: StageWeight): Group {
    const { at, found } = this.find(w);
    if (found) return this.groups[at]!;
    const g = { w, members: new IndexSet() };
    this.groups.splice(at, 0, g);
    return g;
  }

  private bucket(running: number): IndexSet {
    let b = this.ready.get(running);
    if (b) return b;
    this.ready.set(running, (b = new IndexSet()));
    let k = this.readyKeys.length;
    while (k > 0 && this.readyKeys[k - 1]! > running) k--;
    this.readyKeys.splice(k, 0, running);
    return b;
  }

  /**
   * The ready stage to start next, with `workers` in the pool and the round-robin order starting
   * at index `rotation` of `n`; undefined when none is ready.
   */
  pick(rotation: number, n: number, workers: number): number | undefined {
    if (this.readyKeys.length === 0) return undefined; // nothing could start: no need for the shares
    const place = (i: number) => (i - rotation + n) % n;
    const share = this.shares(rotation, n, workers, place);
    let pick: number | undefined;
    let best = -Infinity;
    let bestPlace = Infinity;
    const consider = (i: number, deficit: number): void => {
      const at = place(i);
      if (deficit > best || (deficit === best && at < bestPlace)) {
        pick = i;
        best = deficit;
        bestPlace = at;
      }
    };
    for (const [i, k] of share) {
      const h = this.stages.get(i)!;
      if (h.ready) consider(i, k - h.running);
    }
    // Without a share: the one running fewest, first in round-robin order.
    for (const running of this.readyKeys) {
      for (const i of this.ready.get(running)!.from(rotation)) {
        if (share.has(i)) continue;
        consider(i, -running);
        return pick;
      }
    }
    return pick;
  }

  /** The stages with a share (> 0) of `workers`, and their shares. */
  private shares(rotation: number, n: number, workers: number, place: (i: number) => number): Map<number, number> {
    const out = new Map<number, number>();
    if (workers <= 0) return out;
    // allocateWorkers gives tied workers to the names that sort first: the stages are named by
    // their place in the round-robin order, so that ties go round (Perpetuum).
    const stats = new Map<string, StageStats>();
    const alias = new Map<string, number>();
    const width = String(n).length;
    outer: for (const g of this.groups) {
      for (const i of g.members.from(rotation)) {
        const id = String(place(i)).padStart(width, '0');
        stats.set(id, this.stages.get(i)!.w.stats);
        alias.set(id, i);
        if (stats.size >= workers) break outer;
      }
    }
    if (stats.size === 0) return out;
    for (const [id, k] of allocateWorkers(workers, stats, new Set())!) if (k > 0) out.set(alias.get(id)!, k);
    return out;
  }
}
