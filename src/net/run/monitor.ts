/**
 * What the runner keeps per transition for monitoring (a TransitionMonitor: rates, service
 * times, the last failure), built on the pure pieces in stats.ts; its snapshot goes into
 * STATE/live.json, which `net status` reads (observe/). Nothing here reads a clock or a file:
 * time is always passed in.
 */
import { RateWindow, TransitionStats, timeSince } from './stats.js';

const MINUTE_MS = 60_000;
/** A transition that failed this recently (or is stopped) is "failing". */
export const FAILING_FOR_MS = 5 * MINUTE_MS;
/** Characters of a failure's stderr kept in the live state. */
const STDERR_KEPT = 2048;

/** The last failed attempt of a transition. */
export interface LastFailure {
  /** When it failed, ms since the epoch. */
  at: number;
  key: string;
  reason: string;
  /** The end of its stderr (at most 2 KiB). */
  stderrTail: string;
  /** Where its whole stderr was kept (STATE/logs/...), when it was not retried. */
  log?: string;
}

/** A TransitionMonitor's figures at one moment (written into live.json). */
export interface TransitionRates {
  /** Successful firings per minute, over the last minute and the last 15 minutes. */
  perMinute1: number;
  perMinute15: number;
  /** Failed attempts (retried or not) per minute over the last 15 minutes. */
  failedPerMinute15: number;
  /** Over the last 1000 successful firings, ms; absent before the first. */
  meanServiceMs?: number;
  p95ServiceMs?: number;
}

/** What the runner keeps per transition for monitoring: rates, service times, the last failure. */
export class TransitionMonitor {
  readonly stats = new TransitionStats();
  readonly failures = new RateWindow();
  lastFailure?: LastFailure;

  /** A firing committed at `now` after running `serviceMs`. */
  fired(now: number, serviceMs: number): void {
    this.stats.fired(now, Math.max(0, serviceMs));
  }

  /** An attempt failed at `now`. */
  failed(now: number, f: Omit<LastFailure, 'at'>): void {
    this.failures.record(now);
    this.lastFailure = { at: now, ...f, stderrTail: f.stderrTail.slice(-STDERR_KEPT) };
  }

  snapshot(now: number): TransitionRates {
    const s = this.stats.snapshot(now);
    return {
      perMinute1: s.perMinute1,
      perMinute15: s.perMinute15,
      failedPerMinute15: this.failures.perMinute(now, 15 * MINUTE_MS),
      meanServiceMs: s.meanServiceMs,
      p95ServiceMs: s.p95ServiceMs,
    };
  }
}

/** Whether a transition counts as failing at `now`: stopped, or an attempt failed recently. */
export function isFailing(t: { stopped?: unknown; lastFailure?: { at: number } }, now: number): boolean {
  return (
    !!t.stopped || (t.lastFailure !== undefined && (timeSince(now, t.lastFailure.at) ?? Infinity) < FAILING_FOR_MS)
  );
}
