/**
 * Moving a packet from one queue to another, exactly once, through `kill -9` and power cuts:
 * queue-process --failed-to moves a job that used its tries into a failed-jobs queue,
 * and queue-retry moves it back. The packet takes the target's next number (its header rewritten:
 * the new number, the failure facts added or taken off, a signature dropped since it no longer
 * signs it; the payload copied as it is, seal and all). Plain queues only: the bytes after the
 * header are the payload.
 *
 * The target's numbers come from `TARGET/writeseq` (a sequence file with its lock, as a sender's
 * `prepare -s` file; the reference never reads it), never below the target's nextseq or above a
 * number its jobs/ already holds: a packet always takes a number no other packet there has, and
 * no gap is left (a number is stored as taken only once its packet is durable there).
 *
 * The source keeps a journal, `SOURCE/transfer`, one JSON line naming the job (number and file),
 * the target, the number and the name it gets there (fspl-ID.fspl, ID chosen before any write):
 *
 *   | step                      | durable once                             | a crash after it                        |
 *   | ------------------------- | ---------------------------------------- | --------------------------------------- |
 *   | 1. the target's writeseq  | (nothing changes)                        | nothing done: the job is as before      |
 *   | locked, number K          |                                          |                                         |
 *   | 2. the journal            | transfer.temp fsynced, renamed, the      | the next run finds the journal, no      |
 *   |                           | source directory fsynced                 | packet in the target: writes it         |
 *   | 3. the packet in          | its temp file fsynced, renamed, TARGET/  | the next run finds it there: does not   |
 *   | TARGET/jobs/fspl-ID.fspl  | jobs fsynced (writeJobSync)              | write it again                          |
 *   | 4. writeseq past K,       | writeseq.temp fsynced, renamed, TARGET   | (a number is never given twice: the     |
 *   | unlocked                  | fsynced (SeqFile.write)                  | next taker sees K in jobs/)             |
 *   | 5. the job recorded in    | the caller's own record (finish.ts)      | the journal is stale: removed           |
 *   | the source (caller)       |                                          |                                         |
 *   | 6. the journal removed    | the source directory fsynced             | (removed again, harmlessly)             |
 *
 * On its next start the source completes a journal it finds (completeTransfer): the packet is
 * "there" when TARGET/jobs/fspl-ID.fspl exists, or when the target's nextseq is past K (it ran
 * there already, in sequence order); otherwise it is written now, with a number taken again.
 * What it can not see: the packet taken out of the target (queue-retry, or a timestamp-order run
 * that deletes it) in the moment between a crash after step 3 and the source's next start; the
 * packet then comes a second time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';
import { LockedError, QueueError } from '../base/errors.js';
import { encodeHeader } from '../packet/codec.js';
import { readHeaderAndLengthSync } from '../packet/read.js';
import type { FailureFacts, PacketHeader } from '../packet/types.js';
import { fsyncDir } from '../sys/durable.js';
import { closeQuietly, readSomeSync, unlinkQuietly, writeAllSync } from '../sys/io.js';
import { SeqFile } from '../sys/seqfile.js';
import { openExisting, writeFresh } from '../sys/untrusted.js';
import { writeJobSync } from './job-write.js';
import type { JobEntry } from './jobs.js';
import { Queue } from './queue.js';
import { queueDirKind } from './queue-dirs.js';

export const TRANSFER_FILE = 'transfer';
export const WRITESEQ_FILE = 'writeseq';
/** The longest journal read back (ours is one short line; a larger file is not read whole). */
const JOURNAL_MAX = 64 * 1024;

/** A transfer under way, as the source's journal names it. */
export interface TransferNote {
  seq: bigint;
  filename: string;
  /** The packet's name in the target: fspl-ID.fspl. */
  id: string;
  /** The target queue's directory, absolute. */
  to: string;
  /** Its number there. */
  number: bigint;
  /** The sequence file the number was taken from (absolute): TARGET/writeseq, or a sender's. */
  numbers: string;
  /** The failure facts the packet carries there (--failed-to); none when it goes back (queue-retry). */
  failure?: FailureFacts;
}

/** Make `dir` a queue if it is not one (a failed-jobs queue, made on first use); QueueError if it is something else. */
export function ensureQueueDir(dir: string): void {
  const kind = queueDirKind(dir);
  if (kind === 'queue') return;
  if (fs.existsSync(dir) && kind === undefined)
    throw new QueueError(`${JSON.stringify(dir)} is not a queue (not a directory)`);
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0)
    throw new QueueError(`${JSON.stringify(dir)} is not a queue (no jobs/ and nextseq in it), and not empty`);
  try {
    if (fs.existsSync(dir)) fs.rmdirSync(dir); // an empty directory: made a queue in its place
    Queue.init(dir); // durable: its jobs/, nextseq, and its name in its parent
  } catch (err) {
    // Another process made it at the same moment (queues that share it): a queue all the same.
    if (queueDirKind(dir) !== 'queue') throw err;
  }
}

/** QueueError unless `from` and `to` are two queues (a packet moved into its own queue would go round for ever). */
export function assertTwoQueues(from: string, to: string): void {
  if (
    path.resolve(from) === path.resolve(to) ||
    (fs.existsSync(to) &&
      fs.statSync(from).ino === fs.statSync(to).ino &&
      fs.statSync(from).dev === fs.statSync(to).dev)
  )
    throw new QueueError(
      `${JSON.stringify(to)} is the queue ${JSON.stringify(from)} itself: a packet moves to another queue`,
    );
}

/** The header the packet gets in the target: its number there, the facts (or none), no signature. */
export function movedHeader(header: PacketHeader, note: TransferNote): PacketHeader {
  const { signature: _dropped, failure: _old, ...rest } = header;
  return note.failure ? { ...rest, seq: note.number, failure: note.failure } : { ...rest, seq: note.number };
}

/**
 * Steps 1 to 4 of the table: the packet of `entry` (a job of the plain queue `from`) written into
 * `to` with its next number, the journal first. The caller then records the job in the source
 * (step 5) and calls clearTransfer (step 6). Returns the journal's note.
 */
export function transferJob(
  from: Queue,
  entry: JobEntry,
  to: Queue,
  how: { failure?: FailureFacts; numbers?: string } = {},
): TransferNote {
  const numbers = path.resolve(how.numbers ?? path.join(to.dir, WRITESEQ_FILE));
  const writeseq = lockNumbers(numbers);
  try {
    const number = nextNumber(to, writeseq);
    const note: TransferNote = {
      seq: entry.header.seq,
      filename: entry.filename,
      id: uuidv4(),
      to: path.resolve(to.dir),
      number,
      numbers,
      failure: how.failure,
    };
    writeJournal(from.dir, note);
    writePacket(from, entry.filename, to, note);
    writeseq.write(number + 1n, number); // the number taken: durable once its packet is
    return note;
  } finally {
    writeseq.release();
  }
}

/**
 * A journal found at start (a transfer a crash cut short): make sure its packet is in the target
 * (written now if it is not there, with a number taken again). Returns the note when the source
 * job is still there to record (step 5, the caller's); undefined, and the journal removed, when
 * the source job is gone (recorded before the crash).
 */
export function completeTransfer(from: Queue): TransferNote | undefined {
  const note = readJournal(from.dir);
  if (!note) return undefined;
  if (!fs.existsSync(from.jobPath(note.filename))) {
    clearTransfer(from.dir);
    return undefined;
  }
  const to = new Queue(note.to, { logger: from.logger });
  const there = fs.existsSync(to.jobPath(`fspl-${note.id}.fspl`)) || (SeqFile.peek(to.seqfilePath) ?? 0n) > note.number;
  if (there) return note;
  from.logger.info(
    'process',
    `Completing the move of job ${note.seq} to ${JSON.stringify(note.to)} that an interrupted run began`,
  );
  const writeseq = lockNumbers(note.numbers);
  try {
    const again: TransferNote = { ...note, number: nextNumber(to, writeseq) };
    writeJournal(from.dir, again);
    writePacket(from, note.filename, to, again);
    writeseq.write(again.number + 1n, again.number);
    return again;
  } finally {
    writeseq.release();
  }
}

/** Step 6: the journal removed, durably (a journal that came back is found stale, and removed again). */
export function clearTransfer(fromDir: string): void {
  const file = path.join(fromDir, TRANSFER_FILE);
  if (!fs.existsSync(file)) return;
  unlinkQuietly(file);
  fsyncDir(fromDir);
}

/**
 * The sequence file the target's numbers come from, locked (made if missing: its value is checked against the queue
 * anyway, nextNumber).
 */
function lockNumbers(file: string): SeqFile {
  // Another queue's move into the same target holds it while it copies a packet: wait it out.
  const deadline = Date.now() + NUMBERS_WAIT_MS;
  for (;;) {
    try {
      return SeqFile.lock(file, { create: true });
    } catch (err) {
      if (!(err instanceof LockedError) || Date.now() > deadline) throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

/** How long a move waits for the target's numbers when another move holds them. */
const NUMBERS_WAIT_MS = 30_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The number a packet takes in `to`: writeseq's, but never one at or below nextseq's past or a number its jobs/ holds.
 */
function nextNumber(to: Queue, writeseq: SeqFile): bigint {
  let n = writeseq.read();
  const next = SeqFile.peek(to.seqfilePath);
  if (next !== undefined && next > n) n = next;
  for (const e of scanSync(to)) if (e >= n) n = e + 1n;
  return n;
}

/** The numbers of the target's jobs (headers read as a scan reads them; unreadable files left out). */
function scanSync(to: Queue): bigint[] {
  const nums: bigint[] = [];
  to.forEachJobFile((name) => {
    const fd = tryOpen(to.jobPath(name));
    if (fd === undefined) return;
    try {
      const seq = headerSeq(fd, to.maxHeaderSize);
      if (seq !== undefined) nums.push(seq);
    } finally {
      closeQuietly(fd);
    }
  });
  return nums;
}

function tryOpen(file: string): number | undefined {
  try {
    return openExisting(file).fd;
  } catch {
    return undefined;
  }
}

/** A job file's number, from its header (read up to the queue's header limit; undefined if it is no packet). */
function headerSeq(fd: number, limit: number): bigint | undefined {
  try {
    return readHeaderAndLengthSync(fd, limit).header.seq;
  } catch {
    return undefined;
  }
}

/** Step 3: the packet, its header rewritten, written into the target as fspl-ID.fspl (durable). */
function writePacket(from: Queue, filename: string, to: Queue, note: TransferNote): void {
  const fd = openExisting(from.jobPath(filename)).fd; // not through a link planted in jobs/
  try {
    const { header, length } = readHeaderAndLengthSync(fd, from.maxHeaderSize);
    const head = encodeHeader(movedHeader(header, note));
    writeJobSync(
      to.jobsDir,
      (out) => {
        writeAllSync(out, head);
        copyFrom(fd, length, out);
      },
      note.id,
    );
  } finally {
    closeQuietly(fd);
  }
}

/** Copy a file's bytes from `offset` to its end, through one fixed buffer (the file's size decides nothing). */
function copyFrom(fd: number, offset: number, out: number): void {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let at = offset; ; ) {
    const n = readSomeSync(fd, buf, 0, buf.length, at);
    if (n === 0) return;
    writeAllSync(out, buf, 0, n);
    at += n;
  }
}

/** Step 2: the journal, durably, in the source directory. */
function writeJournal(fromDir: string, note: TransferNote): void {
  const file = path.join(fromDir, TRANSFER_FILE);
  const line = JSON.stringify(note, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
  writeFresh(`${file}.temp`, `${line}\n`, 0o644, { fsync: true });
  fs.renameSync(`${file}.temp`, file);
  fsyncDir(fromDir); // the rename: the journal is there before the target changes
}

/** The source's journal, if it has one that reads as one. */
export function readJournal(fromDir: string): TransferNote | undefined {
  let fd: number | undefined;
  try {
    fd = openExisting(path.join(fromDir, TRANSFER_FILE)).fd;
    const buf = Buffer.alloc(JOURNAL_MAX);
    const n = fs.readSync(fd, buf, 0, JOURNAL_MAX, 0);
    return parseJournal(buf.subarray(0, n).toString('utf8'));
  } catch {
    return undefined;
  } finally {
    closeQuietly(fd);
  }
}

function parseJournal(text: string): TransferNote | undefined {
  const o = JSON.parse(text) as Record<string, unknown>;
  const { seq, filename, id, to, number, numbers, failure } = o;
  if (
    typeof seq !== 'string' ||
    typeof filename !== 'string' ||
    typeof id !== 'string' ||
    typeof to !== 'string' ||
    typeof number !== 'string'
  )
    return undefined;
  if (typeof numbers !== 'string') return undefined;
  if (!/^[0-9a-f-]{36}$/.test(id) || !/^fspl-[^/]+\.fspl$/.test(filename)) return undefined;
  const f = failure as (Omit<FailureFacts, 'seq'> & { seq: string }) | undefined;
  return {
    seq: BigInt(seq),
    filename,
    id,
    to,
    number: BigInt(number),
    numbers,
    failure: f && { ...f, seq: BigInt(f.seq) },
  };
}
