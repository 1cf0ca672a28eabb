/**
 * Low-level synchronous file-descriptor I/O.
 *
 * Descriptors we inherit may be non-blocking (a pipe shared with a Node parent, say), so EAGAIN
 * is waited out rather than treated as an error. Payload copies between descriptors are in
 * src/sys/copy.ts.
 */
import fs from 'node:fs';
import { loadNative } from './native.js';

const CHUNK = 1 << 20;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function pause(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

function retriable(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EAGAIN' || code === 'EINTR' || code === 'EWOULDBLOCK';
}

/** read(2) once, waiting out EAGAIN/EINTR. Returns 0 at end of file. */
export function readSomeSync(
  fd: number,
  buf: Uint8Array,
  offset: number,
  length: number,
  position: number | null = null,
): number {
  for (;;) {
    try {
      return fs.readSync(fd, buf, offset, length, position);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EOF') return 0;
      if (!retriable(err)) throw err;
      pause(1);
    }
  }
}

/**
 * Write all of buf to fd, coping with short writes and EAGAIN; at `position` (pwrite: the
 * descriptor's offset stays where it is) if given.
 */
export function writeAllSync(
  fd: number,
  buf: Uint8Array,
  offset = 0,
  length = buf.length - offset,
  position: number | null = null,
): void {
  let done = 0;
  while (done < length) {
    try {
      done += fs.writeSync(fd, buf, offset + done, length - done, position === null ? null : position + done);
    } catch (err) {
      if (!retriable(err)) throw err;
      pause(1);
    }
  }
}

/**
 * Read up to n bytes (fewer only at end of file). Memory grows with the bytes that arrive, not
 * with n, so a hostile declared length costs nothing up front.
 */
export function readUpToSync(fd: number, n: number): Buffer {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < n) {
    const part = Buffer.allocUnsafe(Math.min(CHUNK, n - got));
    let filled = 0;
    while (filled < part.length) {
      const r = readSomeSync(fd, part, filled, part.length - filled);
      if (r === 0) break;
      filled += r;
    }
    parts.push(filled === part.length ? part : part.subarray(0, filled));
    got += filled;
    if (filled < part.length) break;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, got);
}

/** fsync, tolerating descriptors that cannot be synced (pipes, some special files). */
export function fsyncSync(fd: number): void {
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EINVAL' || code === 'EROFS' || code === 'ENOTSUP') return;
    throw err;
  }
}

/** fsyncSync off the event loop (libuv's thread pool), tolerating the same descriptors. */
export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) =>
    fs.fsync(fd, (err) => {
      const code = err?.code;
      if (!err || code === 'EINVAL' || code === 'EROFS' || code === 'ENOTSUP') resolve();
      else reject(err);
    }),
  );
}

/** Close a descriptor and ignore errors: used on cleanup paths only. */
export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    fs.closeSync(fd);
  } catch {
    /* already closed or never valid */
  }
}

/**
 * Call `fn` with each entry of a directory, in directory order, as it is read (opendir, 256
 * entries a batch): no array of every name, so the memory does not grow with the directory.
 */
export function forEachDirEntry(dir: string, fn: (entry: fs.Dirent) => void): void {
  const d = fs.opendirSync(dir, { bufferSize: 256 });
  try {
    for (let e = d.readSync(); e !== null; e = d.readSync()) fn(e);
  } finally {
    d.closeSync();
  }
}

/** At most this many names are read in one call into the addon; a larger directory is read as a stream. */
const NAMES_AT_ONCE = 4096;

/**
 * Call `fn` with the name of each entry of `dir` but . and .., in directory order. A small directory
 * is read in one call into the addon: a Dir and a Dirent a name cost several times that. A larger
 * one, or one the addon can't read, goes through forEachDirEntry: its memory does not grow with the
 * directory, and its errors are Node's own.
 */
export function forEachDirName(dir: string, fn: (name: string) => void): void {
  const names = loadNative()?.names?.(dir, NAMES_AT_ONCE);
  if (Array.isArray(names)) for (const name of names) fn(name);
  else forEachDirEntry(dir, (e) => fn(e.name));
}

/**
 * Whether `dir` has no entry but . and ..; throws as reading it does. The addon stops at the first
 * name (`names(dir, 0)`); without it, a Dir reads one batch.
 */
export function isEmptyDir(dir: string): boolean {
  const names = loadNative()?.names?.(dir, 0);
  if (Array.isArray(names)) return true;
  if (names === null) return false;
  const d = fs.opendirSync(dir);
  try {
    return d.readSync() === null;
  } finally {
    d.closeSync();
  }
}

/** Remove a file and ignore "not there": used on cleanup paths only. */
export function unlinkQuietly(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    /* nothing to clean up */
  }
}

/** Write all of buf: a write may be cut short (a full disk), and then the next one reports why. */
export async function writeAllAsync(handle: fs.promises.FileHandle, buf: Uint8Array): Promise<void> {
  for (let done = 0; done < buf.length; ) done += (await handle.write(buf, done, buf.length - done)).bytesWritten;
}

/** The errors waited out rather than stopped on: the disk full, over quota, or failing. */
const WAITED_OUT: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EIO']);

/**
 * Whether this error is a fault of the disk that passes (full, over quota, failing) rather than a
 * mistake: a net run and an outbox's sender wait it out, with a backoff, instead of stopping.
 */
export function isIoFault(err: unknown): err is NodeJS.ErrnoException {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && WAITED_OUT.has(code);
}
