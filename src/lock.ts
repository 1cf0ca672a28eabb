/**
 * Exclusive, non-blocking flock(2) locks on `<seqfile>.lock`, the same lock the reference takes,
 * so that the two implementations exclude each other.
 */
import fs from 'node:fs';
import fsExt from 'fs-ext';
import { LockedError } from './errors.js';
import { closeQuietly } from './io.js';

export class FileLock {
  private fd: number | undefined;
  readonly path: string;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.fd = fd;
  }

  /**
   * Take the lock now or fail with LockedError. With `create`, the lock file is created when
   * missing; without it, a missing lock file is an ENOENT error.
   */
  static acquire(path: string, options: { create?: boolean } = {}): FileLock {
    const flags = fs.constants.O_RDWR | (options.create === false ? 0 : fs.constants.O_CREAT);
    const fd = fs.openSync(path, flags, 0o666);
    try {
      fsExt.flockSync(fd, 'exnb');
    } catch (err) {
      closeQuietly(fd);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') throw new LockedError(path);
      throw err;
    }
    return new FileLock(path, fd);
  }

  get held(): boolean {
    return this.fd !== undefined;
  }

  /** Release the lock (closing the descriptor releases it). Safe to call twice. */
  release(): void {
    const fd = this.fd;
    this.fd = undefined;
    closeQuietly(fd);
  }
}

/** True if some process holds the lock on path (probes with a non-blocking shared lock). */
export function isLocked(path: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY);
  } catch {
    return false;
  }
  try {
    fsExt.flockSync(fd, 'shnb');
    return false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EAGAIN' || code === 'EWOULDBLOCK';
  } finally {
    closeQuietly(fd);
  }
}
