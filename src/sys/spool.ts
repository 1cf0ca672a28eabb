/**
 * Anonymous spool files: a temporary file in $TMPDIR (os.tmpdir()) that has no name, so nothing
 * is left behind whatever happens to the process (SIGKILL included). Used by `prepare --seal` to
 * learn a piped payload's length before the header, which records it, is written.
 *
 * Linux's O_TMPFILE makes the file nameless from the start. Where it is refused (file systems
 * without support, other kernels), the file is created under a random name and unlinked at once:
 * only a kill within those few microseconds could leave it behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';

/** Linux: O_TMPFILE is __O_TMPFILE | O_DIRECTORY (not in Node's fs.constants). */
const O_TMPFILE = 0o20000000 | fs.constants.O_DIRECTORY;

/**
 * Open a new, nameless, readable and writable file in `dir` (default $TMPDIR). node:os is loaded
 * here, not with the module: queue-process loads this module at every start, and seldom spools.
 */
export function openSpoolSync(dir: string = process.getBuiltinModule('node:os').tmpdir()): number {
  if (process.platform === 'linux') {
    try {
      return fs.openSync(dir, O_TMPFILE | fs.constants.O_RDWR, 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Not supported here: fall back. Anything else (no such dir, no space) is the answer.
      if (code !== 'EOPNOTSUPP' && code !== 'EISDIR' && code !== 'EINVAL' && code !== 'ENOTSUP') throw err;
    }
  }
  const p = path.join(dir, `fspl-spool-${uuidv4()}.tmp`);
  const fd = fs.openSync(p, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
  fs.unlinkSync(p);
  return fd;
}
