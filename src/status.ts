/**
 * A diagnosis of a queue (`fspl queue-status`): where processing stands, whether it can go on,
 * and why not. Read-only: it changes nothing and does not take the queue lock (it only probes it
 * for an instant, with a shared lock, to tell whether another process holds it), so it can run at
 * any time, even while `queue-process` holds the queue.
 *
 * It answers the questions an operator asks about a queue that "does nothing": which number runs
 * next, whether that job is there, which numbers arrived beyond a gap, whether two files share a
 * number, which files in jobs/ look like jobs but can not be read (and the likely reason: a
 * compressed or encrypted file read without its decoder, an empty or truncated file...), what
 * else lies in jobs/, how old the waiting jobs are, and whether another process holds the lock.
 *
 * Built on Queue's public methods only; the files that are not jobs come from a readdir of our own.
 */
import fs from 'node:fs';
import { describeSystemError, BadPacketError, DecoderError, ShortReadError } from './errors.js';
import { closeQuietly, forEachDirEntry, readSomeSync } from './io.js';
import { isLocked } from './lock.js';
import { PREFIX_LENGTH } from './packet/codec.js';
import type { Ctime } from './packet/types.js';
import { isJobFilename, type JobEntry } from './jobs.js';
import type { Queue } from './queue.js';
import { parseSeqfileText, seqParseProblem } from './seqfile.js';

// ---------------------------------------------------------------------------------------------
// Sniffing: what a file that does not decode as a packet probably is.

/** What the first bytes of a file say it is. */
export type SniffKind =
  | 'empty'
  | 'filespooler'
  | 'gzip'
  | 'zstd'
  | 'xz'
  | 'bzip2'
  | 'lz4'
  | 'openpgp'
  | 'openpgp-armored'
  | 'age'
  | 'age-armored'
  | 'unknown';

/** How many leading bytes sniffBytes looks at (at most). */
export const SNIFF_LENGTH = 64;

const TAG = Buffer.from('*FILESPOOLER', 'latin1');

function startsWith(head: Uint8Array, magic: Uint8Array | readonly number[] | string): boolean {
  const m = typeof magic === 'string' ? Buffer.from(magic, 'latin1') : magic;
  if (head.length < m.length) return false;
  for (let i = 0; i < m.length; i++) if (head[i] !== m[i]) return false;
  return true;
}

/**
 * OpenPGP packet tags a binary OpenPGP message (encrypted, signed or compressed, as gpg writes
 * it) starts with: public-key or symmetric session keys, signatures, one-pass signatures,
 * compressed or literal data, encrypted data.
 */
const OPENPGP_FIRST_TAGS = new Set([1, 2, 3, 4, 8, 9, 11, 18, 20]);

function isOpenPgpBinary(head: Uint8Array): boolean {
  if (head.length < 2) return false;
  const b = head[0]!;
  if ((b & 0x80) === 0) return false;
  // New format: 11tttttt; old format: 10ttttll.
  const tag = b & 0x40 ? b & 0x3f : (b >> 2) & 0x0f;
  return OPENPGP_FIRST_TAGS.has(tag);
}

/** Guess a file's format from its first bytes (give at least SNIFF_LENGTH if the file has them). */
export function sniffBytes(head: Uint8Array): SniffKind {
  if (head.length === 0) return 'empty';
  // A prefix of the tag counts: a packet cut short within its first 12 bytes.
  if (startsWith(head, TAG) || (head.length < TAG.length && startsWith(TAG, Buffer.from(head).toString('latin1')))) return 'filespooler';
  if (startsWith(head, [0x1f, 0x8b])) return 'gzip';
  if (startsWith(head, [0x28, 0xb5, 0x2f, 0xfd])) return 'zstd';
  if (startsWith(head, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return 'xz';
  if (startsWith(head, 'BZh') && head.length >= 4 && head[3]! >= 0x31 && head[3]! <= 0x39) return 'bzip2';
  if (startsWith(head, [0x04, 0x22, 0x4d, 0x18])) return 'lz4';
  if (startsWith(head, 'age-encryption.org/')) return 'age';
  if (startsWith(head, '-----BEGIN AGE ENCRYPTED FILE-----')) return 'age-armored';
  if (startsWith(head, '-----BEGIN PGP ')) return 'openpgp-armored';
  if (isOpenPgpBinary(head)) return 'openpgp';
  return 'unknown';
}

/** A short description of a sniffed format, e.g. "gzip data". */
export function describeKind(kind: SniffKind): string {
  switch (kind) {
    case 'empty':
      return 'an empty file';
    case 'filespooler':
      return 'a filespooler packet';
    case 'gzip':
    case 'zstd':
    case 'xz':
    case 'bzip2':
    case 'lz4':
      return `${kind} data`;
    case 'openpgp':
      return 'OpenPGP data';
    case 'openpgp-armored':
      return 'ASCII-armored OpenPGP data';
    case 'age':
      return 'age-encrypted data';
    case 'age-armored':
      return 'ASCII-armored age-encrypted data';
    case 'unknown':
      return 'data of an unknown kind';
  }
}

/** The decoder usually used for a format (for the "did you forget -d ...?" hint). */
export function suggestedDecoder(kind: SniffKind): string | undefined {
  switch (kind) {
    case 'gzip':
      return 'zcat';
    case 'zstd':
      return 'zstdcat';
    case 'xz':
      return 'xzcat';
    case 'bzip2':
      return 'bzcat';
    case 'lz4':
      return 'lz4cat';
    case 'openpgp':
    case 'openpgp-armored':
      return "'gpg -q -d'";
    case 'age':
    case 'age-armored':
      return "'age -d -i KEYFILE'";
    default:
      return undefined;
  }
}

/** The first bytes of a file (up to SNIFF_LENGTH) and its size. */
export function readFileHead(p: string): { head: Buffer; size: number; type: FileType } {
  // stat first: opening a FIFO would wait for a writer.
  const st = fs.statSync(p);
  const type = fileType(st);
  if (type !== 'file') return { head: Buffer.alloc(0), size: st.size, type };
  const fd = fs.openSync(p, 'r');
  try {
    const head = Buffer.alloc(SNIFF_LENGTH);
    const n = readSomeSync(fd, head, 0, SNIFF_LENGTH, 0);
    return { head: head.subarray(0, n), size: st.size, type };
  } finally {
    closeQuietly(fd);
  }
}

function hexBytes(b: Uint8Array, n = 8): string {
  return Array.from(b.subarray(0, n), (x) => x.toString(16).padStart(2, '0')).join(' ');
}

/**
 * Why a file does not read as a packet: the likely cause, in words, from its first bytes, its
 * size and the error the read gave (`error`, if any). With `decoder`, the header was read through
 * that decoder and it is the decoder (or its output) that failed.
 */
export function diagnoseUnreadable(
  info: { head: Uint8Array; size: number; type?: FileType },
  error?: unknown,
  decoder?: string,
): { kind: SniffKind; cause: string } {
  if (info.type !== undefined && info.type !== 'file') {
    return { kind: 'unknown', cause: `not a regular file (a ${info.type})` };
  }
  const kind = sniffBytes(info.head);
  const message = error === undefined ? undefined : describeSystemError(error);
  if (decoder !== undefined) {
    const what =
      error instanceof DecoderError || !(error instanceof BadPacketError)
        ? `decoder ${JSON.stringify(decoder)} failed${message ? `: ${message}` : ''}`
        : `decoder ${JSON.stringify(decoder)} did not produce a valid packet${message ? `: ${message}` : ''}`;
    let hint = '';
    if (kind === 'filespooler') hint = '; the file itself is a plain packet, not encoded';
    else if (kind === 'empty') hint = '; the file is empty';
    else if (kind !== 'unknown') hint = `; the file holds ${describeKind(kind)}`;
    return { kind, cause: what + hint };
  }
  switch (kind) {
    case 'empty':
      return { kind, cause: 'empty file' };
    case 'filespooler': {
      if (error instanceof ShortReadError || info.size < PREFIX_LENGTH) {
        let need = '';
        if (info.head.length >= 22) {
          const total = BigInt(PREFIX_LENGTH) + Buffer.from(info.head).readBigUInt64BE(14);
          need = `; its header needs ${total} bytes`;
        } else if (info.size < PREFIX_LENGTH) {
          need = `; a header needs at least ${PREFIX_LENGTH} bytes`;
        }
        return { kind, cause: `truncated header: the file has only ${info.size} bytes${need} (an incomplete copy?)` };
      }
      if (message?.startsWith('Input version')) return { kind, cause: `unsupported packet version: ${message}` };
      return { kind, cause: `damaged packet: ${message ?? 'bad header'}` };
    }
    case 'unknown':
      return { kind, cause: `not a filespooler packet (starts with ${hexBytes(info.head)})` };
    default: {
      const d = suggestedDecoder(kind);
      return { kind, cause: `${describeKind(kind)}: did you forget -d ${d}?` };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The status.

/** An inclusive run of sequence numbers. */
export interface SeqRange {
  first: bigint;
  last: bigint;
}

/** Sorted, distinct sequence numbers as runs: [1, 2, 3, 7] gives 1-3 and 7-7. */
export function toRanges(sortedUnique: readonly bigint[]): SeqRange[] {
  const out: SeqRange[] = [];
  for (const s of sortedUnique) {
    const last = out[out.length - 1];
    if (last && s === last.last + 1n) last.last = s;
    else out.push({ first: s, last: s });
  }
  return out;
}

/** Runs as text: "7-9, 12". Beyond `max` runs, the rest are counted: "..., 40 (3 more runs)". */
export function formatRanges(ranges: readonly SeqRange[], max = Infinity): string {
  const text = ranges
    .slice(0, max)
    .map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`))
    .join(', ');
  return ranges.length > max ? `${text}, ... (${ranges.length - max} more runs)` : text;
}

/** The state of the queue's nextseq file. */
export interface NextSeqInfo {
  /**
   * - `present`: nextseq holds a valid number (`value`);
   * - `missing`: nextseq is absent but its lock file exists: the next `queue-process` (or
   *   `queue-get-next`) recreates it holding 1, so `value` is 1;
   * - `append-only`: neither nextseq nor its lock exists: an append-only queue, never processed;
   * - `invalid`: nextseq does not hold a number (`problem` says why, `text` is its start);
   * - `unreadable`: nextseq can not be read (`problem`).
   */
  state: 'present' | 'missing' | 'append-only' | 'invalid' | 'unreadable';
  /** The number processing goes on from (present and missing only). */
  value?: bigint;
  problem?: string;
  /** The first 40 characters of an invalid nextseq. */
  text?: string;
}

/** The queue lock, DIR/nextseq.lock. */
export interface LockInfo {
  path: string;
  /** `held`: another process (queue-process, queue-get-next, queue-set-next) holds it now. */
  state: 'free' | 'held' | 'missing';
}

/** A job, as the status reports it. */
export interface StatusJob {
  seq: bigint;
  filename: string;
  ctime: Ctime;
  /** Whole seconds from the job's creation to the check; negative if created "in the future". */
  ageSeconds: number;
  /** Whether the job is a sealed packet (its header records its payload's length and CRC-32). */
  sealed: boolean;
}

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

/** A jobs/tmp-fspl-*.fspl.tmp file: a queue-write in progress, or left by one that was interrupted. */
export interface TempFile {
  filename: string;
  size: number | undefined;
  /** Seconds since the file was last modified. */
  ageSeconds: number | undefined;
}

export type FileType = 'file' | 'directory' | 'symlink' | 'other';

/** Anything else in jobs/ that is neither a job, a temporary file nor a `.out` file. */
export interface OtherFile {
  filename: string;
  type: FileType;
}

/**
 * - `ready`: the next job is present and `queue-process` would run `runnable` jobs now;
 * - `idle`: no job waits;
 * - `stuck`: jobs wait but none can run (the next one is missing), or something makes
 *   `queue-process` refuse the queue (a duplicate sequence number, a bad nextseq, a missing lock
 *   file): see `problems`;
 * - `append-only`: an append-only queue, never processed here.
 */
export type QueueState = 'ready' | 'idle' | 'stuck' | 'append-only';

/** A reason why a queue is stuck. */
export interface StatusProblem {
  /**
   * - `next-missing`: jobs wait but the one numbered nextseq is not there (see `gap`);
   * - `duplicate-seq`: two job files share a sequence number (see `duplicates`);
   * - `bad-nextseq`: nextseq does not hold a number, or can not be read;
   * - `no-lock-file`: nextseq exists but nextseq.lock does not.
   */
  code: 'next-missing' | 'duplicate-seq' | 'bad-nextseq' | 'no-lock-file';
  /** One sentence, e.g. "next job 5 is missing". */
  message: string;
}

export interface QueueStatus {
  /** The queue directory as given. */
  dir: string;
  decoder: string | undefined;
  /** When the check was made. */
  checkedAt: Ctime;
  state: QueueState;
  /** Whether processing can make progress: false exactly when `state` is `stuck`. */
  canProgress: boolean;
  /** Why the queue is stuck (empty unless it is). */
  problems: StatusProblem[];
  nextseq: NextSeqInfo;
  lock: LockInfo;
  /** Readable jobs in the queue, waiting or not. */
  jobs: number;
  /** Jobs at or after nextseq (every job in an append-only queue or when nextseq is unusable). */
  waiting: number;
  /** Their sequence numbers, as runs. */
  waitingSeqs: SeqRange[];
  /** How many jobs queue-process would run now, in sequence order, before reaching a gap. */
  runnable: number;
  /**
   * The first missing number while jobs wait beyond it: `seq` is nextseq itself when the next
   * job is missing (`isNext`), otherwise the number after the last runnable job.
   */
  gap: { seq: bigint; isNext: boolean; presentBeyond: SeqRange[] } | undefined;
  /**
   * Jobs numbered below nextseq: already processed but kept (--never-delete, --on-error leave), or
   * skipped with queue-set-next. queue-process never runs them in sequence order.
   */
  belowNext: number;
  belowNextSeqs: SeqRange[];
  /** Sequence numbers held by more than one job file, with the files (directory order). */
  duplicates: Array<{ seq: bigint; files: string[] }>;
  /** The waiting jobs created first and last (by header ctime). */
  oldest: StatusJob | undefined;
  newest: StatusJob | undefined;
  undecodable: UndecodableFile[];
  /** How many readable jobs are sealed packets. */
  sealed: number;
  /** Sealed jobs whose file is shorter (or longer) than their seal says. */
  damaged: DamagedJob[];
  tempFiles: TempFile[];
  /** jobs/fspl-*.fspl.out files (written by --output-to saveboth). */
  outputFiles: string[];
  otherFiles: OtherFile[];
}

export interface QueueStatusOptions {
  /** The time to measure ages against (default: now). */
  now?: Date;
}

const TEMP_FILE = /^tmp-fspl-.*\.fspl\.tmp$/;

function fileType(st: fs.Stats | fs.Dirent): FileType {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}

function readNextseq(queue: Queue): NextSeqInfo {
  let text: string | undefined;
  try {
    text = fs.readFileSync(queue.seqfilePath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return { state: 'unreadable', problem: describeSystemError(err) };
  }
  if (text === undefined) {
    return fs.existsSync(`${queue.seqfilePath}.lock`) ? { state: 'missing', value: 1n } : { state: 'append-only' };
  }
  const value = parseSeqfileText(text);
  if (value === undefined) {
    const nl = text.indexOf('\n');
    return { state: 'invalid', problem: seqParseProblem((nl < 0 ? text : text.slice(0, nl)).trim()), text: text.slice(0, 40) };
  }
  return { state: 'present', value };
}

function readLock(queue: Queue): LockInfo {
  const p = `${queue.seqfilePath}.lock`;
  if (!fs.existsSync(p)) return { path: p, state: 'missing' };
  return { path: p, state: isLocked(p) ? 'held' : 'free' };
}

function cmpSeq(a: bigint, b: bigint): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

function cmpCtime(a: Ctime, b: Ctime): number {
  if (a.secs !== b.secs) return a.secs < b.secs ? -1 : 1;
  return a.nanos - b.nanos;
}

/** Examine a queue. Fails (QueueError) only when DIR is not a queue or jobs/ can not be read. */
export async function queueStatus(queue: Queue, options: QueueStatusOptions = {}): Promise<QueueStatus> {
  queue.assertExists();
  const nowMs = (options.now ?? new Date()).getTime();
  const nowSecs = Math.floor(nowMs / 1000);
  const checkedAt: Ctime = { secs: BigInt(nowSecs), nanos: (nowMs - nowSecs * 1000) * 1_000_000 };

  // Everything in jobs/ that is not a job file.
  const tempFiles: TempFile[] = [];
  const outputFiles: string[] = [];
  const otherFiles: OtherFile[] = [];
  forEachDirEntry(queue.jobsDir, (e) => {
    const name = e.name;
    if (isJobFilename(name)) return;
    if (TEMP_FILE.test(name)) {
      let size: number | undefined;
      let ageSeconds: number | undefined;
      try {
        const st = fs.lstatSync(queue.jobPath(name));
        size = st.size;
        ageSeconds = Math.floor((nowMs - st.mtimeMs) / 1000);
      } catch {
        /* gone meanwhile: renamed into place by its writer */
      }
      tempFiles.push({ filename: name, size, ageSeconds });
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
  const byName = (a: { filename: string }, b: { filename: string }) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0);
  tempFiles.sort(byName);
  otherFiles.sort(byName);
  outputFiles.sort();

  // The job files: the queue's own scan reads every header, and those that fail are diagnosed.
  const failures: UndecodableFile[] = [];
  const diagnose = (filename: string, err: unknown) => {
    let info: { head: Uint8Array; size: number; type: FileType };
    try {
      info = readFileHead(queue.jobPath(filename));
    } catch (e2) {
      failures.push({ filename, size: undefined, kind: 'unknown', cause: `can not be read: ${describeSystemError(e2)}`, error: describeSystemError(err) });
      return;
    }
    const { kind, cause } = diagnoseUnreadable(info, err, queue.decoder);
    failures.push({ filename, size: info.size, kind, cause, error: describeSystemError(err) });
  };
  const entries = await queue.scan({ onFailure: diagnose });
  const undecodable = failures.sort(byName);
  const jobs = entries.map((e) => ({ seq: e.header.seq, filename: e.filename, ctime: e.header.ctime, sealed: e.header.seal !== undefined }));
  jobs.sort((a, b) => cmpSeq(a.seq, b.seq)); // stable: ties keep directory order
  const damaged = queue.decoder === undefined ? damagedJobs(queue, entries) : [];
  damaged.sort((a, b) => cmpSeq(a.seq, b.seq));

  // Duplicates, anywhere in the queue.
  const duplicates: Array<{ seq: bigint; files: string[] }> = [];
  for (let i = 0; i < jobs.length; ) {
    let j = i + 1;
    while (j < jobs.length && jobs[j]!.seq === jobs[i]!.seq) j++;
    if (j - i > 1) duplicates.push({ seq: jobs[i]!.seq, files: jobs.slice(i, j).map((x) => x.filename) });
    i = j;
  }

  const nextseq = readNextseq(queue);
  const lock = readLock(queue);
  const problems: StatusProblem[] = [];
  const nextValue = nextseq.value;
  const waitingJobs = nextValue === undefined ? jobs : jobs.filter((j) => j.seq >= nextValue);
  const belowJobs = nextValue === undefined ? [] : jobs.filter((j) => j.seq < nextValue);
  const uniq = (list: typeof jobs) => {
    const out: bigint[] = [];
    for (const j of list) if (out.length === 0 || out[out.length - 1] !== j.seq) out.push(j.seq);
    return out;
  };
  const waitingUnique = uniq(waitingJobs);

  // What queue-process would run now, and the first gap.
  let runnable = 0;
  let gap: QueueStatus['gap'];
  if (nextValue !== undefined) {
    let k = 0;
    while (k < waitingUnique.length && waitingUnique[k] === nextValue + BigInt(k)) k++;
    if (k < waitingUnique.length) {
      const seq = nextValue + BigInt(k);
      gap = { seq, isNext: k === 0, presentBeyond: toRanges(waitingUnique.slice(k)) };
    }
    runnable = k;
  }

  let state: QueueState;
  if (nextseq.state === 'append-only') {
    state = 'append-only';
    runnable = 0;
  } else {
    if (gap?.isNext) problems.push({ code: 'next-missing', message: `next job ${gap.seq} is missing` });
    if (nextseq.state === 'invalid') {
      problems.push({ code: 'bad-nextseq', message: `nextseq is not a valid number (${nextseq.problem}); fix it with queue-set-next` });
    }
    if (nextseq.state === 'unreadable') problems.push({ code: 'bad-nextseq', message: `nextseq can not be read: ${nextseq.problem}` });
    if (lock.state === 'missing') {
      problems.push({ code: 'no-lock-file', message: `${lock.path} is missing, so queue-process can not lock the queue` });
    }
    if (duplicates.length > 0) {
      const one = duplicates.length === 1;
      problems.push({
        code: 'duplicate-seq',
        message: `duplicate sequence ${one ? 'number' : 'numbers'} ${formatRanges(toRanges(duplicates.map((d) => d.seq)), 10)}: queue-process refuses the queue`,
      });
    }
    if (problems.length > 0) {
      state = 'stuck';
      runnable = 0;
    } else state = waitingJobs.length === 0 ? 'idle' : 'ready';
  }

  const asJob = (j: { seq: bigint; filename: string; ctime: Ctime; sealed: boolean }): StatusJob => ({
    ...j,
    ageSeconds: Number(BigInt(nowSecs) - j.ctime.secs),
  });
  let oldest: (typeof jobs)[number] | undefined;
  let newest: (typeof jobs)[number] | undefined;
  for (const j of waitingJobs) {
    if (!oldest || cmpCtime(j.ctime, oldest.ctime) < 0) oldest = j;
    if (!newest || cmpCtime(j.ctime, newest.ctime) > 0) newest = j;
  }

  return {
    dir: queue.dir,
    decoder: queue.decoder,
    checkedAt,
    state,
    canProgress: state !== 'stuck',
    problems,
    nextseq,
    lock,
    jobs: jobs.length,
    waiting: waitingJobs.length,
    waitingSeqs: toRanges(waitingUnique),
    runnable,
    gap,
    belowNext: belowJobs.length,
    belowNextSeqs: toRanges(uniq(belowJobs)),
    duplicates,
    oldest: oldest && asJob(oldest),
    newest: newest && asJob(newest),
    undecodable,
    sealed: jobs.filter((j) => j.sealed).length,
    damaged,
    tempFiles,
    outputFiles,
    otherFiles,
  };
}

/** Sealed jobs of a plain queue whose payload is not the sealed length (stat plus a 30-byte read each). */
function damagedJobs(queue: Queue, entries: JobEntry[]): DamagedJob[] {
  const out: DamagedJob[] = [];
  for (const e of entries) {
    const seal = e.header.seal;
    if (!seal) continue;
    try {
      const { head, size } = readFileHead(queue.jobPath(e.filename));
      const payloadSize = size - PREFIX_LENGTH - Number(head.readBigUInt64BE(14));
      if (BigInt(payloadSize) !== seal.length) out.push({ seq: e.header.seq, filename: e.filename, payloadSize, sealedSize: seal.length });
    } catch {
      /* gone meanwhile, or unreadable now: nothing to say about its seal */
    }
  }
  return out;
}
