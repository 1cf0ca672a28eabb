/**
 * Steps 1 to 3 of a group commit (commit.ts, its table): the outputs staged in their places, their
 * numbers stored, the group recorded in the journal, in batches of file operations (fs-batch.ts);
 * and steps 4 and 5 after them in the same last batch, when planned (publish.ts). A step that
 * fails throws a GroupFailed, which says how far the group went (commit-faults.ts).
 */
import path from 'node:path';
import type { PacketHeader } from '../../packet/index.js';
import { type BatchOp, firstFailedStep, firstFailure, runBatch, runBatchesAtOnce } from '../../sys/fs-batch.js';
import { closeQuietly, unlinkQuietly } from '../../sys/io.js';
import type { SeqFile } from '../../sys/seqfile.js';
import { createParts, type Place, type StagedFile } from '../place/place.js';
import type { Token, TokenContent } from '../place/token.js';
import { GroupFailed } from './commit-faults.js';
import type { CommitRecord, ConsumedInput, Journal, StagedOutput } from './journal.js';
import type { FinishPlan } from './publish.js';
import type { CommitRequest } from './request.js';

/**
 * A group with more parts than this fsyncs them side by side, in batches of their own (fs-batch.ts
 * runBatchesAtOnce); a smaller one, in order in the step's one batch: one hand-off to the pool.
 */
const LANE_FILES = 8;

/** What a group's last batch did: the first of steps 1 to 3 that failed, and the results of steps 4 and 5. */
interface LastBatch {
  failure?: { step: number; err: NodeJS.ErrnoException } | undefined;
  rest?: Int32Array;
}

/** What a group's steps 1 to 3 made (and 4 and 5, when they ran in the same batch: `finished`). */
export interface Staged {
  records: CommitRecord[];
  headers: Map<StagedOutput, PacketHeader>;
  finished?: StagedOutput[];
}

/**
 * Steps 1 to 3: every output written under a temporary name with its number, the files and
 * their names made durable, then the numbers stored, once per place, then the group recorded in
 * the journal: one batch of file operations, in order, each `must` (a failure stops what follows).
 * A group of more than LANE_FILES parts fsyncs them first, side by side (each fsync waits for its
 * own journal commit). `owning` is told the records before anything of them is published. With
 * `then`, steps 4 and 5 (planned by it once the records exist) run at the end of the same last
 * batch, after the journal's fsync, and `finished` is what finish() would have returned.
 * One function on purpose: the batches are built from the same planned parts,
 * sendseq writes and records, in the table's order, and a failure at any point must know them all
 * to say how far the group went (GroupFailed).
 */
export async function stageGroup(
  places: Map<string, Place>,
  journal: Journal,
  requests: CommitRequest[],
  writers: SeqFile[],
  owning: (records: CommitRecord[]) => void,
  then?: (records: CommitRecord[]) => FinishPlan,
): Promise<Staged> {
  const byDir = new Map(writers.map((w) => [path.dirname(w.path), w]));
  const nextSeq = new Map<Place, bigint>();
  const records: CommitRecord[] = [];
  const headers = new Map<StagedOutput, PacketHeader>();
  const planned: Array<{ p: Place; content: TokenContent; part: StagedFile; staged: StagedOutput }> = [];
  for (const req of requests) {
    const outputs: StagedOutput[] = [];
    for (const o of req.outputs) {
      const p = places.get(o.place)!;
      const seq = nextSeq.get(p) ?? byDir.get(p.spec.dir)!.read();
      nextSeq.set(p, seq + 1n);
      const staged: StagedOutput = { place: o.place, seq, temp: '', final: '' };
      outputs.push(staged);
      planned.push({ p, content: o.content, part: p.planPart(seq, o.content, req.firing.slice(0, 8)), staged });
    }
    records.push({
      firing: req.firing,
      transition: req.transition,
      outputs,
      inputs: req.inputs.map((tok) => consumed(places, tok)),
    });
  }
  // A part whose payload is in memory or in a file of its own is written whole on the pool
  // (Place.partOp: created, filled and fsynced in step 1's batch); the others are created in a
  // batch of their own and filled on the event loop (createParts), then fsynced in step 1.
  const direct = planned.map((x) => x.p.partOp(x.part, x.content));
  const mark = journal.mark();
  const failed = (step: number, err: unknown) =>
    new GroupFailed(
      step,
      err as NodeJS.ErrnoException,
      planned.map((x) => ({ place: x.p, temp: x.part.temp })),
      records,
      headers,
      mark,
    );
  const files = await createParts(planned.filter((_, n) => direct[n] === undefined)).catch((err: unknown) => {
    throw failed(0, err); // createParts removed what it made
  });
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
  const perFile = [
    ...direct.filter((op): op is BatchOp => op !== undefined),
    ...files.map((f): BatchOp => ({ op: 'fsync', fd: f.fd, must: true })),
  ];
  // The directories' fsyncs after every part is created: they make the parts' names durable.
  const dirs = [...nextSeq.keys()].map((p): BatchOp => ({ op: 'fsyncDir', path: p.queue.jobsDir, must: true }));
  const aside = sendseqs.map((w) => w.prepare);
  // Step 2: each sendseq renamed, its place fsynced: after a power cut, no number is handed out
  // again. Step 3: the group's line, written and fsynced.
  const store = sendseqs.flatMap((w) => w.store);
  const record = [journal.recordOp(records)];
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
    throw failed(failure.step, failure.err);
  }
  journal.recorded();
  if (!tail) return { records, headers };
  try {
    return { records, headers, finished: tail.settle(rest!) };
  } catch (err) {
    throw failed(3, err);
  }
}

function consumed(places: Map<string, Place>, tok: Token): ConsumedInput {
  return { place: tok.place, seq: tok.seq, file: tok.path, sequence: places.get(tok.place)!.order === 'sequence' };
}
