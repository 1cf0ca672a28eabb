/**
 * What a stat says of whether a file or directory changed: its inode and its modification and
 * change times, for many paths at once. A watcher's safety looks stat two paths per queue; through
 * the addon a batch of them costs the system calls and no Stats object or Date per path.
 */
import fs from 'node:fs';
import { loadNative } from './native.js';

/** What one stat saw. */
export interface Stamp {
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
}

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
  else
    for (let i = 0; i < paths.length; i++) {
      const s = stampOne(paths[i]!);
      buffer[i * 3] = s ? s.ino : Number.NaN;
      buffer[i * 3 + 1] = s ? s.mtimeMs : 0;
      buffer[i * 3 + 2] = s ? s.ctimeMs : 0;
    }
  return buffer;
}

/** A stamp of each path (followed if a link, as stat(2)), or undefined where the stat failed. */
export function stampPaths(paths: readonly string[]): Array<Stamp | undefined> {
  const b = stampInto(paths);
  const out: Array<Stamp | undefined> = [];
  for (let i = 0; i < paths.length; i++) {
    const ino = b[i * 3]!;
    out.push(Number.isNaN(ino) ? undefined : { ino, mtimeMs: b[i * 3 + 1]!, ctimeMs: b[i * 3 + 2]! });
  }
  return out;
}

function stampOne(p: string): Stamp | undefined {
  try {
    const st = fs.statSync(p);
    return { ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  } catch {
    return undefined; // gone, or not to be looked at: as the addon's failed stat
  }
}
