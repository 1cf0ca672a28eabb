/**
 * Typed errors with stable codes. Every error the library raises on purpose is a
 * FsplError; the CLI prints `Error: <message>` for these and exits 1.
 */
export type FsplErrorCode =
  | 'ERR_BAD_PACKET'
  | 'ERR_HEADER_TOO_LARGE'
  | 'ERR_SHORT_READ'
  | 'ERR_LOCKED'
  | 'ERR_NOT_FOUND'
  | 'ERR_DUPLICATE_SEQ'
  | 'ERR_SEQ_OVERFLOW'
  | 'ERR_BAD_SEQFILE'
  | 'ERR_QUEUE'
  | 'ERR_EXEC'
  | 'ERR_EXEC_TOO_LARGE'
  | 'ERR_JOB_FAILED'
  | 'ERR_DECODER'
  | 'ERR_IO'
  | 'ERR_UNTRUSTED_FILE'
  | 'ERR_SIGNATURE'
  | 'ERR_PAYLOAD_SHORT'
  | 'ERR_PAYLOAD_LONG'
  | 'ERR_PAYLOAD_CHECKSUM'
  | 'ERR_NET'
  | 'ERR_NET_UNKNOWN_NAME'
  | 'ERR_NET_FILE'
  | 'ERR_SEND'
  | 'ERR_SEND_DESTINATION'
  | 'ERR_RECEIVE'
  | 'ERR_RECEIVE_REFUSED';

export class FsplError extends Error {
  readonly code: FsplErrorCode;
  constructor(code: FsplErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A packet whose prefix or metadata is not valid (tag, version, CRC, MessagePack shape). */
export class BadPacketError extends FsplError {
  constructor(message: string, code: FsplErrorCode = 'ERR_BAD_PACKET') {
    super(code, message);
  }
}

/** The input ended before the header was complete (a kind of bad packet). */
export class ShortReadError extends BadPacketError {
  constructor(message = 'failed to fill whole buffer') {
    super(message, 'ERR_SHORT_READ');
  }
}

/**
 * A sealed packet's payload does not match its seal (see packet/seal/seal.ts): it ended before
 * the sealed length (ERR_PAYLOAD_SHORT: a transfer cut mid-way), ran past it (ERR_PAYLOAD_LONG)
 * or failed the checksum (ERR_PAYLOAD_CHECKSUM).
 */
export class PayloadSealError extends FsplError {
  declare readonly code: 'ERR_PAYLOAD_SHORT' | 'ERR_PAYLOAD_LONG' | 'ERR_PAYLOAD_CHECKSUM';
  constructor(code: 'ERR_PAYLOAD_SHORT' | 'ERR_PAYLOAD_LONG' | 'ERR_PAYLOAD_CHECKSUM', message: string) {
    super(code, message);
  }
}

/**
 * A header whose metadata is longer than the reader's limit (a queue's maxHeaderSize, fspl's
 * --max-header-size): not read, so that no file can make a scan hold more than that much memory.
 * `claimedSeq` is the number its first bytes give (not checked by any CRC: what it claims), when
 * they were at hand and give one.
 */
export class HeaderTooLargeError extends BadPacketError {
  readonly metadataLength: bigint;
  readonly limit: number;
  readonly claimedSeq: bigint | undefined;
  constructor(metadataLength: bigint, limit: number, claimedSeq?: bigint) {
    const claims = claimedSeq === undefined ? '' : ` (it claims number ${claimedSeq})`;
    super(
      `Metadata length ${metadataLength} is larger than the limit of ${limit} bytes${claims}`,
      'ERR_HEADER_TOO_LARGE',
    );
    this.metadataLength = metadataLength;
    this.limit = limit;
    this.claimedSeq = claimedSeq;
  }
}

/** Another process holds the lock. */
export class LockedError extends FsplError {
  readonly path: string;
  constructor(path: string) {
    super('ERR_LOCKED', `Could not obtain lock on ${path}: it is held by another process`);
    this.path = path;
  }
}

export class NotFoundError extends FsplError {
  constructor(message: string) {
    super('ERR_NOT_FOUND', message);
  }
}

export class DuplicateSeqError extends FsplError {
  readonly seq: bigint;
  readonly files: string[];
  constructor(seq: bigint, files: string[]) {
    super('ERR_DUPLICATE_SEQ', `More than one job has sequence number ${seq}: ${files.join(' and ')}`);
    this.seq = seq;
    this.files = files;
  }
}

export class SeqOverflowError extends FsplError {
  constructor(path: string) {
    super(
      'ERR_SEQ_OVERFLOW',
      `Sequence number in ${path} is 18446744073709551615, the largest possible; refusing to wrap to 0`,
    );
  }
}

export class BadSeqfileError extends FsplError {
  constructor(message: string) {
    super('ERR_BAD_SEQFILE', message);
  }
}

export class QueueError extends FsplError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_QUEUE', message, options);
  }
}

/** A command could not be started (not found, not executable). */
export class ExecError extends FsplError {
  constructor(message: string, options?: { cause?: unknown; code?: 'ERR_EXEC' | 'ERR_EXEC_TOO_LARGE' }) {
    super(options?.code ?? 'ERR_EXEC', message, options);
  }
}

/**
 * A command that can not be started because its arguments or environment are larger than
 * execve(2) takes (one string over MAX_ARG_STRLEN, or all of them over the system's total, which
 * would be E2BIG): `problem` says which, in words ("its environment variable FSPL_SET_X is ...").
 * A job's own variables or parameters make it: the job fails, the run goes on as its on-error says.
 */
export class ExecTooLargeError extends ExecError {
  readonly problem: string;
  constructor(command: string, problem: string, options?: { cause?: unknown }) {
    super(`Failed to run ${JSON.stringify(command)}: ${problem}`, { ...options, code: 'ERR_EXEC_TOO_LARGE' });
    this.problem = problem;
  }
}

/** A job failed and processing stopped (on-error Retry). */
export class JobFailedError extends FsplError {
  constructor(message: string) {
    super('ERR_JOB_FAILED', message);
  }
}

/**
 * A one-pass run stopped because its next job failed and its next try (queue-process --retries)
 * is not due yet: a failed job's error (the same code and exit status), with the time it is due.
 */
export class RetryDueError extends JobFailedError {
  readonly dueAt: Date;
  constructor(message: string, dueAt: Date) {
    super(message);
    this.dueAt = dueAt;
  }
}

export class DecoderError extends FsplError {
  /** The decoder was killed because it gave no header within the time allowed. */
  readonly timedOut: boolean;
  constructor(message: string, options: { timedOut?: boolean } = {}) {
    super('ERR_DECODER', message);
    this.timedOut = options.timedOut ?? false;
  }
}

/**
 * write(2) and fsync(2) errors name no file. Give such an error (one with an errno code, and
 * with one of `codes` if given) the path it concerns, so that its message names it:
 * `No space left on device: q/nextseq`. Returns the error.
 */
export function namePath(err: unknown, path: string, codes?: readonly string[]): unknown {
  if (err && typeof err === 'object' && 'code' in err && !('path' in err)) {
    if (!codes || codes.includes(String((err as NodeJS.ErrnoException).code))) Object.assign(err, { path });
  }
  return err;
}

/** Turn a Node system error into a one-line message that names the path. */
export function describeSystemError(err: unknown): string {
  if (err instanceof FsplError) return err.message;
  const what = systemErrorWords(err);
  if (what) {
    const e = err as NodeJS.ErrnoException;
    return e.path ? `${what}: ${e.path}` : what;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * A Node system error's meaning in words, without its path or
 * code (`No such file or directory`), if it is a common one.
 */
export function systemErrorWords(err: unknown): string | undefined {
  if (!err || typeof err !== 'object' || !('code' in err)) return undefined;
  return SYSTEM_MESSAGES[String((err as NodeJS.ErrnoException).code)];
}

const SYSTEM_MESSAGES: Record<string, string> = {
  ENOENT: 'No such file or directory',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  EEXIST: 'File exists',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  ENOSPC: 'No space left on device',
  EDQUOT: 'Disk quota exceeded',
  EROFS: 'Read-only file system',
  EPIPE: 'Broken pipe',
  EIO: 'Input/output error',
};

/** A net that can't be built or run: a bad definition, a run already going, a place missing. */
export class NetError extends FsplError {
  constructor(message: string, options?: { cause?: unknown; code?: 'ERR_NET' | 'ERR_NET_UNKNOWN_NAME' }) {
    super(options?.code ?? 'ERR_NET', message, options);
  }
}

/**
 * A request that the net can't carry out as asked (`net put`, `net retry`, `net pause`, a
 * `--host` ...): an unknown name (UnknownNameError), a token with nowhere to go, a missing choice.
 * Bad input, not a failure: the CLI exits 2, as for any usage error.
 */
export class NetRequestError extends NetError {
  constructor(message: string, code: 'ERR_NET' | 'ERR_NET_UNKNOWN_NAME' = 'ERR_NET') {
    super(message, { code });
  }
}

/** What a name that a net does not have was given for: a place, a transition, a host, or a token (by key or number). */
export type NetNameKind = 'place' | 'transition' | 'host' | 'token';

/**
 * A name given (on the command line, or to the Net facade) that the net does not have: a place,
 * a transition, a host, a token's key or number. A NetRequestError (the CLI exits 2), with what
 * was given and for what, typed.
 */
export class UnknownNameError extends NetRequestError {
  declare readonly code: 'ERR_NET_UNKNOWN_NAME';
  readonly kind: NetNameKind;
  /** The name as given (a token's number in decimal). */
  readonly given: string;
  constructor(kind: NetNameKind, given: string, message: string) {
    super(message, 'ERR_NET_UNKNOWN_NAME');
    this.kind = kind;
    this.given = given;
  }
}

/**
 * A net file that does not parse or validate; each problem has file:line:column, or only the
 * file when it concerns the whole file (one that can't be read).
 */
export class NetFileError extends FsplError {
  readonly problems: Array<{ line?: number; col?: number; message: string }>;
  readonly file: string;
  constructor(file: string, problems: Array<{ line?: number; col?: number; message: string }>) {
    super(
      'ERR_NET_FILE',
      problems.map((p) => `${file}${p.line === undefined ? '' : `:${p.line}:${p.col}`}: ${p.message}`).join('\n'),
    );
    this.file = file;
    this.problems = problems;
  }
}

/**
 * `fspl queue-send` can't go on: the outbox is sent by another program, or the remote queue holds
 * numbers this outbox never gave (another sender, a reset numbering). Not a passing network
 * problem: those are retried, never thrown.
 */
export class SendError extends FsplError {
  constructor(message: string) {
    super('ERR_SEND', message);
  }
}

/** A `--to` that names no destination this fspl can send to (the CLI exits 2). */
export class DestinationError extends FsplError {
  constructor(message: string) {
    super('ERR_SEND_DESTINATION', message);
  }
}

/**
 * A receiver (`fspl queue-receive`, `fspl net receive`: an NNCP exec handle) could not store what
 * it was given: no queue there, a frame cut short or damaged, a packet whose number is not the
 * frame's. It exits non-zero, so that NNCP keeps the packet and offers it again.
 */
export class ReceiveError extends FsplError {
  constructor(message: string, code: 'ERR_RECEIVE' | 'ERR_RECEIVE_REFUSED' = 'ERR_RECEIVE') {
    super(code, message);
  }
}

/**
 * A receiver refused its input before reading any of it: it is not addressed to this receiver (a
 * place no other host feeds, in `fspl net receive`), or it comes from an NNCP node that may not
 * send here (`NNCP_SENDER` not among the senders allowed). Nothing is stored; the exit is
 * non-zero, so NNCP keeps the packet and logs the refusal.
 */
export class ReceiveRefusedError extends ReceiveError {
  declare readonly code: 'ERR_RECEIVE_REFUSED';
  constructor(message: string) {
    super(message, 'ERR_RECEIVE_REFUSED');
  }
}

/**
 * The input of a receiver ends inside a frame: its sender stopped while it was writing (a runner
 * killed while nncp-exec read the batch; nncp-exec queues what it got). The frames before the cut
 * are stored; the rest was never acknowledged to that sender, which sends it again.
 */
export class ReceiveCutError extends ReceiveError {}

/**
 * A file in a directory that someone less trusted may write is not what it must be (a link, a
 * FIFO, another's file): refused, never used (src/sys/untrusted.ts).
 */
export class UntrustedFileError extends FsplError {
  readonly path: string;
  /** What it is instead ("it is a symbolic link"). */
  readonly why: string;
  constructor(file: string, why: string) {
    super('ERR_UNTRUSTED_FILE', `Refusing ${file}: ${why}`);
    this.path = file;
    this.why = why;
  }
}

/**
 * A packet's signature does not let it in (src/sign/): unsigned where signatures are required,
 * signed by a key that the allowed signers do not name for namespace `fspl` at this time, or not
 * matching what it signs; or a signer could not sign. `reason` is the why in a few words,
 * `fingerprint` the signing key's (`SHA256:…`) where one is known.
 */
export class SignatureError extends FsplError {
  readonly reason: string;
  readonly fingerprint: string | undefined;
  constructor(reason: string, options?: { fingerprint?: string; cause?: unknown }) {
    super('ERR_SIGNATURE', reason, options);
    this.reason = reason;
    this.fingerprint = options?.fingerprint;
  }
}
