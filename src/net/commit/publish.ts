/**
 * Steps 4 and 5 of the commit protocol (commit.ts, its table): a recorded group's outputs
 * published (renamed into their places, their jobs/ fsynced) and then its inputs consumed (a
 * sequence place's nextseq stored past them, the files unlinked, their jobs/ fsynced), planned as
 * one batch's operations in that order. The committer runs the plan at the end of step 3's
 * batch, or alone (recovery, and the kill -9 tests' probe); either way the plan's `settle` reads
 * the results.
 *
 * Durability: each operation but the unlinks is `must`, so a failure stops what follows: no
 * input is consumed while an output it led to may not be durably in its place, and no nextseq
 * moves past a file whose output could still vanish. The end record (step 6) needs no fsync.
 */
import path from 'node:path';
import { type BatchOp, batchError, firstFailedStep } from '../../sys/fs-batch.js';
import type { SeqFile } from '../../sys/seqfile.js';
import { published } from '../place/place.js';
import type { CommitRecord, ConsumedInput, StagedOutput } from './journal.js';

/** Steps 4 and 5 of some commits, planned. */
export interface FinishPlan {
  /** The batch's operations, by step. */
  steps: BatchOp[][];
  /** From the batch's results: the outputs renamed now or before (throws the first failure). */
  settle(results: Int32Array): StagedOutput[];
  /** Not run at all (an earlier step failed): nothing is stored. */
  abandon(): void;
}

/**
 * Steps 4 and 5 of these commits. `consumers` are the consumer seqfiles of the places the run
 * reads; `next` is the run's view of each one's nextseq, updated by `settle` once stored.
 */
export function planFinish(
  commits: CommitRecord[],
  consumers: Map<string, SeqFile>,
  next: Map<string, bigint>,
): FinishPlan {
  const outputs = commits.flatMap((c) => c.outputs);
  const inputs = commits.flatMap((c) => c.inputs);
  const consume = prepareConsume(inputs, consumers, next);
  // One batch, in order, each operation but the unlinks `must` (a failure stops what follows:
  // no input is consumed while an output it led to may not be in its place). A rename's ENOENT
  // is no failure: in recovery the output was renamed before, or renamed, made durable and
  // consumed downstream before the cut ('gone'); published() tells which.
  const renames = outputs.map(
    (o): BatchOp => ({ op: 'rename', from: o.temp, to: o.final, must: true, missingOk: true }),
  );
  const outDirs = fsyncDirOps(outputs.map((o) => path.dirname(o.final)));
  // Step 5: each nextseq's new value written aside, then stored (durably) before any unlink: a
  // place never waits for a number whose file is gone. Then the unlinks, and their directories'
  // fsyncs.
  // Not `must`: an unlink that fails leaves the others, and the directories' fsyncs, to be done.
  const unlinks = inputs.map((i): BatchOp => ({ op: 'unlink', path: i.file, missingOk: true }));
  const inDirs = fsyncDirOps(inputs.map((i) => path.dirname(i.file)));
  const steps = [renames, outDirs, consume.prepare, consume.store, unlinks, inDirs];
  return {
    steps,
    settle: (r) => {
      const failure = firstFailedStep(steps, 0, r);
      // The nextseqs: stored when every operation up to them succeeded.
      if (failure && failure.step <= 3) consume.failed();
      else consume.stored();
      if (failure) throw failure.err;
      const states = outputs.map((o, n) => published(o.final, r[n]! < 0 ? batchError(renames[n]!, r[n]!) : undefined));
      return outputs.filter((_, n) => states[n] !== 'gone');
    },
    abandon: () => consume.failed(),
  };
}

/**
 * Consuming these inputs, prepared: a sequence place's nextseq is to move past the last of its
 * inputs, durably before any unlink. `prepare` writes the new values aside; `store` (must, at
 * the head of the unlinks' batch) stores them; `stored` then updates the run's view.
 */
function prepareConsume(
  inputs: ConsumedInput[],
  consumers: Map<string, SeqFile>,
  next: Map<string, bigint>,
): { prepare: BatchOp[]; store: BatchOp[]; stored(): void; failed(): void } {
  const past = new Map<string, bigint>();
  for (const i of inputs) {
    if (!i.sequence || !consumers.has(i.place)) continue;
    const v = i.seq + 1n;
    if (v > (past.get(i.place) ?? next.get(i.place) ?? 0n)) past.set(i.place, v);
  }
  const writes = [...past].map(([place, v]) => ({ place, v, w: consumers.get(place)!.batchWrite(v) }));
  return {
    prepare: writes.map((x) => x.w.prepare),
    store: writes.flatMap((x) => x.w.store),
    stored: () => writes.forEach((x) => next.set(x.place, x.v)),
    failed: () => writes.forEach((x) => x.w.failed()),
  };
}

function fsyncDirOps(dirs: string[]): BatchOp[] {
  return [...new Set(dirs)].map((d) => ({ op: 'fsyncDir', path: d, must: true }));
}
