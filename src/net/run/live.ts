/**
 * The live state a running `net run` keeps in STATE/live.json (rewritten atomically about twice
 * a second): what the directories can't tell, such as what is running, counts of firings and
 * failures, service times and stopped transitions. `net status` and `net serve` read it; when no
 * run holds the net's lock, the file is history, not the present.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isLocked } from '../../sys/lock.js';
import { openForWriting, writeFresh } from '../../sys/untrusted.js';
import type { IoErrorCount, PlaceFault } from '../commit/io-faults.js';
import type { LastFailure, TransitionRates } from './monitor.js';

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
  /** Tokens per place as the run's index holds them, places holding none left out. */
  places?: Record<string, number>;
  /** Places whose disk is full or failing now (or `(state)`, the state directory's), and since when. */
  ioFaults?: PlaceFault[];
  /** I/O errors met over the run, by place and error (absent when none). */
  ioErrors?: IoErrorCount[];
}

export function liveStatePath(stateDir: string): string {
  return path.join(stateDir, 'live.json');
}

export function writeLiveState(stateDir: string, state: LiveState): void {
  const file = liveStatePath(stateDir);
  const temp = `${file}.${process.pid}.tmp`;
  const text = JSON.stringify(state);
  // Not fsynced: a view for status and the web page, rewritten about twice a second by a live run.
  try {
    writeFresh(temp, text, 0o666);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC' && (err as NodeJS.ErrnoException).code !== 'EDQUOT') throw err;
    // The state's disk is full: the file is written over in place, in the blocks it has (a reader
    // may meet it half-written, and reads it again on its next look), so that status still
    // says what the run waits for.
    writeInPlace(file, text);
    return;
  }
  fs.renameSync(temp, file);
}

/** Overwrite a file's bytes without a new file: its own blocks first (on a full disk, what it grows by may not fit). */
function writeInPlace(file: string, text: string): void {
  const fd = openForWriting(file, { mode: 0o644 });
  try {
    const data = Buffer.from(text);
    fs.writeSync(fd, data, 0, data.length, 0);
    fs.ftruncateSync(fd, data.length);
  } finally {
    fs.closeSync(fd);
  }
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
