/**
 * Sequence files: one decimal number and a newline, guarded by `<path>.lock`.
 * Updates go to `<path>.temp`, are fsynced, renamed over the file, and the directory is fsynced
 * (src/sys/durable.ts): a number written is a number kept, across a power cut too.
 *
 * Trust: a seqfile's directory may be writable by others (a place under `net init
 * --permissions`: its reader owns it, its writers' group may write it), so `.temp` is made anew
 * whatever was planted there (untrusted.ts: unlinked, then O_EXCL|O_NOFOLLOW), the seqfile and
 * its lock are opened without following a link, and a seqfile that belongs to another user (the
 * place's) keeps its owner and mode when root replaces it (set through the temp's descriptor).
 */
import fs from 'node:fs';
import path from 'node:path';
import { BadSeqfileError, namePath, QueueError, SeqOverflowError } from '../base/errors.js';
import { U64_MAX } from '../base/u64.js';
import { fsyncDir } from './durable.js';
import type { BatchOp } from './fs-batch.js';
import { closeQuietly, fsyncSync, unlinkQuietly, writeAllSync } from './io.js';
import { FileLock } from './lock.js';
import { nativeReadSmall, nativeStatInfo } from './native.js';
import { parseSeqfileText, readSeqText, seqParseProblem, seqTextBuffer } from './seq-text.js';
import { CREATE_NEW, createFresh, type FileOwner } from './untrusted.js';

export interface SeqfileOptions {
  /**
   * Create the lock file when missing: the sender side. A queue's lock file must exist (it is
   * missing in append-only queues). Either way, a missing seqfile is created holding 1 once the
   * lock is held, as the reference does.
   */
  create?: boolean;
  /** false: fail at once when the lock is busy, instead of waiting it out for a moment (FileLock.acquire). */
  wait?: boolean;
}

/** Why a seqfile (and its lock file) can't be created: its directory. */
function missingDirectory(file: string, code: string): string {
  const what = code === 'ENOENT' ? 'does not exist' : 'is not a directory (or one above it is not)';
  return `Cannot create the sequence file ${file}: its directory ${path.dirname(file)} ${what}`;
}

/** What a seqfile's lstat says that its lock uses: what it is, and its owner and mode. */
interface SeqfileStat {
  file: boolean;
  link: boolean;
  uid: number;
  gid: number;
  mode: number;
}

/**
 * When root replaces another user's seqfile (a place's, under --permissions), the new file keeps
 * that owner, group and mode: otherwise the place's own users could no longer write it. `st`:
 * the seqfile's lstat when the lock was taken (undefined: none there).
 */
function keptOwner(st: SeqfileStat | undefined): FileOwner | undefined {
  if (!st?.file || process.geteuid?.() !== 0) return undefined;
  if (st.uid === 0 && st.gid === process.getegid?.()) return undefined;
  return { uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
}

/**
 * The seqfile's lstat, undefined when it can't be had (none there, or not to be looked at).
 * Through the addon when it is there: a queue-process pass takes it for every queue, and Node's
 * fs.Stats comes with four Dates (native.ts nativeStatInfo).
 */
function lstatOf(file: string): SeqfileStat | undefined {
  const info = nativeStatInfo(file, false);
  if (info !== undefined) {
    if (info === null) return undefined;
    const type = info.mode & fs.constants.S_IFMT;
    return { ...info, file: type === fs.constants.S_IFREG, link: type === fs.constants.S_IFLNK };
  }
  try {
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    return st && { file: st.isFile(), link: st.isSymbolicLink(), uid: st.uid, gid: st.gid, mode: st.mode };
  } catch {
    return undefined;
  }
}

/**
 * readSeqText (opened as it opens one, the first 4 KiB read) in one call into the addon: a queue's
 * nextseq is read twice a turn (peek, then under the lock). Anything that fails there is read
 * again through readSeqText, which says what went wrong.
 */
function seqText(file: string): string {
  const buf = seqTextBuffer();
  const n = nativeReadSmall(file, buf);
  return n === undefined ? readSeqText(file) : buf.toString('utf8', 0, n);
}

/** A seqfile held under its lock. Obtain with SeqFile.lock(); call release() when done. */
export class SeqFile {
  readonly path: string;
  private readonly lock: FileLock;
  /** batchWrite's parts that are the same for every value, made on first use. */
  private batch: ReturnType<SeqFile['batchParts']> | undefined;
  /** The owner and mode a replacement keeps: another user's seqfile replaced by root (undefined: ours). */
  private readonly owner: FileOwner | undefined;

  private constructor(path: string, lock: FileLock, st: SeqfileStat | undefined) {
    this.path = path;
    this.lock = lock;
    this.owner = keptOwner(st);
  }

  /** Take the seqfile's lock (failing at once with LockedError if it is busy). */
  static lock(path: string, options: SeqfileOptions = {}): SeqFile {
    let lock: FileLock;
    try {
      lock = FileLock.acquire(`${path}.lock`, { create: options.create ?? false, wait: options.wait });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Creating it (a sender's seqfile), only its directory can be missing; opening it, the
      // lock file itself: a queue's nextseq.lock, absent from append-only queues.
      if (options.create && (code === 'ENOENT' || code === 'ENOTDIR')) {
        throw new BadSeqfileError(missingDirectory(path, code));
      }
      if (code === 'ENOENT') {
        throw new QueueError(
          `Cannot open lock file ${path}.lock: No such file or directory (an append-only queue, or not a queue?)`,
          {
            cause: err,
          },
        );
      }
      throw err;
    }
    // One lstat for the owner a replacement keeps and for whether there is a seqfile at all (a
    // link counts as one only if it leads to something, as existsSync says).
    const st = lstatOf(path);
    const sf = new SeqFile(path, lock, st);
    if (!st || (st.link && !fs.existsSync(path))) {
      try {
        sf.write(1n);
      } catch (err) {
        lock.release();
        throw err;
      }
    }
    return sf;
  }

  /** Run fn with the seqfile locked, releasing the lock afterwards. */
  static with<T>(path: string, options: SeqfileOptions, fn: (sf: SeqFile) => T): T {
    const sf = SeqFile.lock(path, options);
    try {
      return fn(sf);
    } finally {
      sf.release();
    }
  }

  /**
   * The value read without the lock: a hint for a reader that takes the lock before acting on it
   * (the file is replaced whole, by a rename, so it is never read half-written). Undefined when
   * it can't be read or holds no number; read() under the lock says why.
   */
  static peek(path: string): bigint | undefined {
    try {
      return parseSeqfileText(seqText(path));
    } catch {
      return undefined;
    }
  }

  read(): bigint {
    const text = seqText(this.path);
    const n = parseSeqfileText(text);
    if (n === undefined) {
      const first = text.split('\n')[0]!.trim();
      throw new BadSeqfileError(
        `Invalid sequence file ${this.path}: ${seqParseProblem(first)} (it holds ${JSON.stringify(text.slice(0, 40))})`,
      );
    }
    return n;
  }

  /**
   * Store a value, durably (the module's comment). Should it fail after the rename (the directory's
   * fsync: an I/O error), the new value is there to read but not durable, and the write counts as
   * not done: with `previous` (the value it replaces), that value is put back, so that no one is
   * handed a number that the caller, told of the failure, did not use (a stranded number).
   */
  write(value: bigint, previous?: bigint): void {
    if (value < 0n || value > U64_MAX) throw new SeqOverflowError(this.path);
    const temp = `${this.path}.temp`;
    let fd: number | undefined;
    let renamed = false;
    try {
      fd = createFresh(temp, 0o666, this.owner);
      writeAllSync(fd, Buffer.from(`${value}\n`));
      fsyncSync(fd);
      fs.closeSync(fd);
      fd = undefined;
      fs.renameSync(temp, this.path);
      renamed = true;
      // The rename is durable only with its directory. Every caller depends on it: queue-process
      // would run a finished job again (nextseq), a writer would hand out a number that a durable
      // job already holds (sendseq, prepare -s), a receiver would take a packet twice (recvseq).
      // It also makes the lock file's name durable when the lock created it with the seqfile.
      fsyncDir(path.dirname(this.path));
    } catch (err) {
      closeQuietly(fd);
      unlinkQuietly(temp);
      if (renamed && previous !== undefined) this.putBack(previous);
      throw namePath(err, this.path);
    }
  }

  /** After a write that failed once renamed: the value it replaced, back (best effort). */
  private putBack(previous: bigint): void {
    try {
      this.write(previous);
    } catch {
      // The disk refuses this too: the caller's error says so, and the file says what it holds.
    }
  }

  /**
   * write in two halves of file operations, for a caller that runs them in batches with others,
   * off the event loop (fs-batch.ts; the net runner's group commit stores numbers while firings
   * start): `prepare` writes the new value to `.temp` and fsyncs it (changes nothing);
   * `store`, run after it, renames it over the file and fsyncs the directory (the value is
   * stored, durably, as by write). Should either fail, the caller calls `failed`.
   */
  batchWrite(value: bigint): { prepare: BatchOp; store: readonly BatchOp[]; failed(): void } {
    if (value < 0n || value > U64_MAX) throw new SeqOverflowError(this.path);
    // What does not change from one value to the next is made once (queue-process writes one a job).
    const b = (this.batch ??= this.batchParts());
    return { prepare: { ...b.prepare, data: Buffer.from(`${value}\n`) }, store: b.store, failed: b.failed };
  }

  /** batchWrite's parts that are the same for every value (the same `store` array each time). */
  private batchParts(): { prepare: BatchOp & { op: 'writeFile' }; store: readonly BatchOp[]; failed(): void } {
    const temp = `${this.path}.temp`;
    return {
      // Made anew, whatever was planted at .temp (the module's comment).
      prepare: {
        op: 'writeFile',
        path: temp,
        flags: CREATE_NEW,
        mode: 0o666,
        data: Buffer.alloc(0),
        must: true,
        replace: true,
        owner: this.owner,
      },
      // The rename is durable only with its directory (see write).
      store: Object.freeze([
        { op: 'rename', from: temp, to: this.path, must: true },
        { op: 'fsyncDir', path: path.dirname(this.path), must: true },
      ] as const),
      failed: () => unlinkQuietly(temp),
    };
  }

  /** Return the current value and store the next one; refuses to wrap past 2^64-1. */
  take(): bigint {
    const v = this.read();
    if (v === U64_MAX) throw new SeqOverflowError(this.path);
    this.write(v + 1n, v);
    return v;
  }

  /** The note kept in the lock file (see FileLock.readNote); '' when none. */
  readNote(): string {
    return this.lock.readNote();
  }

  /** writeNote as an operation of a batch (see FileLock.noteOp). */
  noteOp(line: string): BatchOp {
    return this.lock.noteOp(line);
  }

  clearNote(): void {
    this.lock.clearNote();
  }

  release(): void {
    this.lock.release();
  }
}
