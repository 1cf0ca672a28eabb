/**
 * What survives a power cut, and the two calls that make it so.
 *
 * `kill -9` loses nothing that a process wrote: the kernel's page cache keeps it. A power cut
 * loses the page cache too, and POSIX promises only this much about what is left:
 *
 *   | change                                  | durable once                                  |
 *   | --------------------------------------- | --------------------------------------------- |
 *   | a file's data (write, truncate)         | fsync of that file                            |
 *   | a name: create, rename, unlink, mkdir   | fsync of the directory holding the name       |
 *   | a rename across two directories         | fsync of both (each keeps its own half)       |
 *
 * So a file written under a temporary name, fsynced, renamed into place is whole if it is there
 * at all; it is *there* only once its directory has been fsynced too. Until then, whoever was told
 * "done" may be told a lie (ext4 commits its journal every 5 s or so, which narrows the window
 * but does not close it). Every caller that reports success, or that lets a later step depend on
 * an earlier one, fsyncs the directory first, and says next to the call what it makes durable.
 * test/powercut/ checks all of this under a file system that forgets whatever was not fsynced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { closeQuietly } from './io.js';

/** Errors that mean "this file system or directory cannot be fsynced", not "the data is at risk". */
export function cannotSync(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  // EINVAL/ENOTSUP: a file system without fsync on directories; EROFS: nothing changes anyway;
  // EACCES/EPERM: a directory we may write but not read (a drop box), which open(O_RDONLY) refuses.
  return code === 'EINVAL' || code === 'ENOTSUP' || code === 'EROFS' || code === 'EACCES' || code === 'EPERM';
}

/**
 * For bench/durability.mjs only: FSPL_BENCH_NO_DIRSYNC=1 skips the fsyncs the power-cut protocol
 * added (every directory fsync, and queue-process's note), so that the bench can measure what they
 * cost beside a run that pays it. It gives up the power-cut promise (a job reported written may
 * vanish), so it is named for the bench and documented nowhere else.
 */
const SKIP_DIRSYNC = process.env.FSPL_BENCH_NO_DIRSYNC === '1';

/** Whether FSPL_BENCH_NO_DIRSYNC skips directory fsyncs (for fs-batch.ts, which runs them too). */
export function dirSyncSkipped(): boolean {
  return SKIP_DIRSYNC;
}

/**
 * fsync a directory: the creates, renames and unlinks made in it so far become durable. An I/O
 * error is thrown (the names are at risk, and the caller must not report success); a directory
 * that cannot be fsynced at all is left as it is, as every tool does there.
 */
export function fsyncDir(dir: string): void {
  if (SKIP_DIRSYNC) return;
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    fs.fsyncSync(fd);
  } catch (err) {
    if (!cannotSync(err)) throw err;
  } finally {
    closeQuietly(fd);
  }
}

/** fsync each of these directories once (a commit that renamed several files into one directory pays one fsync). */
export function fsyncDirs(dirs: Iterable<string>): void {
  for (const dir of new Set(dirs)) fsyncDir(dir);
}

/** fsyncDir off the event loop (libuv's thread pool). */
export async function fsyncDirAsync(dir: string): Promise<void> {
  if (SKIP_DIRSYNC) return;
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    await handle.sync();
  } catch (err) {
    if (!cannotSync(err)) throw err;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * `mkdir -p` whose result survives a power cut: each directory it creates is made durable by
 * an fsync of its parent, from the top down, and the new directories themselves are fsynced (so
 * that nothing of theirs is pending either). An existing directory is left as it is.
 */
export function mkdirDurable(dir: string): void {
  const first = fs.mkdirSync(dir, { recursive: true }); // the topmost directory created, if any
  if (first === undefined) return;
  // From the parent of the first new directory down to `dir`: each fsync makes one new name durable.
  const created: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    created.unshift(d);
    if (d === path.resolve(first) || d === path.dirname(d)) break;
  }
  fsyncDir(path.dirname(created[0]!));
  for (const d of created) fsyncDir(d);
}

/**
 * fdatasync for data that must be durable before what follows it (queue-process's note in its
 * lock file): an I/O error or a full disk is thrown, never swallowed, since the data is lost to
 * the disk and a second fdatasync would report success all the same (the "fsyncgate" of 2018); a
 * descriptor that cannot be synced at all (EINVAL, EROFS, ENOTSUP) is left as it is, as io.ts's
 * fsyncSync does. Skipped under FSPL_BENCH_NO_DIRSYNC.
 */
export function fdatasyncSync(fd: number): void {
  if (SKIP_DIRSYNC) return;
  try {
    fs.fdatasyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EROFS' && code !== 'ENOTSUP') throw err;
  }
}
