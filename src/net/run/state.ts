/**
 * What a run keeps in memory about its firings and its transitions (nothing here is durable: a
 * crash loses it, and recovery needs none of it).
 */

import { GROUP_MAX } from '../commit/commit.js';
import type { IoFaults } from '../commit/io-faults.js';
import type { TransitionSpec } from '../model/model.js';
import type { Token } from '../place/token.js';
import type { MergeView } from '../plan/key-join.js';
import { transitionState } from '../plan/marking.js';
import { DEFAULT_SERVICE_MS, type TokenRef, type TransitionState } from '../plan/scheduler.js';
import { SERVICE_WINDOW, ServiceTimeEstimator } from '../plan/service-time.js';
import type { FiringOutcome } from './fire-transition.js';
import type { LiveState } from './live.js';
import { TransitionMonitor } from './monitor.js';

/** A firing from its start to its commit. */
export interface Firing {
  id: string;
  transition: TransitionSpec;
  key: string;
  tokens: Token[];
  attempt: number;
  started: number;
  dir: string;
  outcome?: FiringOutcome;
  /** Ordinal among the transition's firings, for commit order. */
  ordinal: number;
  /** How many firings the run began before it (ties in the commit order go by it). */
  begun: number;
  /** Holds a worker: running, or waiting to be retried. Changed through OpenFirings only (its tally counts it). */
  running: boolean;
  /** Aborts this firing alone (`net pause --kill`); the run's stop aborts every firing. */
  stop?: AbortController;
  /**
   * Asked to commit, its group not yet ended: it blocks nothing behind it (commits keep their
   * order). Changed through OpenFirings only (its tally counts it).
   */
  committing?: boolean;
  /** How often it waited for a full disk or an I/O error to pass (its backoff grows with it). */
  diskWaits?: number;
  /** Its command failed while the disk of the staging files was full: that error (io-faults.ts stagingFull). */
  stagingFull?: NodeJS.ErrnoException;
  /** It holds a later number of a sequence place than a token refused at its firing: it must not commit. */
  voided?: boolean;
}

export interface TransitionRun {
  spec: TransitionSpec;
  running: number;
  stopped?: { reason: string; log: string; at: number };
  /** Recent service times (ms), for the allocation. */
  service: ServiceTimeEstimator;
  fired: number;
  failed: number;
  retried: number;
  lastFired?: number;
  nextOrdinal: number;
  history: Array<{ firing: string; key: string; at: number; ms: number; ok: boolean; reason?: string }>;
  monitor: TransitionMonitor;
}

/** Whether a transition has done nothing yet in this run: the live state leaves it out (it reads as idle). */
function untouched(r: TransitionRun, waiting: number): boolean {
  return (
    r.running === 0 &&
    waiting === 0 &&
    r.fired === 0 &&
    r.failed === 0 &&
    r.retried === 0 &&
    !r.stopped &&
    r.history.length === 0 &&
    r.service.count === 0 &&
    !r.monitor.lastFailure
  );
}

/**
 * The run as the live state shows it (run/live.ts): its transitions, and each place's token
 * count. Transitions that have done nothing yet and places holding nothing are left out (readers
 * take them as idle and empty), so that a net of 10,000 places, most of them idle, does not write
 * 10,000 entries twice a second.
 */
export function liveState(
  runs: Iterable<TransitionRun>,
  firings: Set<Firing>,
  startedAt: number,
  now: number,
  stopping: boolean,
  placeCounts: Array<[string, number]>,
  faults?: IoFaults,
): LiveState {
  // Finished firings waiting to commit, by transition: one walk of the open firings, not one per transition.
  const waiting = new Map<TransitionSpec, number>();
  for (const f of firings) if (!f.running) waiting.set(f.transition, (waiting.get(f.transition) ?? 0) + 1);
  return {
    pid: process.pid,
    startedAt,
    updatedAt: now,
    stopping,
    transitions: Object.fromEntries(
      [...runs]
        .filter((r) => !untouched(r, waiting.get(r.spec) ?? 0))
        .map((r) => [
          r.spec.name,
          {
            running: r.running,
            waiting: waiting.get(r.spec) ?? 0,
            fired: r.fired,
            failed: r.failed,
            retried: r.retried,
            lastFired: r.lastFired,
            stopped: r.stopped,
            serviceTimes: r.service.count ? r.service.samples() : [],
            history: r.history,
            rates: r.monitor.snapshot(now),
            lastFailure: r.monitor.lastFailure,
          },
        ]),
    ),
    places: Object.fromEntries(placeCounts.filter(([, n]) => n > 0)),
    ...(faults?.any ? { ioFaults: faults.list() } : {}),
    ...(faults && faults.counts().length > 0 ? { ioErrors: faults.counts() } : {}),
  };
}

/** A transition of the run before its first firing. */
export function newTransitionRun(spec: TransitionSpec): TransitionRun {
  return {
    spec,
    running: 0,
    service: new ServiceTimeEstimator(SERVICE_WINDOW, DEFAULT_SERVICE_MS),
    fired: 0,
    failed: 0,
    retried: 0,
    nextOrdinal: 0,
    history: [],
    monitor: new TransitionMonitor(),
  };
}

/**
 * A transition as the scheduler sees it (halted while the run stops; a paused one starts
 * nothing), an and-merge with its complete sets (mergeView).
 */
export function transitionStateOf(
  r: TransitionRun,
  counts: { open: number; committing: number },
  stopping: boolean,
  paused: boolean,
  mergeView: (t: TransitionSpec) => MergeView<TokenRef> | undefined,
): TransitionState {
  // A transition's workers bound its commands running at once. Up to two groups' worth (2 × GROUP_MAX)
  // of firings waiting to commit hold none, so that the next group fills while one commits; beyond
  // that they count again, so that the open firings stay few. `counts` are the tally's.
  const halted = !!r.stopped || stopping || paused;
  const open = counts.open + Math.max(0, counts.committing - 2 * GROUP_MAX);
  return transitionState(r.spec, open, halted, r.service.samples(), mergeView(r.spec));
}

/** How often the live state is written at most (ms). */
export const LIVE_EVERY_MS = 500;

/**
 * The share of the run's time the live state may take: a net of thousands of busy transitions,
 * whose state takes milliseconds to build and write, writes it less often than every
 * LIVE_EVERY_MS (a drain of 1,000 places spent 3-4 % of its CPU on it, twice a second).
 */
export const LIVE_SHARE = 0.01;

/**
 * A task run at most every `everyMs`, and no more often than keeps its own time within `share`
 * of the time that passes (a task that took 20 ms runs again 2 s later at 1 %): asked sooner, it
 * runs once that time is up, so that the last change shows even if nothing asks again (the live
 * state when the run goes quiet).
 */
export class Throttled {
  private last = 0;
  /** The time to wait after the last run: everyMs, or more if that run took longer than share allows. */
  private gap: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly everyMs: number,
    private readonly task: (now: number) => void,
    private readonly share = 1,
  ) {
    this.gap = everyMs;
  }

  /** Run the task now if it last ran long enough ago (or force), else once that time is up. */
  run(force = false): void {
    const now = Date.now();
    if (!force && now - this.last < this.gap) {
      // Written later all the same, so the last change shows even if the run then goes quiet.
      this.timer ??= setTimeout(
        () => {
          this.timer = undefined;
          this.run(true);
        },
        this.gap - (now - this.last),
      ).unref();
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.last = now;
    const started = performance.now();
    this.task(now);
    // At most 20 times everyMs: one slow write (a collection, a busy disk) must not hide the run for long.
    this.gap = Math.min(20 * this.everyMs, Math.max(this.everyMs, (performance.now() - started) / this.share));
  }

  /** Forget a pending run. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
