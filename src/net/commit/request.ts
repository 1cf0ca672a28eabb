/**
 * The committer's contract: what a run asks of it (a CommitRequest), what it answers (a
 * CommitResult), and what it tells the run as it goes (CommitHooks). Apart from commit.ts, so
 * that the group's staging (stage-group.ts) and its faults (commit-faults.ts) read the same
 * types without importing the committer back.
 */
import type { PacketHeader } from '../../packet/index.js';
import type { Token, TokenContent } from '../place/token.js';
import type { StagedOutput } from './journal.js';

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
 * nothing of it was done, ask again later. The caller updates its view (forgets the inputs, indexes
 * what was published) at a moment of its choosing.
 */
export type CommitResult =
  | {
      committed: true;
      outputs: Array<{ place: string; seq: bigint }>;
      published: Array<{ output: StagedOutput; header: PacketHeader }>;
    }
  /**
   * `behind`: refused only because an earlier request was: it may well commit if asked again at once.
   * `fault`: its group met a full disk or an I/O error (in `place`, or the state's) and was undone.
   */
  | { committed: false; behind: boolean; fault?: { place: string; err: NodeJS.ErrnoException } };

/** What the committer tells its run. */
export interface CommitHooks {
  /** A name a commit is about to write or delete in a place's jobs/: its file event is not news. */
  own(place: string, name: string): void;
  /**
   * A group failed: the run must stop; recovery finishes what was recorded. Not called for a full
   * disk or an I/O error when `carryOn` is set, but for a CommitPostponed once `stop` gave up on one.
   */
  failed(err: unknown): void;
  /** A full disk or an I/O error met in `place` (or the state's, io-faults.ts STATE_PLACE). */
  fault?(place: string, err: NodeJS.ErrnoException): void;
  /** A group committed, writing or consuming in these places. */
  committed?(places: Set<string>): void;
  /**
   * Carry recorded groups out through full disks and I/O errors, trying again after a backoff
   * (the runner); without it such a group fails (`failed`), left to the next recovery (an
   * operator's move, whose command then ends with the error).
   */
  carryOn?: boolean;
  /** For the kill -9 tests only: called once a group is recorded, before anything of it is done. */
  recorded?(size: number): void;
}
