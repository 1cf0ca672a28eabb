/** A byte string as stored in a packet (parameters, environment names and values). */
export type Bytes = Uint8Array;

export interface Ctime {
  /** Seconds since the Unix epoch (signed 64-bit). */
  secs: bigint;
  /** Nanoseconds within the second (0..999999999). */
  nanos: number;
}

export type CommandType =
  | { kind: 'NOP' }
  | { kind: 'Fail' }
  | {
      kind: 'Command';
      /** Job parameters, in order. */
      params: Bytes[];
      /** FSPL_SET_ variables, names stored without the FSPL_SET_ prefix, in environment order. */
      env: Array<[Bytes, Bytes]>;
    };

/**
 * An extension (see packet/seal/seal.ts): the payload's length and CRC-32, stored as two extra
 * metadata keys that the reference ignores.
 */
export interface Seal {
  /** Payload length in bytes. */
  length: bigint;
  /** CRC-32 (IEEE, as zlib) of the payload, unsigned. */
  crc32: number;
}

/**
 * An extension (see src/packet/signature.ts): a signed packet's payload digest and its SSHSIG
 * signature, two more metadata keys that the reference ignores. Only sealed packets are signed.
 */
export interface PacketSignature {
  /** SHA-512 of the payload (64 bytes). */
  sha512: Uint8Array;
  /** The binary SSHSIG (OpenSSH PROTOCOL.sshsig), namespace `fspl`, over signedMessage(header). */
  sshsig: Uint8Array;
}

/** The decoded metadata of a packet: everything before the payload. */
export interface PacketHeader {
  /** Sequence number, unsigned 64-bit. */
  seq: bigint;
  ctime: Ctime;
  cmd: CommandType;
  /** Present on sealed packets only. */
  seal?: Seal;
  /** Present on signed packets only (which are sealed too). */
  signature?: PacketSignature;
  /**
   * An extension (retry-keys.ts): the retries its sender asks
   * for (`prepare --retries N`); queue-process --retries caps it.
   */
  retries?: bigint;
  /** An extension (retry-keys.ts): on a packet moved to a failed-jobs queue, the facts of its failure. */
  failure?: FailureFacts;
  /**
   * An extension (not-before.ts): the job does not run before this time, ms since the epoch (`prepare --not-before`).
   */
  notBefore?: number;
}

/** Why a packet is in a failed-jobs queue (queue-process --failed-to): a header key the reference ignores. */
export interface FailureFacts {
  /** The queue it failed in (its directory, absolute). */
  queue: string;
  /** Its number there. */
  seq: bigint;
  /** How many times it was tried. */
  attempts: number;
  /** The last try's outcome: `failure` or `timeout`. */
  outcome: 'failure' | 'timeout';
  /** The last try's end in words (`command exited with status 3`, `... killed by signal SIGKILL`). */
  why: string;
  /** When it was moved, RFC 3339 UTC. */
  at: string;
  /** The last lines of its output (--output-to SaveBoth: stdout and stderr as they interleaved), at most a few KiB. */
  tail?: string;
}

export { I64_MAX, I64_MIN, U64_MAX } from '../base/u64.js';

/** The largest metadata we accept. Real headers are well under 1 KiB; 200 MiB allows for absurd parameter lists. */
export const MAX_METADATA_LENGTH = 200 * 1024 * 1024;

/**
 * The largest metadata a queue's scans read by default (QueueOptions.maxHeaderSize, fspl's
 * --max-header-size): a file whose header is longer is skipped unread, so that no file can make
 * a scan hold more than about 10 times this in memory (a byte string is MessagePack ints, each a
 * JS array element while decoded: a queue-process beside an 8 MiB header of 100 KiB variables
 * peaks at 135 MB RSS, beside a 16 MiB one at 210 MB). A longer header could hardly run as a
 * command anyway: Linux passes 2 MiB of arguments and environment by default (a quarter of the
 * stack limit, 6 MiB at most), and each of their bytes takes one or two in the header.
 */
export const DEFAULT_MAX_HEADER_SIZE = 8 * 1024 * 1024;

/** Check a maxHeaderSize option: a whole number of bytes from 1 to MAX_METADATA_LENGTH (RangeError). */
export function checkMaxHeaderSize(n: number | undefined, what: string): number {
  if (n === undefined) return DEFAULT_MAX_HEADER_SIZE;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_METADATA_LENGTH) {
    throw new RangeError(`${what} must be a whole number of bytes from 1 to ${MAX_METADATA_LENGTH}, got ${String(n)}`);
  }
  return n;
}
