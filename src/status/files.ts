/**
 * What lies in a queue's jobs/ for `fspl queue-status`, beside the jobs that read: the job files
 * whose header can not be read (with the likely cause, from sniff.ts), the sealed jobs cut short,
 * and the files that are not jobs (temporary files of writers, `.out` files, anything else).
 */
import fs from 'node:fs';
import { describeSystemError, HeaderTooLargeError } from '../base/errors.js';
import { PREFIX_LENGTH } from '../packet/codec.js';
import { isJobFilename, type JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import { forEachDirEntry } from '../sys/io.js';
import { diagnoseUnreadable, type FileType, fileType, readFileHead, type SniffKind } from './sniff.js';

/**
 * A sealed job whose file is not as long as its seal says (plain queues only: through a decoder
 * the stored size says nothing): cut short, usually, by an interrupted copy that bypassed
 * queue-write. queue-process fails it without running it.
 */
export interface DamagedJob {
  seq: bigint;
  filename: string;
  /** The payload's length in the file, and the length it was sealed with. */
  payloadSize: number;
  sealedSize: bigint;
}

/** A file named like a job (fspl-*.fspl) whose header could not be read. */
export interface UndecodableFile {
  filename: string;
  /** Size in bytes (undefined if the file vanished or can not be examined). */
  size: number | undefined;
  /** What its first bytes look like (of the stored file, before any decoder). */
  kind: SniffKind;
  /** The likely cause, in words, e.g. "gzip data: did you forget -d zcat?". */
  cause: string;
  /** The error the read gave. */
  error: string;
}

/**
 * A job file whose header is longer than the queue's limit (maxHeaderSize, --max-header-size):
 * not read, so its number waits as a missing job's would until the limit is raised.
 */
export interface TooLargeFile {
  filename: string;
  /** Size in bytes (undefined if the file vanished meanwhile). */
  size: number | undefined;
  /** The length of its metadata, as its prefix gives it, and the limit it is over. */
  metadataLength: bigint;
  limit: number;
  /** The number its metadata's first bytes give (unchecked: what it claims), if they give one. */
  claimedSeq: bigint | undefined;
}

/**
 * A writer's temporary file in jobs/: `write`, tmp-fspl-*.fspl.tmp, a queue-write in progress (or
 * left by one that was interrupted); `upload`, .fspl-in-*.part, a packet being received by
 * queue-send's receiver over ssh or by queue-receive (NNCP), which the next receiver finishes or
 * removes.
 */
export interface TempFile {
  filename: string;
  kind: 'write' | 'upload';
  size: number | undefined;
  /** Seconds since the file was last modified. */
  ageSeconds: number | undefined;
}

/** Anything else in jobs/ that is neither a job, a temporary file nor a `.out` file. */
export interface OtherFile {
  filename: string;
  type: FileType;
}

const TEMP_FILE = /^tmp-fspl-.*\.fspl\.tmp$/;
/** send/receive-script.ts's and send/receive.ts's parts. */
const UPLOAD_PART = /^\.fspl-in-[A-Za-z0-9-]+\.part$/;

const byName = (a: { filename: string }, b: { filename: string }) =>
  a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0;

/** Everything in jobs/ that is not a job file, each list sorted by name. */
export function filesBesideJobs(
  queue: Queue,
  nowMs: number,
): { tempFiles: TempFile[]; outputFiles: string[]; otherFiles: OtherFile[] } {
  const tempFiles: TempFile[] = [];
  const outputFiles: string[] = [];
  const otherFiles: OtherFile[] = [];
  forEachDirEntry(queue.jobsDir, (e) => {
    const name = e.name;
    if (isJobFilename(name)) return;
    const kind = TEMP_FILE.test(name) ? 'write' : UPLOAD_PART.test(name) ? 'upload' : undefined;
    if (kind) {
      let size: number | undefined;
      let ageSeconds: number | undefined;
      try {
        const st = fs.lstatSync(queue.jobPath(name));
        size = st.size;
        ageSeconds = Math.floor((nowMs - st.mtimeMs) / 1000);
      } catch {
        /* gone meanwhile: renamed into place by its writer */
      }
      tempFiles.push({ filename: name, kind, size, ageSeconds });
    } else if (name.endsWith('.out') && isJobFilename(name.slice(0, -4))) {
      outputFiles.push(name);
    } else {
      let type = fileType(e);
      if (type === 'other') {
        try {
          type = fileType(fs.lstatSync(queue.jobPath(name)));
        } catch {
          /* keep 'other' */
        }
      }
      otherFiles.push({ filename: name, type });
    }
  });
  tempFiles.sort(byName);
  otherFiles.sort(byName);
  outputFiles.sort();
  return { tempFiles, outputFiles, otherFiles };
}

/**
 * The job files: the queue's own scan reads every header, and those that fail are diagnosed;
 * those over the queue's limit on headers are listed apart (tooLarge), never read.
 */
export async function scanJobFiles(
  queue: Queue,
): Promise<{ entries: JobEntry[]; undecodable: UndecodableFile[]; tooLarge: TooLargeFile[] }> {
  const failures: UndecodableFile[] = [];
  const tooLarge: TooLargeFile[] = [];
  const diagnose = (filename: string, err: unknown) => {
    if (err instanceof HeaderTooLargeError) {
      let size: number | undefined;
      try {
        size = fs.statSync(queue.jobPath(filename)).size;
      } catch {
        /* gone meanwhile */
      }
      tooLarge.push({
        filename,
        size,
        metadataLength: err.metadataLength,
        limit: err.limit,
        claimedSeq: err.claimedSeq,
      });
      return;
    }
    let info: { head: Uint8Array; size: number; type: FileType };
    try {
      info = readFileHead(queue.jobPath(filename));
    } catch (e2) {
      failures.push({
        filename,
        size: undefined,
        kind: 'unknown',
        cause: `can not be read: ${describeSystemError(e2)}`,
        error: describeSystemError(err),
      });
      return;
    }
    const { kind, cause } = diagnoseUnreadable(info, err, queue.decoder);
    failures.push({ filename, size: info.size, kind, cause, error: describeSystemError(err) });
  };
  const entries = await queue.scan({ onFailure: diagnose });
  const undecodable = failures.sort(byName);
  return { entries, undecodable, tooLarge: tooLarge.sort(byName) };
}

/** Sealed jobs of a plain queue whose payload is not the sealed length (stat plus a 30-byte read each). */
export function damagedJobs(queue: Queue, entries: JobEntry[]): DamagedJob[] {
  const out: DamagedJob[] = [];
  for (const e of entries) {
    const seal = e.header.seal;
    if (!seal) continue;
    try {
      const { head, size } = readFileHead(queue.jobPath(e.filename));
      const payloadSize = size - PREFIX_LENGTH - Number(head.readBigUInt64BE(14));
      if (BigInt(payloadSize) !== seal.length)
        out.push({ seq: e.header.seq, filename: e.filename, payloadSize, sealedSize: seal.length });
    } catch {
      /* gone meanwhile, or unreadable now: nothing to say about its seal */
    }
  }
  return out;
}
