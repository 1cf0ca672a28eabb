/**
 * Files in directories that someone less trusted may write (a queue's `jobs/`, a place under
 * `net init --permissions`, a firing's `out/`), where a link may be planted under any name at any
 * moment. docs/security.md says who may write where; this module is how src/ opens files there
 * (test/structure.test.ts keeps the other ways out):
 *
 * - a file made new (createFresh, writeFresh, and the batch operations with `replace`): whatever
 *   is at the name is unlinked (unlink never follows a link), then the file is created with
 *   O_CREAT|O_EXCL|O_NOFOLLOW, which fails rather than follow or reuse anything planted between
 *   the two; its owner and mode are set through its descriptor (fchown, fchmod), never by name;
 * - a file opened as it is (openExisting): O_NOFOLLOW (a link is refused, ELOOP) and O_NONBLOCK
 *   (a FIFO does not hang us), then fstat: only a regular file is taken, and, where it matters,
 *   only one with a single name (a hard link to another file is refused) or one of a given owner;
 * - a file claimed from another user's directory (claimFile): opened as above, checked to be
 *   theirs, renamed into a directory they cannot write, and checked again there to be the file
 *   that was opened (same device and inode): from then on its name is ours;
 * - a tree removed (removeTree): never by following a name through a directory another user may
 *   write; each entry of such a directory is first renamed into a directory of ours, then looked at.
 *
 * Durability: nothing here makes anything durable by itself. A caller whose file must survive a
 * power cut fsyncs it (writeFresh's `fsync`, or its descriptor) before its rename and fsyncs the
 * directory after (sys/durable.ts), as seqfile.ts, pause.ts, received.ts and receive.ts do;
 * claimFile and removeTree work in staging directories, scratch emptied at every open of a run,
 * whose renames and removals need no fsync.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UntrustedFileError } from '../base/errors.js';
import { closeQuietly, writeAllSync } from './io.js';

export { UntrustedFileError };

const { O_WRONLY, O_RDONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY, O_APPEND } = fs.constants;

/** A new file: never an existing name, a link planted there included (EEXIST instead). */
export const CREATE_NEW = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
/**
 * A job file or a token, read: never through a link (whoever writes jobs/ may plant one, to a file
 * only the reader may read), and not hanging on a FIFO named like a job.
 */
export const READ_JOB = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
/**
 * A job file or a token opened for reading (READ_JOB), and checked: a regular file with this one
 * name. A hard link is refused as a symbolic link is: whoever may write jobs/ could link a packet
 * only the reader may read (another queue's, another place's) under a job's name.
 */
export function openJobFile(file: string): number {
  return openExisting(file, O_RDONLY, { singleLink: true }).fd;
}

/** A directory opened as it is, not through a link. */
export const OPEN_DIR = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** Who should own a file made for someone else, and its exact mode (not the umask's). */
export interface FileOwner {
  uid: number;
  gid: number;
  mode: number;
}

/** How many times an unlink and a create race someone who keeps planting the name again. */
const CREATE_TRIES = 3;

/**
 * Create `file` anew and return its descriptor (write-only): whatever is at the name is removed
 * (never followed) and the create tried again. With `owner`, the file gets that owner and mode
 * through its descriptor; without, `mode` less the umask, as open(2) gives it. Nothing is durable
 * here: the caller fsyncs the file before it renames or publishes it, and the directory after.
 */
export function createFresh(file: string, mode: number, owner?: FileOwner, flags = CREATE_NEW): number {
  for (let tries = 1; ; tries++) {
    let fd: number;
    try {
      // The create first: the name is free on the common path, and a failed unlink costs an exception.
      fd = fs.openSync(file, flags | CREATE_NEW, mode);
    } catch (err) {
      // Something is there: left by a crash, or planted (by someone who may plant it again).
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= CREATE_TRIES) throw err;
      unlinkUnlessGone(file);
      continue;
    }
    if (owner) {
      try {
        fs.fchownSync(fd, owner.uid, owner.gid);
        fs.fchmodSync(fd, owner.mode);
      } catch (err) {
        closeQuietly(fd);
        throw err;
      }
    }
    return fd;
  }
}

function unlinkUnlessGone(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** createFresh, then the data written and the file closed (not fsynced: the caller says whether it must be). */
export function writeFresh(
  file: string,
  data: string | Uint8Array,
  mode: number,
  options: { owner?: FileOwner; fsync?: boolean } = {},
): void {
  const fd = createFresh(file, mode, options.owner);
  try {
    writeAllSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    if (options.fsync) fs.fsyncSync(fd);
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Append text to a file (made if missing), or nothing if that fails (a full disk, a link): for
 * what is said elsewhere too.
 */
export function appendQuietly(file: string, text: string): void {
  try {
    const fd = openForWriting(file, { append: true, mode: 0o644 });
    try {
      writeAllSync(fd, Buffer.from(text));
    } finally {
      closeQuietly(fd);
    }
  } catch {
    // said elsewhere
  }
}

/** A write stream into a file made new by createFresh (it closes the descriptor when it ends). */
export function freshWriteStream(file: string, mode: number): fs.WriteStream {
  return fs.createWriteStream(file, { fd: createFresh(file, mode) });
}

/** What openExisting checks of the file it opened, beyond its being a regular file. */
export interface ExistingCheck {
  /** Only a file with this one name (st_nlink 1): a hard link to another file is refused. */
  singleLink?: boolean;
  /** Only a file of this owner. */
  uid?: number;
}

/**
 * Open an existing file without following a link or hanging on a FIFO, and check what was opened:
 * a regular file (and what `check` asks). flags: O_RDONLY (default), O_WRONLY or O_RDWR, with
 * O_CREAT allowed only for a lock file's kind of use (created if missing, never truncated).
 */
export function openExisting(
  file: string,
  flags: number = O_RDONLY,
  check: ExistingCheck = {},
  mode = 0o666,
): { fd: number; stat: fs.Stats } {
  let fd: number;
  try {
    fd = fs.openSync(file, flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new UntrustedFileError(file, 'it is a symbolic link');
    throw err;
  }
  try {
    const stat = fs.fstatSync(fd);
    const why = whyNot(stat, check);
    if (why) throw new UntrustedFileError(file, why);
    return { fd, stat };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}

function whyNot(st: fs.Stats, check: ExistingCheck): string | undefined {
  if (!st.isFile()) return 'it is not a regular file';
  if (check.singleLink && st.nlink !== 1) return `it has ${st.nlink} names (a hard link)`;
  if (check.uid !== undefined && st.uid !== check.uid) return `it belongs to uid ${st.uid}, not to uid ${check.uid}`;
  return undefined;
}

/**
 * A file of ours written in place (a journal, a state file): made if missing, never truncated,
 * never through a link, and one name only.
 */
export function openForWriting(file: string, how: { append?: boolean; mode: number }): number {
  return openExisting(file, O_WRONLY | O_CREAT | (how.append ? O_APPEND : 0), { singleLink: true }, how.mode).fd;
}

/** openExisting for reading or writing a file in place, as lock files are (created if missing, one name only). */
export function openLockFile(file: string, create: boolean): number {
  return openExisting(file, O_RDWR | (create ? O_CREAT : 0), { singleLink: true }).fd;
}

/**
 * A file of ours to write from its start, made if missing (`mode` less the umask) and emptied:
 * never through a link, and never a file that is not a regular file of ours with this one name
 * (UntrustedFileError). For `queue-process --output-to saveboth`'s JOB.out, in jobs/.
 */
export function openOwnFile(file: string, mode: number): number {
  const { fd } = openExisting(file, O_WRONLY | O_CREAT, { singleLink: true, uid: process.geteuid?.() }, mode);
  try {
    fs.ftruncateSync(fd, 0);
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
  return fd;
}

/**
 * Take a file that `uid` made in a directory of theirs (`from`) into a directory they cannot write
 * (`to`'s): it must be a regular file of theirs, and the one renamed must be the one checked.
 * Returns false when there is no such file (ENOENT). Throws UntrustedFileError otherwise.
 */
export function claimFile(from: string, to: string, uid: number): boolean {
  let opened: { fd: number; stat: fs.Stats };
  try {
    opened = openExisting(from, O_RDONLY, { uid });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  try {
    fs.renameSync(from, to);
    // Renamed by name: what moved may not be what was opened, had it been replaced meanwhile.
    const now = fs.lstatSync(to);
    if (now.ino !== opened.stat.ino || now.dev !== opened.stat.dev) {
      fs.unlinkSync(to);
      throw new UntrustedFileError(from, 'it was replaced while it was checked');
    }
    return true;
  } finally {
    closeQuietly(opened.fd);
  }
}

/** How many entries removeTree looks at before it gives up on a tree someone keeps filling. */
const REMOVE_LIMIT = 100_000;
/** How deep it goes: directories nested deeper (made to exhaust the stack) are left. */
const REMOVE_DEPTH = 64;

/**
 * Remove `dir` and all below it, where some directories below may be writable by others (a
 * firing's out/, owned by its user). `dir`'s own name must be safe: its parent writable by us
 * alone. A directory that only we may write is walked as usual; each entry of one that others
 * may write is first renamed into `dir`'s parent (ours), under a name of our own, and looked at
 * only there, so that no name is ever followed through a directory someone else may change.
 * Best effort beyond REMOVE_LIMIT entries or REMOVE_DEPTH levels (someone keeps adding them, or
 * nests them to exhaust the stack): what is left stays, for the next sweep. Never throws.
 */
export function removeTree(dir: string): void {
  const holding = path.dirname(dir);
  const us = process.geteuid?.() ?? 0;
  let n = 0;
  const remove = (p: string, depth: number): void => {
    if (++n > REMOVE_LIMIT || depth > REMOVE_DEPTH) return;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      return;
    }
    if (!st.isDirectory()) {
      unlinkIfThere(p);
      return;
    }
    const ours = st.uid === us && (st.mode & 0o022) === 0;
    for (let round = 0; round < 8 && n <= REMOVE_LIMIT; round++) {
      let names: string[];
      try {
        names = fs.readdirSync(p);
      } catch {
        return;
      }
      if (names.length === 0) break;
      for (const name of names) {
        if (ours) remove(path.join(p, name), depth + 1);
        else {
          const moved = path.join(holding, `.removing-${process.pid}-${n}-${name.length}`);
          try {
            fs.renameSync(path.join(p, name), moved);
          } catch {
            continue;
          }
          remove(moved, depth + 1);
        }
      }
    }
    try {
      fs.rmdirSync(p);
    } catch {
      // Not empty (someone still adds to it) or gone: left for the next sweep.
    }
  };
  remove(dir, 0);
}

function unlinkIfThere(p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    // gone already, or not ours to remove: nothing follows from it
  }
}

/**
 * A path that opens `name` inside the directory held open as `dirFd`, as openat(2) would: through
 * /proc/self/fd, so that the directory is the one opened, not whatever its name leads to now.
 */
export function inDir(dirFd: number, name: string): string {
  return `/proc/self/fd/${dirFd}/${name}`;
}
