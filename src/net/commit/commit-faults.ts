/**
 * What a group commit (commit.ts) does when a step fails for a full disk or an I/O error
 * (io-faults.ts), so that every token still moves exactly once and no number is stranded:
 *
 *   | the first step that failed           | the group is                                          |
 *   | ------------------------------------ | ----------------------------------------------------- |
 *   | 1. staging (parts, their fsyncs)     | undone: the parts removed; no number of theirs is     |
 *   |                                      | stored (the sendseqs' new values were only aside)     |
 *   | 2. the numbers (a sendseq's rename   | undone: each part whose number a sendseq now holds    |
 *   |    or its directory's fsync)         | becomes a NOP token (a sequence place: its number     |
 *   |                                      | filled), the others are removed                       |
 *   | 3. the journal's line (write, fsync) | undone as 2, once the line is taken back (the journal |
 *   |                                      | truncated and fsynced); if that fails too, as 4       |
 *   | 4, 5. publish, consume               | carried out: recorded, it is finished, steps 3 (the   |
 *   |                                      | line written again, never only fsynced again), 4 and  |
 *   |                                      | 5 tried again after a backoff until they succeed      |
 *
 * An undone group's firings commit again after a backoff (run/open-firings.ts), with new numbers. A NOP
 * that can not be written yet (the disk still full) is tried again later (`Undone`); meanwhile its
 * part keeps the number, so that nobody else takes it, and a run that opens repairs it anyway
 * (recovery.ts). A failed fsync is never tried again and trusted: what it was to make durable is
 * written again, or undone.
 */
import { LockedError } from '../../base/errors.js';
import type { PacketHeader } from '../../packet/index.js';
import { firstFailure, runBatch } from '../../sys/fs-batch.js';
import type { SeqFile } from '../../sys/seqfile.js';
import type { Place } from '../place/place.js';
import { backoffMs, isIoFault, placeOfPath } from './io-faults.js';
import type { CommitRecord, Journal, StagedOutput } from './journal.js';
import type { CommitHooks } from './request.js';

/** A group failed at `step` (0: staging, 1: the numbers, 2: the journal's line, 3: publish or consume). */
export class GroupFailed extends Error {
  constructor(
    readonly step: number,
    readonly err: NodeJS.ErrnoException,
    /** The parts staged (left in place from step 1 on). */
    readonly parts: Array<{ place: Place; temp: string }>,
    /** The group's records (from step 2 on, for carrying it out), and the headers of their outputs. */
    readonly records: CommitRecord[],
    readonly headers: Map<StagedOutput, PacketHeader>,
    /** The journal's size before the group's line (Journal.mark). */
    readonly mark: number,
  ) {
    super(err.message);
  }
}

/**
 * A recorded group could not be finished before the committer was stopped: it stays in the
 * journal, for the next run's recovery.
 */
export class CommitPostponed extends Error {
  constructor(readonly err: unknown) {
    super(`A commit waits for the disk: the next run finishes it (${(err as Error).message})`);
  }
}

/** Parts of undone groups: each becomes a NOP or goes; those the disk refuses for now are kept, to try again. */
export class Undone {
  private kept: Array<{ place: Place; temp: string }> = [];

  constructor(
    /** The run's view of the nextseq of each place it reads. */
    private readonly next: Map<string, bigint>,
    private readonly report: (err: NodeJS.ErrnoException) => void,
  ) {}

  /** Parts waiting for room to become NOPs. */
  get waiting(): number {
    return this.kept.length;
  }

  /** Undo these parts, the writers' locks of their places held (`writerOf`). */
  undo(parts: Array<{ place: Place; temp: string }>, writerOf: (p: Place) => SeqFile): void {
    for (const x of parts) {
      try {
        x.place.repairPart(writerOf(x.place), x.temp, this.next.get(x.place.name) ?? readNextQuietly(x.place));
      } catch (err) {
        if (!isIoFault(err)) throw err;
        this.report(err);
        this.kept.push(x);
      }
    }
  }

  /** Try the kept parts again, taking their writers' locks (`lock`); a busy lock or the disk still full: later. */
  retry(lock: (places: Place[]) => SeqFile[]): void {
    if (this.kept.length === 0) return;
    const parts = this.kept.splice(0);
    let writers: SeqFile[];
    try {
      writers = lock(parts.map((x) => x.place));
    } catch (err) {
      this.kept.push(...parts);
      if (err instanceof LockedError) return;
      if (!isIoFault(err)) throw err;
      this.report(err);
      return;
    }
    try {
      const byDir = new Map(writers.map((w) => [w.path, w]));
      this.undo(parts, (p) => byDir.get(p.sendseqPath)!);
    } finally {
      writers.forEach((w) => w.release());
    }
  }
}

function readNextQuietly(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch {
    return undefined;
  }
}

/** What GroupFaults needs of its committer. */
export interface FaultsContext {
  journal(): Journal;
  /** Steps 4 and 5 of recorded commits (idempotent); rejects with the first failure. */
  finish(records: CommitRecord[]): Promise<StagedOutput[]>;
  lockWriters(places: Place[]): SeqFile[];
  busy(): boolean;
  places: Map<string, Place>;
  next: Map<string, bigint>;
  hooks: CommitHooks;
}

/** A committer's groups that met a full disk or an I/O error: undone, or carried out later (the table at the top). */
export class GroupFaults {
  private readonly undone: Undone;
  private undoneTimer: NodeJS.Timeout | undefined;
  private undoneTries = 0;
  /** Set by stop(): a recorded group waiting for the disk gives up (CommitPostponed). */
  private stopped = false;
  /** Wakes a recorded group's wait (stop). */
  private wakeWait: (() => void) | undefined;

  constructor(private readonly c: FaultsContext) {
    this.undone = new Undone(c.next, (err) => this.report(err));
  }

  /** Report a fault to the committer's hooks; returns the place it was met in. */
  report(err: NodeJS.ErrnoException): string {
    const place = placeOfPath(
      err.path,
      [...this.c.places.values()].map((p) => ({ name: p.name, dir: p.spec.dir })),
    );
    this.c.hooks.fault?.(place, err);
    return place;
  }

  get undoneWaiting(): number {
    return this.undone.waiting;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.undoneTimer);
    this.wakeWait?.();
  }

  /** Parts of undone groups: made NOPs now if there is room (before a group takes new numbers). */
  retryUndone(): void {
    this.undone.retry((ps) => this.c.lockWriters(ps));
  }

  /**
   * A group that failed, its writers' locks held: undone if it
   * was not recorded. False when it must be carried out instead.
   */
  undo(f: GroupFailed, writers: SeqFile[]): boolean {
    if (f.step >= 3) return false;
    try {
      this.c.journal().rollback(f.mark); // step 3: the line taken back; before it, nothing was written
    } catch (err) {
      if (f.step === 2) {
        if (!isIoFault(err)) throw err;
        this.report(err);
        return false;
      }
    }
    if (f.step >= 1) {
      const byPath = new Map(writers.map((w) => [w.path, w]));
      this.undone.undo(f.parts, (p) => byPath.get(p.sendseqPath)!);
      if (this.undone.waiting > 0) this.scheduleUndone();
    }
    return true;
  }

  /**
   * A recorded group that failed: carried out (its line written again if its own failed, then
   * steps 4 and 5), after a backoff, until that succeeds. Without `carryOn`, or once stopped, it
   * is left to the next recovery (thrown).
   */
  async carryOutLater(f: GroupFailed): Promise<StagedOutput[]> {
    let rewrite = f.step === 2; // its line may not be on the disk: never trust a failed fsync
    for (let n = 1; ; n++) {
      if (!this.c.hooks.carryOn) throw f.err;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, backoffMs(n));
        this.wakeWait = () => {
          clearTimeout(t);
          resolve();
        };
        if (this.stopped) this.wakeWait();
      });
      this.wakeWait = undefined;
      if (this.stopped) throw new CommitPostponed(f.err);
      try {
        if (rewrite) {
          const op = this.c.journal().recordOp(f.records);
          const err = firstFailure([op], await runBatch([op]));
          if (err) throw err;
          this.c.journal().recorded();
          rewrite = false;
        }
        return await this.c.finish(f.records);
      } catch (err) {
        if (!isIoFault(err)) throw err;
        this.report(err);
      }
    }
  }

  /** Try the undone groups' parts again later (while no group is under way), until each is a NOP or gone. */
  private scheduleUndone(): void {
    if (this.undoneTimer || this.stopped) return;
    this.undoneTimer = setTimeout(
      () => {
        this.undoneTimer = undefined;
        if (!this.c.busy()) {
          const before = this.undone.waiting;
          try {
            this.retryUndone();
          } catch (err) {
            this.c.hooks.failed(err);
            return;
          }
          if (this.undone.waiting < before) this.c.hooks.committed?.(new Set());
        }
        if (this.undone.waiting > 0) this.scheduleUndone();
        else this.undoneTries = 0;
      },
      backoffMs(++this.undoneTries),
    );
    this.undoneTimer.unref();
  }
}
