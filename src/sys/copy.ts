/**
 * Copying a payload from one descriptor to another: prepare (payload to stdout), queue-write
 * (stdin to the new job file), queue-payload and stdin-payload (to stdout).
 *
 * Synchronous calls only, and never an allocation per chunk: with the native addon the kernel
 * moves the bytes (splice(2), copy_file_range(2)); otherwise, or for whatever the kernel refuses
 * (EINVAL, EXDEV, ENOSYS, an O_APPEND or non-blocking end...), a read/write loop over one buffer.
 */

import { readSomeSync, writeAllSync } from './io.js';
import { nativeCopy } from './native.js';

/** The loop's buffer: 64 KiB, a pipe's default capacity, and small enough to stay in the CPU's cache. */
const BUFFER_SIZE = 64 * 1024;
let shared: Buffer | undefined;

export interface CopyOptions {
  /** Copy at most this many bytes (default: up to the end of the input). */
  limit?: number;
  /**
   * Called with every chunk before it is written (a view of a reused buffer: copy it to keep it).
   * With a hook the bytes must pass through user space, so the kernel shortcuts are not used.
   */
  onChunk?: (chunk: Uint8Array) => void;
  /** Use the read/write loop even when the addon is there (tests; FSPL_NO_NATIVE=1 does the same). */
  noKernelCopy?: boolean;
}

/**
 * Copy from inFd (from its current position) to outFd, up to the end of the input or `limit`
 * bytes. Returns the byte count, which is below `limit` only when the input ended first.
 */
export function copy(inFd: number, outFd: number, options: CopyOptions = {}): number {
  const { limit, onChunk } = options;
  let total = 0;
  if (!onChunk && !options.noKernelCopy) {
    const r = nativeCopy(inFd, outFd, limit);
    if (r) {
      total = r.copied;
      // Limit reached; anything else (an end, a refusal, an error) goes on in the loop below.
      if (r.errno === 0 && limit !== undefined && total >= limit) return total;
    }
  }
  const buf = (shared ??= Buffer.allocUnsafe(BUFFER_SIZE));
  for (;;) {
    const want = limit === undefined ? buf.length : Math.min(buf.length, limit - total);
    if (want <= 0) return total;
    const n = readSomeSync(inFd, buf, 0, want);
    if (n === 0) return total;
    if (onChunk) onChunk(buf.subarray(0, n));
    writeAllSync(outFd, buf, 0, n);
    total += n;
  }
}
