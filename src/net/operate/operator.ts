/**
 * An operator's move (a retry, a set-aside) is a commit like a firing's: its outputs staged
 * in their places, the move recorded in a journal of its own, the outputs published, the inputs
 * consumed, the end recorded (commit/commit.ts, whose durability table holds here step for step).
 * This file is the one place where operate/ reaches the commit protocol.
 *
 * It keeps its own journal, STATE/operate/journal, under STATE/operate/lock, so that it works
 * whether `net run` runs or not: the runner's journal and run.lock are the runner's. It writes
 * into places as `net put` does (under each place's writers' lock, which a runner's commit takes
 * too), and takes tokens only from places that no transition reads, which no runner touches.
 *
 * A move killed half-way is finished by whoever comes next: the next operator command, or the
 * next `net run` as it opens (recoverOperations, before the runner repairs .part files of its
 * own, which would otherwise take a recorded but unpublished output for an unrecorded one).
 */
import fs from 'node:fs';
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';
import { LockedError, NetError } from '../../base/errors.js';
import { mkdirDurable } from '../../sys/durable.js';
import { FileLock } from '../../sys/lock.js';
import { Committer } from '../commit/commit.js';
import { Journal } from '../commit/journal.js';
import type { CommitHooks, CommitResult } from '../commit/request.js';
import { effectiveOrder, type NetModel } from '../model/model.js';
import { Place } from '../place/place.js';
import type { Token, TokenContent } from '../place/token.js';
import { NOP_PART_PREFIX, setAsidePlace, settleNopPart } from './aside-queue.js';

/** The staging tag of operator moves: their .part files are named net-op-*.part (Place.stage). */
const OP_TAG = 'op-';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function operateDir(net: NetModel): string {
  return path.join(net.stateDir, 'operate');
}

/** The net's local places whose queue exists, as an operator sees them, and the set-aside queue when it exists. */
function localPlaces(net: NetModel, extra: Place[] = []): Map<string, Place> {
  const out = new Map<string, Place>();
  const aside = setAsidePlace(net);
  for (const p of [...extra, aside]) if (p.exists()) out.set(p.name, p);
  for (const spec of net.places.values()) {
    const p = new Place(spec, effectiveOrder(net, spec.name));
    if (p.exists()) out.set(spec.name, p);
  }
  return out;
}

/** One operator session: the operate lock held, what a killed one left finished. */
export class Operator {
  private readonly committer: Committer;
  /** The move under way: a group that fails (an I/O error) rejects it. */
  private failMove: ((err: unknown) => void) | undefined;

  private constructor(
    private readonly lock: FileLock | undefined,
    readonly places: Map<string, Place>,
  ) {
    this.committer = newCommitter(places, (err) => this.failMove?.(err));
  }

  /**
   * Take the operate lock (waiting while another operator holds it) and recover. Read-only (a dry
   * run): no lock, no recovery, and no move.
   */
  static async open(net: NetModel, options: { readOnly?: boolean; extra?: Place[] } = {}): Promise<Operator> {
    const places = localPlaces(net, options.extra);
    if (options.readOnly) return new Operator(undefined, places);
    const dir = operateDir(net);
    mkdirDurable(dir); // the journal goes in it: see Journal's constructor
    for (let tries = 0; ; tries++) {
      try {
        const lock = FileLock.acquire(path.join(dir, 'lock'), { create: true });
        const op = new Operator(lock, places);
        try {
          await finishPending(op.committer, places, path.join(dir, 'journal'));
        } catch (err) {
          op.close();
          throw err;
        }
        return op;
      } catch (err) {
        if (!(err instanceof LockedError)) throw err;
        if (tries >= 600)
          throw new NetError(
            `Another operator command holds ${path.join(dir, 'lock')}: try again once it has finished`,
          );
        await sleep(100);
      }
    }
  }

  /**
   * Move tokens: `outputs` written into their places with new numbers, `inputs` consumed, as one
   * commit. Waits while a writer's lock is busy or a bounded place is full. Returns the numbers.
   */
  async move(
    kind: string,
    outputs: Array<{ place: string; content: TokenContent }>,
    inputs: Token[],
  ): Promise<Array<{ place: string; seq: bigint }>> {
    if (!this.lock) throw new NetError('A read-only operator moves nothing');
    const id = `${OP_TAG}${kind}-${uuidv4()}`; // its first 8 characters name the staged files: net-op-*.part
    for (;;) {
      const done = await new Promise<CommitResult>((resolve, reject) => {
        this.failMove = reject;
        this.committer.submit({ firing: id, transition: `(${kind})`, outputs, inputs }, resolve);
      });
      this.failMove = undefined;
      if (done.committed) return done.outputs;
      // A full disk or an I/O error: the move was undone (its numbers filled), nothing moved; the
      // command ends with the error, and the operator runs it again once there is room.
      if (done.fault) throw done.fault.err;
      await sleep(50);
    }
  }

  close(): void {
    if (!this.lock) return;
    this.committer.journal?.close();
    this.lock.release();
  }
}

/** A committer of operator moves: no run reads these places, nothing to tell but a failure. */
function newCommitter(places: Map<string, Place>, failed: CommitHooks['failed']): Committer {
  return new Committer(places, new Map(), new Map(), { own: () => {}, failed });
}

/** Carry out every move recorded without an end, then drop the staged files of moves never recorded. */
async function finishPending(committer: Committer, places: Map<string, Place>, journalPath: string): Promise<void> {
  const pending = Journal.pending(journalPath);
  committer.journal = new Journal(journalPath);
  await committer.carryOut(pending);
  for (const p of places.values()) {
    const parts = p.partFiles().filter((f) => path.basename(f).startsWith(`net-${OP_TAG}`));
    if (parts.length === 0) continue;
    const writers = committer.lockWriters([p]);
    try {
      for (const part of parts) {
        if (path.basename(part).startsWith(NOP_PART_PREFIX)) settleNopPart(p, part);
        else p.repairPart(writers[0]!, part, readNext(p));
      }
    } finally {
      writers.forEach((w) => w.release());
    }
  }
  committer.journal.truncate();
}

/**
 * For `net run` as it opens, before its own recovery: finish the moves of an operator that was
 * killed. Nothing to do when no operator has ever run, or while one runs (it finishes its own).
 */
export async function recoverOperations(net: NetModel): Promise<void> {
  const dir = operateDir(net);
  if (!fs.existsSync(path.join(dir, 'journal'))) return;
  let lock: FileLock;
  try {
    lock = FileLock.acquire(path.join(dir, 'lock'), { create: true });
  } catch (err) {
    if (err instanceof LockedError) return;
    throw err;
  }
  try {
    const places = localPlaces(net);
    const committer = newCommitter(places, () => {});
    try {
      await finishPending(committer, places, path.join(dir, 'journal'));
    } finally {
      committer.journal?.close();
    }
  } finally {
    lock.release();
  }
}

function readNext(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch {
    return undefined;
  }
}
