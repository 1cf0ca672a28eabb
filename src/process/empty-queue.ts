/**
 * A queue-process run over a queue that plainly has nothing to do: jobs/ empty, no note in the
 * lock file, nextseq a number, the queue writable. cron runs `queue-process` over queues that are
 * empty most of the time, and such a run is all start-up: bin/fspl answers it from a small file of
 * its own (src/cli/quick.ts) before the CLI loads (docs/benchmarks-notes.md, "The empty queue's
 * run"). Anything else, or any doubt, is left to the full run, which then does and says what it
 * always did: this never reports an error and changes nothing it would not.
 *
 * What the full run does over such a queue, and so this: the lock taken (a lock held elsewhere is
 * the full run's to wait out and report), nextseq read, both directories found writable, jobs/
 * found empty under the lock, the lock released. The lock file is left as it was, empty: a full run
 * truncates only one that holds something (FileLock.clearNote).
 */
import fs from 'node:fs';
import path from 'node:path';
import { isEmptyDir } from '../sys/io.js';
import { FLOCK, loadNative } from '../sys/native.js';
import { parseSeqfileText, readSeqText } from '../sys/seq-text.js';
import { openExisting } from '../sys/untrusted.js';

/**
 * Run queue-process over the queue at `dir` if it plainly has no job: true when that run is done
 * (exit status 0, nothing printed), false when the full run must decide. Throws nothing.
 */
export function settleEmptyQueue(dir: string): boolean {
  try {
    return settle(dir);
  } catch {
    return false; // a file missing, odd or unwritable: the full run meets it too, and reports it
  }
}

function settle(dir: string): boolean {
  const flock = loadNative()?.flock;
  if (!flock) return false;
  const jobs = path.join(dir, 'jobs');
  if (!isEmptyDir(jobs)) return false;
  // Opened as the full run opens it: not through a link, a regular file with this one name.
  const { fd, stat } = openExisting(path.join(dir, 'nextseq.lock'), fs.constants.O_RDWR, { singleLink: true });
  try {
    // A note (a record a killed run left half made) is the full run's to complete.
    if (stat.size !== 0 || flock(fd, FLOCK.exnb) !== 0) return false;
    try {
      if (parseSeqfileText(readSeqText(path.join(dir, 'nextseq'))) === undefined) return false;
      fs.accessSync(dir, fs.constants.W_OK);
      fs.accessSync(jobs, fs.constants.W_OK);
      return isEmptyDir(jobs);
    } finally {
      flock(fd, FLOCK.un);
    }
  } finally {
    fs.closeSync(fd);
  }
}
