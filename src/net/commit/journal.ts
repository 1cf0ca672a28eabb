/**
 * The runner's journal: an append-only file of JSON lines recording each
 * commit before it is carried out, and its end once it is. A commit record names everything the
 * commit will do (packets to rename into places, input tokens to consume), and every step is
 * idempotent, so after a crash at any instant the runner redoes the commits that have no end
 * record and the net is as if each had completed exactly once.
 *
 * Commits are recorded by group (commit.ts): the records of a group go on one line, written with
 * one write(2) and fsynced once, so a group is recorded whole or not at all. A torn last line (a
 * crash during the write) is ignored: its commits had not happened yet, since nothing is done
 * before the fsync. The group's end is one line too. Single-commit lines (`commit`, `done` with
 * `f`) are still read.
 *
 * A power cut keeps only what was fsynced (src/sys/durable.ts), so the journal itself is made durable
 * when opened (the file's name, by an fsync of its directory), and the runner makes each step of
 * a commit durable before the next depends on it (commit.ts).
 *
 * A full disk or an I/O error may cut a line short, and the next line would then be glued to the
 * fragment and be lost with it. So a group whose line failed is taken back (`rollback`: the file
 * truncated to its size before the line, and fsynced; a line whose fsync failed may be on the
 * disk or not, and is taken back the same way), and while that is not known to have worked the
 * next line starts with a newline of its own: the fragment is a line of its own, which readers
 * skip as a torn one. A failed end record (`done`) is taken back too, or left: the commits it
 * ended are complete, and recovery redoing them changes nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../../sys/durable.js';
import type { BatchOp } from '../../sys/fs-batch.js';
import { closeQuietly, fsyncAsync, fsyncSync, writeAllSync } from '../../sys/io.js';
import { openForWriting } from '../../sys/untrusted.js';
import { isIoFault } from './io-faults.js';

/** A packet staged under a temporary name in a place's jobs/, to be renamed to its final name. */
export interface StagedOutput {
  place: string;
  seq: bigint;
  /** Absolute paths. */
  temp: string;
  final: string;
}

/** An input token to consume: the file is deleted, and a sequence-ordered place's nextseq moved past it. */
export interface ConsumedInput {
  place: string;
  seq: bigint;
  /** Absolute path of the job file. */
  file: string;
  sequence: boolean;
}

export interface CommitRecord {
  firing: string;
  transition: string;
  outputs: StagedOutput[];
  inputs: ConsumedInput[];
}

type Line =
  | { t: 'commit'; c: CommitRecord }
  | { t: 'group'; cs: CommitRecord[] }
  | { t: 'done'; f: string }
  | { t: 'done'; fs: string[] };

const COMPACT_BYTES = 256 * 1024;

export class Journal {
  readonly path: string;
  private fd: number;
  private size: number;
  /** A line may have been cut short at the end of the file: the next one starts on a line of its own. */
  private torn = false;

  constructor(file: string) {
    this.path = file;
    this.fd = openForWriting(file, { append: true, mode: 0o644 });
    this.size = fs.fstatSync(this.fd).size;
    // The journal's name is durable before any commit is recorded in it: otherwise a power cut
    // takes the whole file, fsynced records and all, and recovery finds no commit to finish.
    fsyncDir(path.dirname(file));
  }

  /** The commits recorded and not ended, in journal order. */
  static pending(file: string): CommitRecord[] {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const open = new Map<string, CommitRecord>();
    for (const line of text.split('\n')) {
      if (!line) continue;
      let rec: Line;
      try {
        rec = JSON.parse(line, reviveBigints) as Line;
      } catch {
        continue; // a torn last line
      }
      if (rec.t === 'commit') open.set(rec.c.firing, rec.c);
      else if (rec.t === 'group') for (const c of rec.cs) open.set(c.firing, c);
      else if ('fs' in rec) for (const f of rec.fs) open.delete(f);
      else open.delete(rec.f);
    }
    return [...open.values()];
  }

  /** Append one line with one write(2) (into the page cache: it is not fsynced here). */
  private append(rec: Line): void {
    const line = this.lead() + lineOf(rec);
    // Written as a string: a Buffer per record would come from Node's shared pool, whose 8 KiB
    // slabs live long enough to be collected only by full GCs, and a long run's RSS would grow.
    const length = Buffer.byteLength(line);
    const n = fs.writeSync(this.fd, line);
    if (n < length) writeAllSync(this.fd, Buffer.from(line).subarray(n));
    this.size += length;
  }

  /**
   * Recording a group, durably, as an operation of a batch (fs-batch.ts): its line written with
   * one write(2) and fsynced, on the pool thread, in its turn among the commit's steps (the line
   * must not reach the file before the steps ahead of it are durable: the kernel may write a
   * page back at any time). The group is recorded once the operation has succeeded: nothing of
   * it is done before.
   */
  recordOp(group: CommitRecord[]): BatchOp {
    const line = this.lead() + lineOf({ t: 'group', cs: group });
    // Not from Node's shared pool (see append); copied by the batch, so it is garbage at once.
    const data = Buffer.allocUnsafeSlow(Buffer.byteLength(line));
    data.write(line);
    this.size += data.length;
    return { op: 'append', fd: this.fd, data, must: true };
  }

  /**
   * The group is fully carried out. With no commit open (the committer records one group at a
   * time), a journal past its size limit starts again empty.
   */
  async done(firings: string[]): Promise<void> {
    // Not fsynced, and it needs none: the committer calls this only once every step of the group
    // is durable, so should a power cut lose the record, recovery redoes commits that are
    // complete, and each of their steps is idempotent (a renamed output already there, or since
    // consumed, is left alone). The next group's fsync makes it durable anyway. A truncation
    // (below) is fsynced, and comes only once every commit recorded is complete and durable.
    const before = this.size;
    try {
      this.append({ t: 'done', fs: firings });
    } catch {
      // A full disk or an I/O error: the commits stay open in the journal, and recovery would
      // redo them, which changes nothing. A fragment of the line is taken back if it can be.
      this.takeBack(before);
      return;
    }
    if (this.size <= COMPACT_BYTES) return;
    try {
      await new Promise<void>((resolve, reject) => fs.ftruncate(this.fd, 0, (err) => (err ? reject(err) : resolve())));
      await fsyncAsync(this.fd);
      this.size = 0;
      this.torn = false;
    } catch {
      this.torn = true; // compacted next time; meanwhile its lines are as good as ever
    }
  }

  /** The journal's size now: what `rollback` takes it back to. */
  mark(): number {
    return this.size;
  }

  /** The line of a group was written in full and fsynced: the end of the file is a line's end. */
  recorded(): void {
    this.torn = false;
  }

  /**
   * Take back what was appended since `mark` (a group's line that failed, or whose fsync failed):
   * the file truncated to that size and fsynced. Throws if that fails: then the line may still be
   * on the disk, and the group must be carried out (commit.ts).
   */
  rollback(size: number): void {
    this.torn = true;
    fs.ftruncateSync(this.fd, size);
    fsyncSync(this.fd);
    this.size = size;
    this.torn = false;
  }

  /** As rollback, for a line that needs no durability (an end record): on failure, the next line starts on its own. */
  private takeBack(size: number): void {
    try {
      fs.ftruncateSync(this.fd, size);
      this.size = size;
      this.torn = false;
    } catch {
      this.torn = true;
    }
  }

  /** What a line starts with: a newline after a line that may have been cut short. */
  private lead(): string {
    return this.torn ? '\n' : '';
  }

  /** Empty the journal: only when no commit is open. */
  truncate(): void {
    fs.ftruncateSync(this.fd, 0);
    fsyncSync(this.fd);
    this.size = 0;
  }

  /**
   * Empty the journal as a run ends (no commit open), if the disk lets it. On a full disk or an
   * I/O error it stays as it is (or is empty: its fsync failed): every commit in it is complete,
   * and the next run's recovery redoing them changes nothing. Returns the error met, if any.
   */
  emptyAtEnd(): NodeJS.ErrnoException | undefined {
    try {
      this.truncate();
      return undefined;
    } catch (err) {
      if (!isIoFault(err)) throw err;
      return err;
    }
  }

  close(): void {
    closeQuietly(this.fd);
    this.fd = -1;
  }
}

/**
 * A record as one line, its sequence numbers (bigint) written as `"12n"` (reviveBigints reads
 * them back). They are put in as strings first: JSON.stringify with a replacer function calls it
 * for every key and value, several times the cost of the line itself, once for each firing.
 */
function lineOf(rec: Line): string {
  const plain =
    rec.t === 'commit'
      ? { t: rec.t, c: plainCommit(rec.c) }
      : rec.t === 'group'
        ? { t: rec.t, cs: rec.cs.map(plainCommit) }
        : rec;
  return `${JSON.stringify(plain)}\n`;
}

/** A commit record with its bigints as `"12n"` strings, its keys in the same order. */
function plainCommit(c: CommitRecord): object {
  return {
    firing: c.firing,
    transition: c.transition,
    outputs: c.outputs.map((o) => ({ place: o.place, seq: `${o.seq}n`, temp: o.temp, final: o.final })),
    inputs: c.inputs.map((i) => ({ place: i.place, seq: `${i.seq}n`, file: i.file, sequence: i.sequence })),
  };
}

function reviveBigints(_k: string, v: unknown): unknown {
  return typeof v === 'string' && /^\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v;
}
