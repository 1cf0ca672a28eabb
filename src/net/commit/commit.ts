/**
 * The commit protocol: how finished firings' outputs enter their places and their inputs leave
 * theirs, through the journal, so that every token moves exactly once.
 *
 * Firings that finish while a group commits go together in the next (at most GROUP_MAX), sharing
 * its journal line and fsyncs; a quiet net commits each firing alone, with no added wait. A group's
 * disk I/O runs on libuv's thread pool in one batch (fs-batch.ts), off the event loop.
 *
 * After a crash, recovery (recovery.ts) redoes every recorded commit with no end (each step is
 * idempotent) and turns the numbers of staged-but-unrecorded outputs into NOPs or drops them.
 *
 * Through a power cut too (docs/reliability.md, "Power cuts"): each step is durable before the
 * next depends on it.
 *   | step                                  | made durable by                                     |
 *   | ------------------------------------- | --------------------------------------------------- |
 *   | 1. outputs staged (net-*.part)        | fsync of each file and of each jobs/ (stage)        |
 *   | 2. their numbers taken (sendseq)      | SeqFile.batchWrite: fsync, rename, fsync of place   |
 *   | 3. the group recorded (one line)      | fsync of the journal (its name: at open)            |
 *   | 4. outputs published (renamed)        | fsync of each output jobs/ (publish.ts)             |
 *   | 5. inputs consumed (nextseq, unlink)  | as 2 for nextseq; fsync of each input jobs/         |
 *   | 6. the end recorded                   | none needed: 1-5 are durable, and redoing is safe   |
 * Each batch runs its operations in the table's order, and a failed one (each is `must`, but the
 * unlinks of step 5) stops the rest of its batch: no step runs before the one it depends on is
 * durable. The seqfiles' new values are written and fsynced aside (`.temp`) just before their
 * turn, and only renamed over the seqfile in it (a nextseq: just before step 5's unlinks, which
 * run only if that store succeeded). The journal's line is written in its turn (step 3), after
 * the numbers' fsyncs: written earlier, the kernel could put it on the disk before the numbers it
 * needs. Steps 4 and 5 follow it in the same batch, on the same thread, so they run only after
 * the journal's fsync has returned; a failure up to step 3 cancels them.
 * A full disk or an I/O error at any step stops neither the run nor the numbering: the group is
 * undone or carried out later, as the table of commit-faults.ts says, and its firings commit again
 * after a backoff. Any other failure stops the run, as a crash would: before step 2 the staged
 * files are removed (no number of theirs is stored), from step 2 on they stay, for recovery to
 * publish or to fill with NOPs.
 * Recovery redoes 4 and 5 for every commit without an end, makes them durable, and only then
 * empties the journal.
 */
import path from 'node:path';
import { LockedError } from '../../base/errors.js';
import { runBatch } from '../../sys/fs-batch.js';
import type { SeqFile } from '../../sys/seqfile.js';
import type { Place } from '../place/place.js';
import { GroupFailed, GroupFaults } from './commit-faults.js';
import { isIoFault } from './io-faults.js';
import type { CommitRecord, Journal, StagedOutput } from './journal.js';
import { planFinish } from './publish.js';
import type { CommitHooks, CommitRequest, CommitResult } from './request.js';
import { type Staged, stageGroup } from './stage-group.js';

/** The most firings one group commits. */
export const GROUP_MAX = 64;

interface Entry {
  req: CommitRequest;
  done: (r: CommitResult) => void;
}

const REFUSED: CommitResult = { committed: false, behind: false };
const BEHIND: CommitResult = { committed: false, behind: true };

function placesOf(records: CommitRecord[]): Set<string> {
  return new Set(records.flatMap((c) => [...c.outputs.map((o) => o.place), ...c.inputs.map((i) => i.place)]));
}

/** The places' writers and consumers, and the journal, as a commit needs them. */
export class Committer {
  /** Opened by recovery (recovery.ts) once it has read what was pending. */
  journal!: Journal;
  private pending: Entry[] = [];
  private busy = false;
  private idleWaiters: Array<() => void> = [];
  /** What a group that met a full disk or an I/O error does (commit-faults.ts). */
  private readonly faults: GroupFaults;

  constructor(
    private readonly places: Map<string, Place>,
    /** Consumer seqfiles of the places the run reads, held for the whole run. */
    private readonly consumers: Map<string, SeqFile>,
    /** Each read place's next number: the run's view of its nextseq. */
    private readonly next: Map<string, bigint>,
    private readonly hooks: CommitHooks,
  ) {
    this.faults = new GroupFaults({
      journal: () => this.journal,
      finish: (records) => this.finish(records),
      lockWriters: (places) => this.lockWriters(places),
      busy: () => this.busy,
      places,
      next,
      hooks,
    });
  }

  /** Give up waiting for the disk (the run stops): a recorded group stays in the journal for recovery. */
  stop(): void {
    this.faults.stop();
  }

  /** Parts of undone groups waiting for room to become NOPs. */
  get undoneWaiting(): number {
    return this.faults.undoneWaiting;
  }

  /**
   * Ask for a commit; `done` is called with what became of it, once its group has ended. Requests
   * commit in the order they are asked.
   */
  submit(req: CommitRequest, done: (r: CommitResult) => void): void {
    this.pending.push({ req, done });
    if (!this.busy) {
      this.busy = true;
      // After the current task: a run asks for every commit due at once, and they go together.
      queueMicrotask(() => this.flush());
    }
  }

  /** Commit one firing's outputs and inputs (a group of one, or in the group under way's wake). */
  commitOne(req: CommitRequest): Promise<CommitResult> {
    return new Promise((resolve) => this.submit(req, resolve));
  }

  /** Resolves once no group is under way and none is asked for. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private flush(): void {
    const group = this.pending.splice(0, GROUP_MAX);
    if (group.length === 0) {
      this.busy = false;
      for (const w of this.idleWaiters.splice(0)) w();
      return;
    }
    this.group(group).then(
      (results) => {
        // A refused request may hold what a later one waits for (commit order): those go back too.
        const refused = results.some((r) => !r.committed);
        const after = refused ? this.pending.splice(0) : [];
        group.forEach((e, i) => e.done(results[i]!));
        for (const e of after) e.done(BEHIND);
        this.flush();
      },
      (err: unknown) => {
        this.pending = [];
        this.busy = false;
        for (const w of this.idleWaiters.splice(0)) w();
        this.hooks.failed(err);
      },
    );
  }

  /**
   * Lock the writers of these places (sorted, so two committers never deadlock). A busy lock is
   * tried again at once, up to 50 times, never after a pause.
   */
  lockWriters(places: Place[]): SeqFile[] {
    const sorted = [...new Set(places)].sort((a, b) => (a.spec.dir < b.spec.dir ? -1 : 1));
    for (let tries = 0; ; tries++) {
      const held: SeqFile[] = [];
      try {
        for (const p of sorted) held.push(p.lockWriters());
        return held;
      } catch (err) {
        held.forEach((h) => h.release());
        if (!(err instanceof LockedError) || tries >= 50) throw err;
      }
    }
  }

  /** Commit a group: the table at the top, steps 1 to 6. */
  private async group(entries: Entry[]): Promise<CommitResult[]> {
    this.faults.retryUndone(); // numbers of undone groups, first
    const outPlaces = entries.flatMap((e) => e.req.outputs.map((o) => this.places.get(o.place)!));
    let writers: SeqFile[];
    try {
      writers = this.lockWriters(outPlaces);
    } catch (err) {
      if (err instanceof LockedError) return entries.map(() => REFUSED);
      throw err;
    }
    let staged: Staged;
    let failed: GroupFailed | undefined;
    let fit: number;
    try {
      // A bounded place that is full: its reader has not yet committed the tokens it took, or a
      // put filled it since the firing started. The requests from there on commit later (the
      // reader's commit wakes the run).
      fit = this.fitting(entries);
      if (fit === 0) return entries.map((_, n) => (n === 0 ? REFUSED : BEHIND));
      // Steps 1 to 3. The names it is about to write or delete in the jobs/ are owned first: their
      // file events are not news (should the group be undone, those names never appear).
      // Steps 4 and 5 go in the same batch as 1 to 3 (one hand-off to the pool a group), unless
      // the kill -9 tests' probe wants the moment between them (it runs between two batches).
      const probe = this.hooks.recorded;
      try {
        const requests = entries.slice(0, fit).map((e) => e.req);
        staged = await stageGroup(
          this.places,
          this.journal,
          requests,
          writers,
          (rs) => this.owning(rs),
          probe ? undefined : (rs) => planFinish(rs, this.consumers, this.next),
        );
        if (!staged.finished) {
          probe?.(staged.records.length);
          staged.finished = await this.finish(staged.records).catch((err: unknown) => {
            throw new GroupFailed(3, err as NodeJS.ErrnoException, [], staged.records, staged.headers, -1);
          });
        }
      } catch (err) {
        if (!(err instanceof GroupFailed)) throw err;
        if (!isIoFault(err.err)) throw err.err;
        const place = this.faults.report(err.err);
        if (this.faults.undo(err, writers))
          return entries.map((_, n) =>
            n < fit ? { committed: false, behind: false, fault: { place, err: err.err } } : BEHIND,
          );
        failed = err;
        staged = { records: err.records, headers: err.headers };
      }
    } finally {
      writers.forEach((w) => w.release());
    }
    // Recorded, and a step after it failed for a full disk or an I/O error: carried out later.
    const published = new Set(staged.finished ?? (await this.faults.carryOutLater(failed!)));
    await this.journal.done(staged.records.map((c) => c.firing));
    this.hooks.committed?.(placesOf(staged.records));
    return entries.map((_, n) => {
      const c = staged.records[n];
      if (!c) return n === staged.records.length ? REFUSED : BEHIND;
      const out = c.outputs.filter((o) => published.has(o)).map((o) => ({ output: o, header: staged.headers.get(o)! }));
      return { committed: true, outputs: c.outputs.map((o) => ({ place: o.place, seq: o.seq })), published: out };
    });
  }

  /** The names a group is about to write or delete in places' jobs/: their file events are not news. */
  private owning(records: CommitRecord[]): void {
    for (const c of records) {
      for (const o of c.outputs) this.hooks.own(o.place, path.basename(o.final));
      for (const i of c.inputs) this.hooks.own(i.place, path.basename(i.file));
    }
  }

  /** How many of these requests, from the first, fit in their bounded output places (writers' locks held). */
  private fitting(entries: Entry[]): number {
    const room = new Map<Place, number>();
    for (let n = 0; n < entries.length; n++) {
      for (const o of entries[n]!.req.outputs) {
        const p = this.places.get(o.place)!;
        const cap = p.spec.capacity;
        if (cap === undefined) continue;
        const left = (room.get(p) ?? cap - p.occupancy()) - 1;
        if (left < 0) return n;
        room.set(p, left);
      }
    }
    return entries.length;
  }

  /** Recovery: carry out recorded commits again (every step may already have been done). */
  async carryOut(commits: CommitRecord[]): Promise<void> {
    await this.finish(commits);
    for (const c of commits) for (const i of c.inputs) this.places.get(i.place)?.forget(path.basename(i.file));
  }

  /**
   * Steps 4 and 5 of recorded commits (see the table at the top), each durable before the next:
   * the outputs renamed into their places and their jobs/ fsynced, so that no consume is durable
   * while an output it led to could still vanish; then the inputs consumed and their jobs/
   * fsynced, so that the end record, once written, never stands for a consume a power cut undoes.
   * In batches (fs-batch.ts), in order within each. Idempotent: recovery calls it again for
   * commits that may have done any part of it. Returns the outputs renamed now or before (not
   * those gone since).
   */
  private async finish(commits: CommitRecord[]): Promise<StagedOutput[]> {
    const plan = planFinish(commits, this.consumers, this.next);
    return plan.settle(await runBatch(plan.steps.flat()));
  }
}
