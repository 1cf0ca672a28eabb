/**
 * Exclusive, non-blocking flock(2) locks on `<seqfile>.lock`, the same lock the reference takes,
 * so that the two implementations exclude each other.
 */
import fs from 'node:fs';
import { LockedError } from '../base/errors.js';
import { dirSyncSkipped, fdatasyncSync } from './durable.js';
import type { BatchOp } from './fs-batch.js';
import { closeQuietly } from './io.js';
import { FLOCK, nativeFlock, nativeLockOpen } from './native.js';
import { requirePackage } from './require-package.js';
import { openExisting, openLockFile } from './untrusted.js';

const NOTE_MAX = 1024;
/** How long a busy lock is retried before giving up. */
export const BUSY_WAIT_MS = 100;
const pauser = new Int32Array(new SharedArrayBuffer(4));

let fsExt: typeof import('fs-ext') | undefined;

/**
 * flock(2) through the native addon when it is built, else through fs-ext, loaded on first use (it
 * costs start-up), as is node:module to load it (it brings the ES module loader). Fails as fs-ext
 * does: an error with the errno's code (EAGAIN for a lock held elsewhere), its message
 * `CODE, Description`.
 */
function flockSync(fd: number, operation: keyof typeof FLOCK): void {
  const errno = nativeFlock(fd, FLOCK[operation]);
  if (errno === undefined) {
    fsExt ??= requirePackage<typeof import('fs-ext')>('fs-ext');
    fsExt.flockSync(fd, operation);
  } else if (errno !== 0) {
    const names = process.getBuiltinModule('node:util').getSystemErrorMap();
    const [code, text] = names.get(-errno) ?? [`E${errno}`, 'unknown error'];
    const message = `${code}, ${text.charAt(0).toUpperCase()}${text.slice(1)}`;
    throw Object.assign(new Error(message), { errno, code, syscall: 'Flock' });
  }
}

export class FileLock {
  private fd: number | undefined;
  readonly path: string;
  /**
   * The lock file holds no byte, as last read or emptied by this lock (a note written since, or
   * a batch given one to write, clears it): clearNote then has nothing to do. Only the holder of
   * the lock writes notes, so what it knows stays true while it holds it.
   */
  private empty = false;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.fd = fd;
  }

  /**
   * Take the lock now or fail with LockedError. With `create`, the lock file is created when
   * missing; without it, a missing lock file is an ENOENT error. A busy lock is waited out for
   * `waitMs` (BUSY_WAIT_MS unless given). With `wait: false`, one attempt only: a caller that
   * must not block its event loop waits out a busy lock itself (processQueues, asynchronously,
   * for BUSY_WAIT_MS).
   */
  static acquire(path: string, options: { create?: boolean; wait?: boolean; waitMs?: number } = {}): FileLock {
    // The usual case, a lock file there and free, in one call into the addon (opened and checked as
    // below); anything else (a busy lock, an error to say) as below.
    const held = nativeLockOpen(path, options.create !== false);
    if (held !== undefined) return new FileLock(path, held);
    // Not through a link, and a file with one name: a lock file is written (its note), and its
    // directory may be another user's (untrusted.ts).
    const fd = openLockFile(path, options.create !== false);
    // A lock held for an instant (a `queue-status` or `flock -n` probe looking at it) is waited
    // out; a lock that stays held (another queue-process) still fails within a tenth of a second.
    const deadline = options.wait === false ? 0 : Date.now() + (options.waitMs ?? BUSY_WAIT_MS);
    for (;;) {
      try {
        flockSync(fd, 'exnb');
        return new FileLock(path, fd);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const busy = code === 'EAGAIN' || code === 'EWOULDBLOCK';
        if (busy && Date.now() < deadline) {
          Atomics.wait(pauser, 0, 0, 5);
          continue;
        }
        closeQuietly(fd);
        if (busy) throw new LockedError(path);
        throw err;
      }
    }
  }

  get held(): boolean {
    return this.fd !== undefined;
  }

  /**
   * A one-line note kept inside the lock file while the lock is held: queue-process records
   * there the job it is about to finish, so that a run killed half-way through finishing it can
   * be completed by the next one. The reference never reads the lock file's contents.
   */
  readNote(): string {
    const buf = Buffer.alloc(NOTE_MAX);
    const n = fs.readSync(this.descriptor(), buf, 0, NOTE_MAX, 0);
    this.empty = n === 0;
    const text = buf.toString('utf8', 0, n);
    const nl = text.indexOf('\n');
    return nl < 0 ? '' : text.slice(0, nl);
  }

  /**
   * Replace the note (one positional write; a longer old note's tail is ignored by readNote), and
   * make it durable: queue-process writes it before `nextseq` and the job file change, and a run
   * after a power cut reads it to finish that job (delete its spent file, move `nextseq` past it)
   * instead of leaving the file below `nextseq` or running the job again. A note lost with the
   * page cache would leave exactly that.
   */
  writeNote(line: string): void {
    const buf = noteBytes(line);
    this.empty = false;
    // A regular file takes a write this small whole.
    fs.writeSync(this.descriptor(), buf, 0, buf.length, 0);
    fdatasyncSync(this.descriptor()); // a failure is thrown: the caller must not go on as if the note were durable
  }

  /**
   * writeNote as an operation of a batch (fs-batch.ts), for a caller that runs it with the steps
   * that must follow it: one positional write at the start of the lock file, then fdatasync (as
   * writeNote; not under FSPL_BENCH_NO_DIRSYNC, as fdatasyncSync). Valid while the lock is held.
   */
  noteOp(line: string): BatchOp {
    this.empty = false;
    return { op: 'pwrite', fd: this.descriptor(), position: 0, data: noteBytes(line), datasync: !dirSyncSkipped() };
  }

  /** Empty the lock file; nothing is done to one known to be empty (no call, its times left as they are). */
  clearNote(): void {
    if (this.empty) return;
    fs.ftruncateSync(this.descriptor(), 0);
    this.empty = true;
  }

  private descriptor(): number {
    if (this.fd === undefined) throw new Error(`Lock on ${this.path} is not held`);
    return this.fd;
  }

  /** Release the lock. Safe to call twice. */
  release(): void {
    const fd = this.fd;
    this.fd = undefined;
    if (fd === undefined) return;
    unlockQuietly(fd);
    closeQuietly(fd);
  }
}

/**
 * A note as written: its line, then spaces up to NOTE_MAX bytes (readNote stops at the newline).
 * The lock file keeps one size from note to note, so that the fdatasync after each flushes the
 * data alone: a size that changed would be metadata to commit too (a journal commit on ext4).
 */
function noteBytes(line: string): Buffer {
  const text = Buffer.from(`${line}\n`, 'utf8');
  if (text.length > NOTE_MAX) throw new RangeError('FileLock: note too long');
  const buf = Buffer.alloc(NOTE_MAX, 0x20);
  text.copy(buf);
  return buf;
}

/** True if some process holds the lock on path (probes with a non-blocking shared lock). */
export function isLocked(path: string): boolean {
  let fd: number;
  try {
    fd = openExisting(path).fd;
  } catch {
    return false;
  }
  try {
    flockSync(fd, 'shnb');
    unlockQuietly(fd);
    return false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EAGAIN' || code === 'EWOULDBLOCK';
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Drop the lock held through fd before closing it: a child being started on the addon's spawner
 * thread holds a copy of every descriptor until its exec, and a close alone would leave the lock
 * held meanwhile. LOCK_UN releases it for every copy of the open file description.
 */
function unlockQuietly(fd: number): void {
  try {
    flockSync(fd, 'un');
  } catch {
    // Closing releases it anyway, once the copies are gone.
  }
}
