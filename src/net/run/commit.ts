/**
 * The commit protocol: how finished firings' outputs enter their places and their inputs leave
 * theirs, through the journal, so that every token moves exactly once.
 *
 * Firings that finish close together commit as one group (group commit): one journal line and
 * one fsync for the group, one fsync per directory the group touches, one sendseq write per
 * output place and one nextseq write per sequence input place. Groups go one at a time: the
 * first request commits at once, and what is asked while a group is under way waits for it and
 * goes in the next (at most GROUP_MAX requests), so a quiet net commits each firing alone, with
 * no added wait, and a busy one pays the fsyncs once per group. Every step's I/O that waits on
 * the disk (creates, fsyncs, renames, unlinks) runs on libuv's thread pool, a step's operations
 * in order in one batch (fs-batch.ts: one hand-off to the pool, not one per call): firings
 * start, and file events come in, while a group commits. Only the packets' bytes are written on
 * the event loop (into the page cache).
 *
 * A group: lock the writers of every output place; write each output packet under a temporary
 * name with its number (place.ts); store the numbers; record the group in the journal (fsync);
 * rename the outputs into their places; consume the inputs (a sequence place's nextseq moved
 * past them, then the files deleted); record its end. After a crash, recovery (recovery.ts)
 * redoes every recorded commit with no end (each step is idempotent) and turns the numbers of
 * staged-but-unrecorded outputs into NOP tokens or drops them (place.ts), so every token has
 * moved exactly once.
 *
 * Through a power cut too (docs/reliability.md, "Power cuts"): each step is durable before the
 * next depends on it.
 *   | step                                  | made durable by                                     |
 *   | ------------------------------------- | --------------------------------------------------- |
 *   | 1. outputs staged (net-*.part)        | fsync of each file and of each jobs/ (stage)        |
 *   | 2. their numbers taken (sendseq)      | SeqFile.batchWrite: fsync, rename, fsync of place   |
 *   | 3. the group recorded (one line)      | fsync of the journal (its name: at open)            |
 *   | 4. outputs published (renamed)        | fsync of each output jobs/ (finish)                 |
 *   | 5. inputs consumed (nextseq, unlink)  | as 2 for nextseq; fsync of each input jobs/         |
 *   | 6. the end recorded                   | none needed: 1-5 are durable, and redoing is safe   |
 * What changes nothing runs ahead, beside the step before's batch: the seqfiles' new values are
 * written and fsynced aside (`.temp`), and only renamed over the seqfile in their turn (a
 * nextseq: at the head of step 5's batch; its unlinks run only if that store succeeded). A
 * failure before step 2 removes the staged files: no number of theirs is stored. From step 2
 * on they stay, for recovery to publish or to fill with NOPs.
 * Recovery redoes 4 and 5 for every commit without an end, makes them durable, and only then
 * empties the journal.
 */
import path from 'node:path';
import { LockedError } from '../../errors.js';
import { batchError, firstFailure, runBatch, runBatchesAtOnce, type BatchOp } from '../../fs-batch.js';
import { closeQuietly, unlinkQuietly } from '../../io.js';
import type { PacketHeader } from '../../packet/index.js';
import type { SeqFile } from '../../seqfile.js';
import { createParts, published, type Place, type StagedFile } from '../place/place.js';
import type { Token, TokenContent } from '../place/token.js';
import type { CommitRecord, ConsumedInput, Journal, StagedOutput } from './journal.js';

/** The most firings one group commits. */
export const GROUP_MAX = 64;

/** One firing's commit, as asked. */
export interface CommitRequest {
  firing: string;
  transition: string;
  outputs: Array<{ place: string; content: TokenContent }>;
  inputs: Token[];
}

/**
 * What became of a request: committed (its outputs numbered; those renamed into their places,
 * with the headers they were staged with, for the run's index), or refused (a writer's lock was
 * busy, or a bounded output place full, or an earlier request it may depend on was refused),
 * nothing of it was done, ask again later. The caller updates its view: it forgets the inputs
 * (Place.forget), indexes what was published, and so on, at a moment of its choosing (the runner:
 * between two scans of the places, never during one).
 */
export type CommitResult =
  | { committed: true; outputs: Array<{ place: string; seq: bigint }>; published: Array<{ output: StagedOutput; header: PacketHeader }> }
  /** `behind`: refused only because an earlier request was: it may well commit if asked again at once. */
  | { committed: false; behind: boolean };

/** What the committer tells its run. */
export interface CommitHooks {
  /** A name a commit is about to write or delete in a jobs/: its file event is not news. Called on the event loop. */
  own(name: string): void;
  /** A group failed (an I/O error): the run must stop; recovery finishes what was recorded. */
  failed(err: unknown): void;
  /** For the kill -9 tests only: called once a group is recorded, before anything of it is done. */
  recorded?(size: number): void;
}

interface Entry {
  req: CommitRequest;
  done: (r: CommitResult) => void;
}

const REFUSED: CommitResult = { committed: false, behind: false };
const BEHIND: CommitResult = { committed: false, behind: true };

/** The places' writers and consumers, and the journal, as a commit needs them. */
export class Committer {
  /** Opened by recovery (recovery.ts) once it has read what was pending. */
  journal!: Journal;
  private pending: Entry[] = [];
  private busy = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly places: Map<string, Place>,
    /** Consumer seqfiles of the places the run reads, held for the whole run. */
    private readonly consumers: Map<string, SeqFile>,
    /** Each read place's next number: the run's view of its nextseq. */
    private readonly next: Map<string, bigint>,
    private readonly hooks: CommitHooks,
  ) {}

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
    const outPlaces = entries.flatMap((e) => e.req.outputs.map((o) => this.places.get(o.place)!));
    let writers: SeqFile[];
    try {
      writers = this.lockWriters(outPlaces);
    } catch (err) {
      if (err instanceof LockedError) return entries.map(() => REFUSED);
      throw err;
    }
    let records: CommitRecord[];
    let headers: Map<StagedOutput, PacketHeader>;
    let published: Set<StagedOutput>;
    try {
      // A bounded place that is full: its reader has not yet committed the tokens it took, or a
      // put filled it since the firing started. The requests from there on commit later (the
      // reader's commit wakes the run).
      const fit = this.fitting(entries);
      if (fit === 0) return entries.map((_, n) => (n === 0 ? REFUSED : BEHIND));
      ({ records, headers } = await this.stage(entries.slice(0, fit), writers));
      await this.journal.record(records);
      this.hooks.recorded?.(records.length);
      for (const c of records) {
        for (const o of c.outputs) this.hooks.own(path.basename(o.final));
        for (const i of c.inputs) this.hooks.own(path.basename(i.file));
      }
      published = new Set(await this.finish(records));
    } finally {
      writers.forEach((w) => w.release());
    }
    await this.journal.done(records.map((c) => c.firing));
    return entries.map((_, n) => {
      const c = records[n];
      if (!c) return n === records.length ? REFUSED : BEHIND;
      const out = c.outputs.filter((o) => published.has(o)).map((o) => ({ output: o, header: headers.get(o)! }));
      return { committed: true, outputs: c.outputs.map((o) => ({ place: o.place, seq: o.seq })), published: out };
    });
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

  /**
   * Steps 1 and 2: every output written under a temporary name with its number, the files and
   * their names made durable, and only then the numbers stored, once per place. Three batches of
   * file operations (fs-batch.ts), each one hand-off to the thread pool: the parts created; their
   * fsyncs, their directories' and the sendseqs' new values written aside (side by side); the
   * numbers stored.
   */
  private async stage(entries: Entry[], writers: SeqFile[]): Promise<{ records: CommitRecord[]; headers: Map<StagedOutput, PacketHeader> }> {
    const byDir = new Map(writers.map((w) => [path.dirname(w.path), w]));
    const nextSeq = new Map<Place, bigint>();
    const records: CommitRecord[] = [];
    const headers = new Map<StagedOutput, PacketHeader>();
    const planned: Array<{ p: Place; content: TokenContent; part: StagedFile; staged: StagedOutput }> = [];
    for (const { req } of entries) {
      const outputs: StagedOutput[] = [];
      for (const o of req.outputs) {
        const p = this.places.get(o.place)!;
        const seq = nextSeq.get(p) ?? byDir.get(p.spec.dir)!.read();
        nextSeq.set(p, seq + 1n);
        const staged: StagedOutput = { place: o.place, seq, temp: '', final: '' };
        outputs.push(staged);
        planned.push({ p, content: o.content, part: p.planPart(seq, o.content, req.firing.slice(0, 8)), staged });
      }
      records.push({ firing: req.firing, transition: req.transition, outputs, inputs: req.inputs.map((tok) => this.consumed(tok)) });
    }
    const files = await createParts(planned);
    const sendseqs = [...nextSeq].map(([p, seq]) => byDir.get(p.spec.dir)!.batchWrite(seq));
    try {
      // Step 1: the files' bytes and their names: once a number is stored (step 2), recovery must
      // find its file, to publish it or to fill its number with a NOP. Meanwhile each sendseq's
      // new value is written aside, which stores nothing yet.
      // Independent fsyncs, side by side (on a disk, one after the other each waits for its own
      // journal commit).
      const fsyncs = files.map((f): BatchOp => ({ op: 'fsync', fd: f.fd }));
      const dirs = [...nextSeq.keys()].map((p): BatchOp => ({ op: 'fsyncDir', path: p.queue.jobsDir }));
      const aside = sendseqs.map((w) => w.prepare);
      const done = await Promise.all([runBatchesAtOnce(fsyncs), runBatch(dirs), runBatch(aside)]);
      throwFailure(fsyncs, done[0]);
      throwFailure(dirs, done[1]);
      throwFailure(aside, done[2]);
    } catch (err) {
      // No number of theirs is stored yet: the staged files go, and leave no hole.
      for (const f of files) unlinkQuietly(f.temp);
      for (const w of sendseqs) w.failed();
      throw err;
    } finally {
      for (const f of files) closeQuietly(f.fd);
    }
    planned.forEach((x, n) => {
      const s = files[n]!;
      x.staged.temp = s.temp;
      x.staged.final = s.final;
      headers.set(x.staged, s.header);
    });
    // Step 2: durable (each sendseq renamed, its place fsynced): after a power cut, no number is
    // handed out again. Should it fail, the staged files stay: their numbers may be stored, and
    // recovery fills them.
    const store = sendseqs.flatMap((w) => w.store);
    const stored = await runBatch(store);
    if (firstFailure(store, stored)) sendseqs.forEach((w) => w.failed());
    throwFailure(store, stored);
    return { records, headers };
  }

  private consumed(tok: Token): ConsumedInput {
    return { place: tok.place, seq: tok.seq, file: tok.path, sequence: this.places.get(tok.place)!.order === 'sequence' };
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
    const outputs = commits.flatMap((c) => c.outputs);
    const inputs = commits.flatMap((c) => c.inputs);
    const consume = this.prepareConsume(inputs);
    // 'gone' only in recovery: renamed, made durable and consumed downstream before the cut.
    // Meanwhile, side by side, each nextseq's new value is written aside: that consumes nothing.
    const renames = outputs.map((o): BatchOp => ({ op: 'rename', from: o.temp, to: o.final }));
    const dirs = fsyncDirOps(outputs.map((o) => path.dirname(o.final)));
    const [r, aside] = await Promise.all([runBatch([...renames, ...dirs]), runBatch(consume.prepare)]);
    const states = outputs.map((o, n) => published(o.final, r[n]! < 0 ? batchError(renames[n]!, r[n]!) : undefined));
    if (firstFailure(consume.prepare, aside)) consume.failed();
    throwFailure(dirs, r.subarray(renames.length));
    throwFailure(consume.prepare, aside);
    // Step 5: each nextseq stored (durably) before any unlink: a place never waits for a number
    // whose file is gone. Then the unlinks, and their directories' fsyncs.
    const unlinks: BatchOp[] = [...consume.store, ...inputs.map((i): BatchOp => ({ op: 'unlink', path: i.file, missingOk: true })), ...fsyncDirOps(inputs.map((i) => path.dirname(i.file)))];
    const u = await runBatch(unlinks);
    const storeFailed = firstFailure(consume.store, u);
    if (storeFailed) consume.failed();
    else consume.stored();
    throwFailure(unlinks, u);
    return outputs.filter((_, n) => states[n] !== 'gone');
  }

  /**
   * Consuming these inputs, prepared: a sequence place's nextseq is to move past the last of its
   * inputs, durably before any unlink. `prepare` writes the new values aside; `store` (must, at
   * the head of the unlinks' batch) stores them; `stored` then updates the run's view.
   */
  private prepareConsume(inputs: ConsumedInput[]): { prepare: BatchOp[]; store: BatchOp[]; stored(): void; failed(): void } {
    const past = new Map<string, bigint>();
    for (const i of inputs) {
      if (!i.sequence || !this.consumers.has(i.place)) continue;
      const v = i.seq + 1n;
      if (v > (past.get(i.place) ?? this.next.get(i.place) ?? 0n)) past.set(i.place, v);
    }
    const writes = [...past].map(([place, v]) => ({ place, v, w: this.consumers.get(place)!.batchWrite(v) }));
    return {
      prepare: writes.map((x) => x.w.prepare),
      store: writes.flatMap((x) => x.w.store),
      stored: () => writes.forEach((x) => this.next.set(x.place, x.v)),
      failed: () => writes.forEach((x) => x.w.failed()),
    };
  }
}

function fsyncDirOps(dirs: string[]): BatchOp[] {
  return [...new Set(dirs)].map((d) => ({ op: 'fsyncDir', path: d }));
}

/** Throw the batch's first failure, if any. */
function throwFailure(ops: readonly BatchOp[], results: Int32Array): void {
  const err = firstFailure(ops, results);
  if (err) throw err;
}
