/**
 * What a run keeps in memory about its firings and its transitions (nothing here is durable: a
 * crash loses it, and recovery needs none of it).
 */
import type { TransitionSpec } from '../model/model.js';
import type { LiveState } from '../observe/live.js';
import type { TransitionMonitor } from '../observe/metrics.js';
import type { ServiceTimeEstimator } from '../plan/service-time.js';
import type { Token } from '../place/token.js';
import type { FiringOutcome } from './firing.js';

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
  running: boolean;
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

/** The run as the live state shows it (observe/live.ts): its transitions, and each place's token count. */
export function liveState(runs: Iterable<TransitionRun>, firings: Set<Firing>, startedAt: number, now: number, stopping: boolean, placeCounts: Array<[string, number]>): LiveState {
  return {
    pid: process.pid,
    startedAt,
    updatedAt: now,
    stopping,
    transitions: Object.fromEntries(
      [...runs].map((r) => [
        r.spec.name,
        {
          running: r.running,
          waiting: [...firings].filter((f) => f.transition === r.spec && !f.running).length,
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
    places: Object.fromEntries(placeCounts),
  };
}
