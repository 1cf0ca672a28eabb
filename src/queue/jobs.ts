/**
 * Job files: how they are named (fspl-*.fspl; anything else in jobs/ is not a job) and ordered.
 * A module of its own so that the queue, its processing and the watcher all use it without
 * importing one another.
 */
import { v4 as uuidv4 } from 'uuid';
import { DuplicateSeqError } from '../base/errors.js';
import type { JobEntry } from './types.js';

export type { JobEntry } from './types.js';

export function isJobFilename(name: string): boolean {
  return name.startsWith('fspl-') && name.endsWith('.fspl') && name.length >= 10;
}

/** A new job file name: fspl-UUIDv4.fspl. */
export function genFilename(): string {
  return `fspl-${uuidv4()}.fspl`;
}

/** By sequence number; Array.prototype.sort is stable, so ties keep directory order (as the reference). */
export function compareBySeq(a: JobEntry, b: JobEntry): number {
  return a.header.seq === b.header.seq ? 0 : a.header.seq < b.header.seq ? -1 : 1;
}

export function compareByTimestamp(a: JobEntry, b: JobEntry): number {
  const x = a.header.ctime;
  const y = b.header.ctime;
  if (x.secs !== y.secs) return x.secs < y.secs ? -1 : 1;
  return x.nanos - y.nanos;
}

/** Index jobs by sequence number, failing on the first number held by two files. */
export function indexBySeq(jobs: JobEntry[]): Map<bigint, JobEntry> {
  const bySeq = new Map<bigint, JobEntry>();
  for (const j of jobs) {
    const seen = bySeq.get(j.header.seq);
    if (seen) throw new DuplicateSeqError(j.header.seq, [seen.filename, j.filename]);
    bySeq.set(j.header.seq, j);
  }
  return bySeq;
}
