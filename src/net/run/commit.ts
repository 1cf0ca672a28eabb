/**
 * The commit protocol: how a finished firing's outputs enter their places and its inputs leave
 * theirs, through the journal, one commit at a time and synchronously, so that a commit is never
 * interleaved with another and every token moves exactly once.
 *
 * A commit: lock the writers of every output place; stage each output packet under a temporary
 * name with its number (place.ts); record the commit in the journal (fsync); rename the outputs
 * into their places; consume the inputs (a sequence place's nextseq moved past them, then the
 * files deleted); record its end. After a crash, recovery (recovery.ts) redoes every recorded
 * commit with no end (each step is idempotent) and turns the numbers of staged-but-unrecorded
 * outputs into NOP tokens or drops them (place.ts), so every token has moved exactly once.
 *
 * Through a power cut too (docs/reliability.md, "Power cuts"): each step is durable before the
 * next depends on it.
 *   | step                                  | made durable by                                     |
 *   | ------------------------------------- | --------------------------------------------------- |
 *   | 1. outputs staged (net-*.part)        | fsync of each file, then of its jobs/ (Place.stage) |
 *   | 2. their numbers taken (sendseq)      | SeqFile.write: fsync, rename, fsync of the place    |
 *   | 3. the commit recorded                | fsync of the journal (its name: at open)            |
 *   | 4. outputs published (renamed)        | fsync of each output jobs/ (finishCommit)           |
 *   | 5. inputs consumed (nextseq, unlink)  | SeqFile.write; fsync of each input jobs/            |
 *   | 6. the end recorded                   | none needed: 1-5 are durable, and redoing is safe   |
 * Recovery redoes 4 and 5 for every commit without an end, makes them durable, and only then
 * empties the journal.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirs } from '../../durable.js';
import { LockedError } from '../../errors.js';
import type { PacketHeader } from '../../packet/index.js';
import type { SeqFile } from '../../seqfile.js';
import type { TransitionSpec } from '../model/model.js';
import { publish, type Place } from '../place/place.js';
import type { Token, TokenContent } from '../place/token.js';
import type { CommitRecord, ConsumedInput, Journal, StagedOutput } from './journal.js';

/** What the run learns as a commit goes: its in-memory view only, nothing here is durable. */
export interface CommitHooks {
  /** A name the commit is about to write or delete in a jobs/: its file event is not news. */
  own(name: string): void;
  /** An output renamed into its place: the header it was staged with, and the commit's time. */
  published(o: StagedOutput, header: PacketHeader, now: number): void;
  /** An input consumed (its place has forgotten it). */
  consumed(tok: Token): void;
}

/** The places' writers and consumers, and the journal, as a commit needs them. */
export class Committer {
  /** Opened by recovery (recovery.ts) once it has read what was pending. */
  journal!: Journal;

  constructor(
    private readonly places: Map<string, Place>,
    /** Consumer seqfiles of the places the run reads, held for the whole run. */
    private readonly consumers: Map<string, SeqFile>,
    /** Each read place's next number: the run's view of its nextseq. */
    private readonly next: Map<string, bigint>,
  ) {}

  /**
   * Lock the writers of these places (sorted, so two committers never deadlock). A busy lock is
   * tried again at once, up to 50 times, never after a pause: a commit is synchronous.
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

  /** Carry out a recorded commit: every step may already have been done. */
  carryOut(c: CommitRecord): void {
    this.finishCommit(c);
    for (const i of c.inputs) this.places.get(i.place)?.forget(path.basename(i.file));
    this.journal.done(c.firing);
  }

  /**
   * Steps 4 and 5 of a recorded commit (see the table at the top), each durable before the next:
   * the outputs renamed into their places and their jobs/ fsynced, so that no consume is durable
   * while an output it led to could still vanish; then the inputs consumed and their jobs/
   * fsynced, so that the end record, once written, never stands for a consume a power cut undoes.
   * Idempotent: recovery calls it again for commits that may have done any part of it.
   */
  private finishCommit(c: CommitRecord, published?: (o: StagedOutput) => void): void {
    for (const o of c.outputs) {
      // 'gone' only in recovery: renamed, made durable and consumed downstream before the cut.
      if (publish(o.temp, o.final) !== 'gone') published?.(o);
    }
    fsyncDirs(c.outputs.map((o) => path.dirname(o.final)));
    for (const i of c.inputs) this.consume(i);
    fsyncDirs(c.inputs.map((i) => path.dirname(i.file)));
  }

  private consume(i: ConsumedInput): void {
    if (i.sequence) {
      const sf = this.consumers.get(i.place);
      const cur = this.next.get(i.place) ?? 0n;
      if (sf && i.seq + 1n > cur) {
        sf.write(i.seq + 1n); // durable before the unlink: a place never waits for a number whose file is gone
        this.next.set(i.place, i.seq + 1n);
      }
    }
    try {
      fs.unlinkSync(i.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** Commit outputs and consume inputs, through the journal. False: a writer's lock was busy, try later. */
  commit(firing: string, t: Pick<TransitionSpec, 'name'>, outputs: Array<{ place: string; content: TokenContent }>, inputs: Token[], hooks: CommitHooks): Array<{ place: string; seq: bigint }> | false {
    const outPlaces = outputs.map((o) => this.places.get(o.place)!);
    let writers: SeqFile[];
    try {
      writers = this.lockWriters(outPlaces);
    } catch (err) {
      if (err instanceof LockedError) return false;
      throw err;
    }
    if (!this.roomFor(outPlaces)) {
      // A bounded place is full: its reader has not yet committed the tokens it took, or a put
      // filled it since this firing started. Commit later (the reader's commit wakes the loop).
      writers.forEach((w) => w.release());
      return false;
    }
    const byPlace = new Map(writers.map((w) => [path.dirname(w.path), w]));
    const staged: CommitRecord['outputs'] = [];
    const headers: PacketHeader[] = [];
    try {
      const tag = firing.slice(0, 8);
      try {
        for (const o of outputs) {
          const p = this.places.get(o.place)!;
          const s = p.stage(byPlace.get(p.spec.dir)!, o.content, tag);
          staged.push({ place: o.place, seq: s.seq, temp: s.temp, final: s.final });
          headers.push(s.header);
        }
      } catch (err) {
        // Nothing is recorded: the staged files go; their numbers, if stored, become NOPs at the next recovery.
        for (const s of staged) fs.rmSync(s.temp, { force: true });
        throw err;
      }
      const record: CommitRecord = {
        firing,
        transition: t.name,
        outputs: staged,
        inputs: inputs.map((tok) => ({ place: tok.place, seq: tok.seq, file: tok.path, sequence: this.places.get(tok.place)!.order === 'sequence' })),
      };
      this.journal.commit(record);
      const now = Date.now();
      const headerOf = new Map(record.outputs.map((o, i) => [o, headers[i]!]));
      for (const o of record.outputs) hooks.own(path.basename(o.final));
      for (const tok of inputs) hooks.own(tok.filename);
      this.finishCommit(record, (o) => hooks.published(o, headerOf.get(o)!, now));
    } finally {
      writers.forEach((w) => w.release());
    }
    for (const tok of inputs) {
      this.places.get(tok.place)!.forget(tok.filename);
      hooks.consumed(tok);
    }
    this.journal.done(firing);
    return staged.map((s) => ({ place: s.place, seq: s.seq }));
  }

  /** Whether bounded places have room for these outputs (writers' locks held): capacity is never exceeded. */
  private roomFor(outPlaces: Place[]): boolean {
    for (const p of new Set(outPlaces)) {
      const cap = p.spec.capacity;
      if (cap !== undefined && p.occupancy() + outPlaces.filter((x) => x === p).length > cap) return false;
    }
    return true;
  }
}
