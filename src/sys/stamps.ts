/**
 * What a stat says of whether a file or directory changed: its inode and its modification and
 * change times, for many paths at once. A watcher's safety looks stat two paths per queue; through
 * the addon a batch of them costs the system calls and no Stats object or Date per path.
 */
import fs from 'node:fs';
import { loadNative } from './native.js';

let buffer = new Float64Array(0);

/**
 * stat(2) of each path (followed if a link) into one shared buffer: ino, mtimeMs and ctimeMs, three
 * numbers a path, a NaN ino where the stat failed. The buffer is valid until the next call: a
 * watcher's looks compare it with what they kept, and make no object a path.
 */
export function stampInto(paths: readonly string[]): Float64Array {
  if (buffer.length < paths.length * 3) buffer = new Float64Array(paths.length * 3);
  const stamps = loadNative()?.stamps;
  if (stamps) stamps(paths, buffer);
  else for (let i = 0; i < paths.length; i++) stampOne(paths[i]!, i * 3);
  return buffer;
}

/** Whether the stat of stampInto's buffer at `k` (a path's first number) succeeded. */
export function stampOk(stamps: Float64Array, k: number): boolean {
  return !Number.isNaN(stamps[k]!);
}

/** The pure-Node stat of one path into the buffer from `at`. */
function stampOne(p: string, at: number): void {
  try {
    const st = fs.statSync(p);
    buffer[at] = st.ino;
    buffer[at + 1] = st.mtimeMs;
    buffer[at + 2] = st.ctimeMs;
  } catch {
    buffer[at] = Number.NaN; // gone, or not to be looked at: as the addon's failed stat
  }
}
