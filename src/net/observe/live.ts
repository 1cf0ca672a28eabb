/**
 * The live state a running `net run` keeps in STATE/live.json (rewritten atomically about twice
 * a second): what the directories can't tell, such as what is running, counts of firings and
 * failures, service times and stopped transitions. `net status` and `net serve` read it; when no
 * run holds the net's lock, the file is history, not the present.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isLocked } from '../../lock.js';
import type { LastFailure, TransitionRates } from './metrics.js';

export interface LiveTransition {
  running: number;
  /** Firings finished and waiting for their turn to commit (or to be retried). */
  waiting: number;
  fired: number;
  failed: number;
  retried: number;
  lastFired?: number;
  stopped?: { reason: string; log: string; at: number };
  /** Recent service times, ms. */
  serviceTimes: number[];
  history: Array<{ firing: string; key: string; at: number; ms: number; ok: boolean; reason?: string }>;
  /** Rates and service times at updatedAt (metrics.ts TransitionMonitor). */
  rates?: TransitionRates;
  /** The last failed attempt, with the end of its stderr. */
  lastFailure?: LastFailure;
}

export interface LiveState {
  pid: number;
  startedAt: number;
  updatedAt: number;
  stopping: boolean;
  /** The transitions that have done something in this run (the others are idle: nothing running, nothing fired). */
  transitions: Record<string, LiveTransition>;
  /** Tokens per place as the run's index holds them, places holding none left out (status and serve count the directories). */
  places?: Record<string, number>;
}

export function liveStatePath(stateDir: string): string {
  return path.join(stateDir, 'live.json');
}

export function writeLiveState(stateDir: string, state: LiveState): void {
  const file = liveStatePath(stateDir);
  const temp = `${file}.${process.pid}.tmp`;
  // Not fsynced: a view for status and the web page, rewritten twice a second by a live run.
  fs.writeFileSync(temp, JSON.stringify(state));
  fs.renameSync(temp, file);
}

/** The last live state, and whether a run holds the net now. */
export function readLiveState(stateDir: string): { state?: LiveState; running: boolean } {
  const running = isLocked(path.join(stateDir, 'run.lock'));
  try {
    return { state: JSON.parse(fs.readFileSync(liveStatePath(stateDir), 'utf8')) as LiveState, running };
  } catch {
    return { running };
  }
}
