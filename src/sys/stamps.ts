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

/** A stamp of each path (followed if a link, as stat(2)), or undefined where the stat failed. */
export function stampPaths(paths: readonly string[]): Array<Stamp | undefined> {
  const stamps = loadNative()?.stamps;
  if (!stamps) return paths.map(stampOne);
  if (buffer.length < paths.length * 3) buffer = new Float64Array(paths.length * 3);
  stamps(paths, buffer);
  const out: Array<Stamp | undefined> = [];
  for (let i = 0; i < paths.length; i++) {
    const ino = buffer[i * 3]!;
    out.push(Number.isNaN(ino) ? undefined : { ino, mtimeMs: buffer[i * 3 + 1]!, ctimeMs: buffer[i * 3 + 2]! });
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
