/**
 * Sealed packets (an extension): the header records the payload's length and a checksum of it,
 * so that a reader can tell a complete payload from one cut short in transit (a killed ssh, say:
 * the format itself has no payload length, so end of file looks like the end of the payload) or
 * corrupted on disk.
 *
 * The seal is two extra keys in the MessagePack metadata map, after the reference's three:
 *
 *   payload_len     unsigned integer, smallest form: the payload's length in bytes
 *   payload_crc32   unsigned integer, smallest form: CRC-32 (IEEE 802.3, as zlib and the
 *                   packet prefix) of the payload
 *
 * The reference reads its keys by name and ignores others, so sealed packets stay readable by
 * it. A packet with neither key is unsealed; with one, or with a value out of range, it is a bad
 * packet.
 *
 * A CRC (zlib.crc32, the fastest checksum at hand) is enough: the seal guards
 * against truncation and accidental corruption, not tampering (signatures and decoders do that).
 */
import type zlib from 'node:zlib';
import { BadPacketError, PayloadSealError } from '../../base/errors.js';
import type { Seal } from '../types.js';

/**
 * zlib.crc32, node:zlib loaded on the first checksum: loading it (and the streams it brings) is
 * otherwise a cost of every fspl start, sealed packets or not.
 */
let zlibCrc32: typeof zlib.crc32 | undefined;
function crc32Of(data: Uint8Array, value: number): number {
  zlibCrc32 ??= process.getBuiltinModule('node:zlib').crc32;
  return zlibCrc32(data, value);
}

export const SEAL_LENGTH_KEY = 'payload_len';
export const SEAL_CRC_KEY = 'payload_crc32';

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** The seal of a decoded metadata document, if it has one; BadPacketError if it is malformed. */
export function interpretSeal(doc: unknown): Seal | undefined {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc) || doc instanceof Uint8Array) return undefined;
  const o = (doc instanceof Map ? Object.fromEntries(doc) : doc) as Record<string, unknown>;
  const has = (k: string) => Object.hasOwn(o, k);
  if (!has(SEAL_LENGTH_KEY) && !has(SEAL_CRC_KEY)) return undefined;
  const bad = (what: string): never => {
    throw new BadPacketError(`Invalid packet metadata: ${what}`);
  };
  if (!has(SEAL_LENGTH_KEY) || !has(SEAL_CRC_KEY)) bad(`a seal needs both ${SEAL_LENGTH_KEY} and ${SEAL_CRC_KEY}`);
  const len = o[SEAL_LENGTH_KEY];
  const crc = o[SEAL_CRC_KEY];
  const int = (v: unknown): bigint | undefined =>
    typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined;
  const length = int(len);
  const sum = int(crc);
  if (length === undefined || length < 0n || length > U64_MAX)
    bad(`${SEAL_LENGTH_KEY} is not an unsigned 64-bit integer`);
  if (sum === undefined || sum < 0n || sum > 0xffff_ffffn) bad(`${SEAL_CRC_KEY} is not an unsigned 32-bit integer`);
  return { length: length!, crc32: Number(sum) };
}

/** CRC-32 of data, continuing from `value` (the CRC of what came before; 0 to start). */
export function crc32Update(data: Uint8Array, value = 0): number {
  return crc32Of(data, value) >>> 0;
}

/** Whether a header's seal holds for a payload held in memory. */
export function sealOf(payload: Uint8Array): Seal {
  return { length: BigInt(payload.length), crc32: crc32Update(payload) };
}

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

export function checksumMismatch(got: number, sealed: number): PayloadSealError {
  return new PayloadSealError(
    'ERR_PAYLOAD_CHECKSUM',
    `Payload checksum mismatch: CRC-32 ${hex(got)}, sealed as ${hex(sealed)} (corrupted?)`,
  );
}

/**
 * Checks a payload against its seal as the bytes pass: update() with every chunk in order, then
 * finish() at the end. Usable from a synchronous copy loop and from a stream (SealTransform, in
 * seal-transform.ts). update() throws as soon as the payload runs past the sealed length;
 * finish() throws if it ended early or fails the checksum. The first failure is also kept in
 * `failure`.
 */
export class SealVerifier {
  readonly seal: Seal;
  /** Bytes seen so far. */
  seen = 0;
  private crc = 0;
  private readonly limit: number;
  failure: PayloadSealError | undefined;
  private done = false;

  constructor(seal: Seal) {
    this.seal = seal;
    // Lengths beyond 2^53 can not be reached by a real stream; compare as numbers (fast path).
    this.limit = seal.length > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(seal.length);
  }

  /** Account for the next chunk; throws PayloadSealError (ERR_PAYLOAD_LONG) if it runs past the length. */
  update(chunk: Uint8Array): void {
    if (this.failure) throw this.failure;
    if (this.seen + chunk.length > this.limit) {
      throw this.fail(
        'ERR_PAYLOAD_LONG',
        `Payload runs long: more than the ${this.seal.length} bytes it was sealed with`,
      );
    }
    this.seen += chunk.length;
    this.crc = crc32Of(chunk, this.crc);
  }

  /** The payload has ended: throws PayloadSealError if it is short or fails the checksum. */
  finish(): void {
    if (this.failure) throw this.failure;
    if (this.done) return;
    this.done = true;
    if (BigInt(this.seen) < this.seal.length) {
      throw this.fail(
        'ERR_PAYLOAD_SHORT',
        `Payload ends early: ${this.seen} of ${this.seal.length} bytes (cut short in transit?)`,
      );
    }
    const crc = this.crc >>> 0;
    if (crc !== this.seal.crc32) {
      this.failure = checksumMismatch(crc, this.seal.crc32);
      throw this.failure;
    }
  }

  /** Whether finish() has succeeded. */
  get verified(): boolean {
    return this.done && !this.failure;
  }

  private fail(code: PayloadSealError['code'], message: string): PayloadSealError {
    this.failure = new PayloadSealError(code, message);
    return this.failure;
  }
}
