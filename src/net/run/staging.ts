/**
 * Staging: where a firing's files live until its commit copies them into tokens (its output, its
 * stderr, a batch's stdin, an and-merge's input payloads), and how they go once the firing is
 * done with them.
 *
 * All of them are in the run's one staging directory, named by the firing (its transition, id
 * and attempt: the prefix `dir`), so no directory is made or removed per firing. A firing run as
 * another user gets a directory of its own (`dir`), which that user owns.
 *
 * Removal is swept: the names of every firing dropped while a sweep is under way go together in
 * the next one, a single batch of unlinks on one of libuv's pool threads (fs-batch.ts). One
 * promise-based unlink per name was one hand-off to the pool each, four or five a command firing,
 * most of them failing with ENOENT (an error object with its stack): on 2 busy cores those
 * wake-ups cost more than the unlinks themselves.
 *
 * Durability: none needed. Staging files are scratch: their contents reach a token only through
 * a `.part` that the commit fsyncs (commit.ts), and staging/ is emptied at every open of the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type BatchOp, runBatch } from '../../sys/fs-batch.js';
import type { TransitionSpec } from '../model/model.js';
import type { RunAs } from './permissions.js';

/** A firing's staging files, by what they hold. */
export interface StagingFiles {
  stderr: string;
  stdout: string;
  batch: string;
  out(place: string): string;
  in(place: string): string;
}

/** A firing's files: under the prefix `dir`, or in the directory `dir` when it runs as another user. */
export function stagingOf(dir: string, runAs: RunAs | undefined): StagingFiles {
  const at = runAs ? `${dir}${path.sep}f` : dir;
  return { stderr: `${at}.stderr`, stdout: `${at}.stdout`, batch: `${at}.batch`, out: (p) => `${at}.out-${p}`, in: (p) => `${at}.in-${p}` };
}

/** Every name a firing of t may have made (when it is not known which it did). */
export function everyStagedName(t: TransitionSpec, files: StagingFiles): string[] {
  return [files.stderr, files.stdout, files.batch, ...t.outputs.map(files.out), ...t.inputs.map((a) => files.in(a.place))];
}

/**
 * A sweep waits this long for more firings' names (or until SWEEP_NAMES are queued): firings
 * that finish one by one (a chain's, two workers) each cost a hand-off to the pool otherwise,
 * with its wake-ups on 2 busy cores. Scratch lingering a few milliseconds costs nothing: its
 * names are the firing's own, never used again.
 */
const SWEEP_DELAY_MS = 20;
const SWEEP_NAMES = 256;

/** Removes firings' staging files, many firings' in one batch. */
export class StagingSweeper {
  private queued: string[] = [];
  private sweeping = false;
  /** Directories of firings run as another user, being removed. */
  private readonly dirs = new Set<Promise<void>>();
  private idleWaiters: Array<() => void> = [];
  /** The wait for more names before a sweep (SWEEP_DELAY_MS). */
  private timer: NodeJS.Timeout | undefined;

  /**
   * Remove a firing's files: those it made, when known (RanOutcome.made), else every name it may
   * have made. A move stages nothing.
   */
  remove(t: TransitionSpec, dir: string, runAs: RunAs | undefined, made?: readonly string[]): void {
    if (!t.run && !t.fn) return;
    if (runAs) {
      const p = fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
      this.dirs.add(p);
      void p.then(() => this.dirs.delete(p));
      return;
    }
    const names = made ?? everyStagedName(t, stagingOf(dir, runAs));
    if (names.length === 0) return;
    for (const n of names) this.queued.push(n);
    if (this.queued.length >= SWEEP_NAMES) this.sweepNow();
    else if (!this.sweeping && !this.timer) {
      this.timer = setTimeout(() => this.sweepNow(), SWEEP_DELAY_MS);
      this.timer.unref();
    }
  }

  /** Resolves once every file handed to remove() so far is gone. */
  async idle(): Promise<void> {
    await Promise.all([...this.dirs]);
    if (this.timer) this.sweepNow();
    if (!this.sweeping) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Sweep what is queued now (or, with a sweep under way, when it ends: it takes the queue too). */
  private sweepNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.sweeping) return;
    this.sweeping = true;
    void this.sweep();
  }

  private async sweep(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        const names = this.queued;
        this.queued = [];
        // Nothing reads these names again: a failure (other than ENOENT, which is no failure) only
        // leaves scratch behind, which the run's next open clears.
        await runBatch(names.map((p): BatchOp => ({ op: 'unlink', path: p, missingOk: true })));
      }
    } catch {
      this.queued = []; // as above: scratch left for the next open
    }
    this.sweeping = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
