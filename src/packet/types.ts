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
 * An extension (see src/packet/seal.ts): the payload's length and CRC-32, stored as two extra
 * metadata keys that the reference ignores.
 */
export interface Seal {
  /** Payload length in bytes. */
  length: bigint;
  /** CRC-32 (IEEE, as zlib) of the payload, unsigned. */
  crc32: number;
}

/** The decoded metadata of a packet: everything before the payload. */
export interface PacketHeader {
  /** Sequence number, unsigned 64-bit. */
  seq: bigint;
  ctime: Ctime;
  cmd: CommandType;
  /** Present on sealed packets only. */
  seal?: Seal;
}

export { I64_MAX, I64_MIN, U64_MAX } from '../base/u64.js';
