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
 * the disk (creates, fsyncs, renames, unlinks, the journal's line) runs on libuv's thread pool,
 * in order, in batches (fs-batch.ts): one hand-off to the pool a group (steps 1 to 5 in one
 * batch; one more before it for parts filled from other tokens, and for parts written side by
 * side), not one per call or per step.
 * On 2 busy cores a hand-off (a pool thread woken, its result sent back) cost about 50 µs of the
 * event loop's time, more than the system calls themselves on tmpfs. Firings start, and file
 * events come in, while a group commits. Only the bytes of parts filled from other tokens are
 * written on the event loop (into the page cache).
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
 * A failure before step 2 removes the staged files: no number of theirs is stored. From step 2
 * on they stay, for recovery to publish or to fill with NOPs.
 * Recovery redoes 4 and 5 for every commit without an end, makes them durable, and only then
 * empties the journal.
 */
import path from 'node:path';
import { LockedError } from '../../errors.js';
import { firstFailedStep, firstFailure, runBatch, runBatchesAtOnce, type BatchOp } from '../../fs-batch.js';
import { closeQuietly, unlinkQuietly } from '../../io.js';
import type { PacketHeader } from '../../packet/index.js';
import type { SeqFile } from '../../seqfile.js';
import { createParts, type Place, type StagedFile } from '../place/place.js';
import type { Token, TokenContent } from '../place/token.js';
import type { CommitRecord, ConsumedInput, Journal, StagedOutput } from './journal.js';
import { planFinish, type FinishPlan } from './publish.js';

/** The most firings one group commits. */
export const GROUP_MAX = 64;

/**
 * A group with more parts than this fsyncs them side by side, in batches of their own (fs-batch.ts
 * runBatchesAtOnce); a smaller one, in order in the step's one batch: one hand-off to the pool.
 */
const LANE_FILES = 8;

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
  /** A name a commit is about to write or delete in a place's jobs/: its file event is not news. Called on the event loop. */
  own(place: string, name: string): void;
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

/** What a group's last batch did: the first of steps 1 to 3 that failed, if one did, and the results of steps 4 and 5 run after them. */
interface LastBatch {
  failure?: { step: number; err: NodeJS.ErrnoException } | undefined;
  rest?: Int32Array;
}

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
      // Steps 1 to 3. The names it is about to write or delete in the jobs/ are owned first: their
      // file events are not news (should the group fail, the run stops anyway).
      // Steps 4 and 5 go in the same batch as 1 to 3 (one hand-off to the pool a group), unless
      // the kill -9 tests' probe wants the moment between them (it runs between two batches).
      const probe = this.hooks.recorded;
      let finished: StagedOutput[] | undefined;
      ({ records, headers, finished } = await this.stage(
        entries.slice(0, fit),
        writers,
        (rs) => {
          for (const c of rs) {
            for (const o of c.outputs) this.hooks.own(o.place, path.basename(o.final));
            for (const i of c.inputs) this.hooks.own(i.place, path.basename(i.file));
          }
        },
        probe ? undefined : (rs) => planFinish(rs, this.consumers, this.next),
      ));
      if (!finished) {
        probe?.(records.length);
        finished = await this.finish(records);
      }
      published = new Set(finished);
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
   * Steps 1 to 3: every output written under a temporary name with its number, the files and
   * their names made durable, then the numbers stored, once per place, then the group recorded in
   * the journal: one batch of file operations (fs-batch.ts: one hand-off to the thread pool), in
   * order, each `must` (a failure stops what follows). A part whose payload is another token's
   * is created in a batch before it and filled on the event loop (createParts). A group of more
   * than LANE_FILES parts writes and fsyncs them first, side by side (on a disk, fsyncs one after
   * the other each wait for their own journal commit), with the sendseqs' new values written
   * aside meanwhile. `owning` is told the records before anything of them is published. With
   * `then`, steps 4 and 5 (planned by it once the records exist) run at the end of the same last
   * batch, after the journal's fsync, and `finished` is what finish() would have returned.
   */
  private async stage(
    entries: Entry[],
    writers: SeqFile[],
    owning: (records: CommitRecord[]) => void,
    then?: (records: CommitRecord[]) => FinishPlan,
  ): Promise<{ records: CommitRecord[]; headers: Map<StagedOutput, PacketHeader>; finished?: StagedOutput[] }> {
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
    // A part whose payload is in memory or in a file of its own is written whole on the pool
    // (Place.partOp: created, filled and fsynced in step 1's batch); the others are created in a
    // batch of their own and filled on the event loop (createParts), then fsynced in step 1.
    const direct = planned.map((x) => x.p.partOp(x.part, x.content));
    const files = await createParts(planned.filter((_, n) => direct[n] === undefined));
    planned.forEach((x) => {
      x.staged.temp = x.part.temp;
      x.staged.final = x.part.final;
      headers.set(x.staged, x.part.header);
    });
    owning(records);
    const sendseqs = [...nextSeq].map(([p, seq]) => byDir.get(p.spec.dir)!.batchWrite(seq));
    // Step 1: the files' bytes and their names: once a number is stored (step 2), recovery must
    // find its file, to publish it or to fill its number with a NOP. Beside them each sendseq's
    // new value is written aside, which stores nothing yet.
    const perFile = [...direct.filter((op): op is BatchOp => op !== undefined), ...files.map((f): BatchOp => ({ op: 'fsync', fd: f.fd, must: true }))];
    // The directories' fsyncs after every part is created: they make the parts' names durable.
    const dirs = [...nextSeq.keys()].map((p): BatchOp => ({ op: 'fsyncDir', path: p.queue.jobsDir, must: true }));
    const aside = sendseqs.map((w) => w.prepare);
    // Step 2: each sendseq renamed, its place fsynced: after a power cut, no number is handed out
    // again. Step 3: the group's line, written and fsynced.
    const store = sendseqs.flatMap((w) => w.store);
    const record = [this.journal.recordOp(records)];
    // Steps 4 and 5 after the journal's line, in the same batch: a failure up to step 3 cancels
    // them (each operation of 1 to 3 is `must`), so none runs before the group is recorded.
    const tail = then?.(records);
    /** The last batch: these steps, then the tail's; the failure is of these steps only, `rest` the tail's results. */
    const last = async (steps: BatchOp[][]): Promise<LastBatch> => {
      const ops = steps.flat();
      const r = await runBatch(tail ? [...ops, ...tail.steps.flat()] : ops);
      return { failure: firstFailedStep(steps, 0, r), rest: r.subarray(ops.length) };
    };
    let ran: LastBatch;
    try {
      if (perFile.length > LANE_FILES) {
        const [synced, asideDone] = await Promise.all([runBatchesAtOnce(perFile), runBatch(aside)]);
        const err = firstFailure(perFile, synced) ?? firstFailure(aside, asideDone);
        ran = err ? { failure: { step: 0, err } } : await last([dirs, store, record]);
      } else {
        ran = await last([[...perFile, ...dirs, ...aside], store, record]);
      }
    } finally {
      for (const f of files) closeQuietly(f.fd);
    }
    const { failure, rest } = ran;
    if (failure) {
      // Before step 2: no number of theirs is stored, the staged files go and leave no hole. From
      // step 2 on they stay: their numbers may be stored, and recovery fills them.
      if (failure.step === 0) for (const x of planned) unlinkQuietly(x.part.temp);
      if (failure.step <= 1) for (const w of sendseqs) w.failed();
      tail?.abandon();
      throw failure.err;
    }
    return { records, headers, finished: tail ? tail.settle(rest!) : undefined };
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
    const plan = planFinish(commits, this.consumers, this.next);
    return plan.settle(await runBatch(plan.steps.flat()));
  }
}
