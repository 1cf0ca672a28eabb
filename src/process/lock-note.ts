/**
 * The note queue-process keeps in its queue's lock file (FileLock.writeNote, through SeqFile):
 * what a run was finishing, so that the next run completes a record a kill or a power cut cut
 * short (finish.ts says when each note is written and how it is read back). One line of words
 * separated by single spaces:
 *
 *   S SEQ FILE [WAITING...]   job SEQ (file FILE) ran in sequence order: nextseq moves past it
 *   T SEQ FILE [WAITING...]   job SEQ ran in timestamp order: nextseq stays
 *   N FIRST LAST              the NOP jobs FIRST to LAST, recorded as one run
 *
 * WAITING: job files deleted before, whose deletions wait for the next fsync of jobs/.
 */
import { isJobFilename } from '../queue/jobs.js';

/** A job that has run: its number, its file, and the deletions that wait for jobs/'s fsync. */
export interface JobNote {
  /** S: sequence order, nextseq moves past the job; T: timestamp order. */
  kind: 'S' | 'T';
  seq: bigint;
  file: string;
  waiting: readonly string[];
}

/** A run of NOP jobs, numbered FIRST to LAST one after the other. */
export interface NopRunNote {
  kind: 'N';
  first: bigint;
  last: bigint;
}

export type LockNote = JobNote | NopRunNote;

/**
 * A note as read back: a name that is not a job file's is left out (a job note's `file` then
 * undefined), so that recovery never deletes anything but a job file.
 */
export type ReadLockNote = NopRunNote | (Omit<JobNote, 'file'> & { file: string | undefined });

/** The note's line, without its newline. */
export function formatLockNote(note: LockNote): string {
  if (note.kind === 'N') return `N ${note.first} ${note.last}`;
  return [note.kind, note.seq, note.file, ...note.waiting].join(' ');
}

const JOB_NOTE = /^([ST]) (\d+) (\S+(?: \S+)*)$/;
const NOP_RUN_NOTE = /^N (\d+) (\d+)$/;

/** The note of a line (readNote's); undefined for an empty line or one that is no note. */
export function parseLockNote(text: string): ReadLockNote | undefined {
  const job = JOB_NOTE.exec(text);
  if (job) {
    const [file, ...waiting] = job[3]!.split(' ');
    const kind = job[1] === 'S' ? 'S' : 'T';
    return {
      kind,
      seq: BigInt(job[2]!),
      file: isJobFilename(file!) ? file : undefined,
      waiting: waiting.filter(isJobFilename),
    };
  }
  const nops = NOP_RUN_NOTE.exec(text);
  if (nops) return { kind: 'N', first: BigInt(nops[1]!), last: BigInt(nops[2]!) };
  return undefined;
}
