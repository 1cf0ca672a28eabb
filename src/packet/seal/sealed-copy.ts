/**
 * Synchronous copy loops for sealed packets (see seal.ts), for the CLI's descriptor-to-descriptor
 * paths: making a sealed packet (prepare --seal), storing a packet while checking its seal
 * (queue-write), and copying a sealed payload out (stdin-payload, queue-payload).
 *
 * These read every byte (a checksum needs them), so they are kept apart from copy.ts's copy(),
 * which unsealed packets keep using (and which may move bytes without reading them).
 */
import type { Hash } from 'node:crypto';
import fs from 'node:fs';
import { PayloadSealError, ShortReadError } from '../../base/errors.js';
import { copy } from '../../sys/copy.js';
import { readSomeSync, readUpToSync, writeAllSync } from '../../sys/io.js';
import { openSpoolSync } from '../../sys/spool.js';
import {
  cutInHeader,
  decodeMetadata,
  decodePrefix,
  encodeHeader,
  PREFIX_LENGTH,
  type Prefix,
  startsAsPacket,
} from '../codec.js';
import type { PacketHeader, Seal } from '../types.js';
import { checksumMismatch, crc32Update, SealVerifier } from './seal.js';

const CHUNK = 1 << 20;
let shared: Buffer | undefined;
const chunkBuffer = () => (shared ??= Buffer.allocUnsafe(CHUNK));

/**
 * Copy from inFd to outFd (from the current position, or from `position` with pread), checking
 * the bytes against the seal; throws PayloadSealError when they run long (before writing the
 * excess), end early, or fail the checksum. Returns the byte count.
 */
export function copySealedSync(inFd: number, outFd: number, seal: Seal, position?: number): number {
  const v = new SealVerifier(seal);
  const buf = chunkBuffer();
  let pos = position;
  for (;;) {
    const r = readSomeSync(inFd, buf, 0, buf.length, pos ?? null);
    if (r === 0) break;
    if (pos !== undefined) pos += r;
    const chunk = buf.subarray(0, r);
    v.update(chunk);
    writeAllSync(outFd, chunk);
  }
  v.finish();
  return v.seen;
}

/**
 * Checksum `length` bytes of a file from `position` (pread); fewer if the file is shorter. `crc`:
 * the CRC-32 of bytes that come before (to go on from them); `hash`, if given, is fed the bytes.
 */
export function sealFileRangeSync(fd: number, position: number, length: number, crc = 0, hash?: Hash): Seal {
  const buf = chunkBuffer();
  let done = 0;
  while (done < length) {
    const r = readSomeSync(fd, buf, 0, Math.min(buf.length, length - done), position + done);
    if (r === 0) break;
    crc = crc32Update(buf.subarray(0, r), crc);
    hash?.update(buf.subarray(0, r));
    done += r;
  }
  return { length: BigInt(done), crc32: crc };
}

/**
 * Checksum a file from its descriptor's offset to its end with positional reads (the offset stays
 * where it is), going on from `before`: the seal of the bytes that come first (earlier files of
 * one payload).
 */
export function sealRestOfFileSync(fd: number, before: Seal = { length: 0n, crc32: 0 }): Seal {
  const s = sealFileRangeSync(fd, fdOffset(fd) ?? 0, Infinity, before.crc32);
  return { length: before.length + s.length, crc32: s.crc32 };
}

/** A descriptor's file offset, from /proc (Linux); undefined where that can not be read. */
export function fdOffset(fd: number): number | undefined {
  try {
    const m = /^pos:\s*(\d+)/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A payload measured before its header is written (the header records its seal, and a signed
 * one its SHA-512): where its bytes are now, and what they measure. close() gives back a spool.
 */
export interface MeasuredPayload {
  /** The descriptor to copy from (-1: no payload), from `start`, `seal.length` bytes. */
  fd: number;
  start: number;
  seal: Seal;
  /** With `digest`: SHA-512 of the payload. */
  sha512?: Buffer;
  /** What to say should the bytes come up short on the second pass. */
  what: string;
  close(): void;
}

/** A hash for signing (loaded on first use: node:crypto is a cost of every start otherwise). */
export function newSha512(): Hash {
  return process.getBuiltinModule('node:crypto').createHash('sha512');
}

/**
 * Measure a payload for a sealed (and with `digest`, signed) packet:
 *
 * - a regular file (-i FILE, or stdin redirected from one) is read once here (its length is its
 *   size from the current offset) and copied later by writeMeasuredSync. A file that shrinks in
 *   between fails there (exit 1); one changed in place gives a packet its readers refuse.
 * - anything else (a pipe, a socket, a terminal) is spooled to a nameless file in $TMPDIR
 *   (spool.ts: it vanishes even on SIGKILL), measured on the way in, then copied from there.
 *   That costs disk space for the whole payload and a second pass over it.
 */
export function measurePayloadSync(payloadFd: number | undefined, digest: boolean): MeasuredPayload {
  const hash = digest ? newSha512() : undefined;
  const none = () => {};
  if (payloadFd === undefined)
    return { fd: -1, start: 0, seal: { length: 0n, crc32: 0 }, sha512: hash?.digest(), what: '', close: none };
  const st = fs.fstatSync(payloadFd);
  if (st.isFile()) {
    const start = fdOffset(payloadFd) ?? 0;
    const seal = sealFileRangeSync(payloadFd, start, Math.max(0, st.size - start), 0, hash);
    return {
      fd: payloadFd,
      start,
      seal,
      sha512: hash?.digest(),
      what: 'the payload file shrank while being read',
      close: none,
    };
  }
  const spool = openSpoolSync();
  try {
    const buf = chunkBuffer();
    let crc = 0;
    let length = 0;
    for (;;) {
      const r = readSomeSync(payloadFd, buf, 0, buf.length);
      if (r === 0) break;
      const chunk = buf.subarray(0, r);
      crc = crc32Update(chunk, crc);
      hash?.update(chunk);
      writeAllSync(spool, chunk);
      length += r;
    }
    const seal = { length: BigInt(length), crc32: crc };
    return {
      fd: spool,
      start: 0,
      seal,
      sha512: hash?.digest(),
      what: 'the spool file shrank while being read',
      close: () => fs.closeSync(spool),
    };
  } catch (err) {
    fs.closeSync(spool);
    throw err;
  }
}

/** Write a measured payload's packet: `header` (which records its seal), then the payload. */
export function writeMeasuredSync(outFd: number, header: PacketHeader, m: MeasuredPayload): void {
  writeAllSync(outFd, encodeHeader(header));
  if (m.fd >= 0) copyExactSealedSync(m.fd, outFd, m.seal, m.start, m.what);
}

/** Write a sealed packet to outFd: the header with the payload's seal, then the payload (measurePayloadSync). */
export function writeSealedPacketSync(outFd: number, header: PacketHeader, payloadFd?: number): void {
  const m = measurePayloadSync(payloadFd, false);
  try {
    writeMeasuredSync(outFd, { ...header, seal: m.seal }, m);
  } finally {
    m.close();
  }
}

/**
 * Copy exactly seal.length bytes from `position` (pread). Only the length is checked here: a
 * second CRC pass would cost as much as the first, and a file changed in
 * place between the passes gives a packet that every reader refuses anyway.
 */
function copyExactSealedSync(inFd: number, outFd: number, seal: Seal, position: number, what: string): void {
  const buf = chunkBuffer();
  const length = Number(seal.length);
  let done = 0;
  while (done < length) {
    const r = readSomeSync(inFd, buf, 0, Math.min(buf.length, length - done), position + done);
    if (r === 0)
      throw new PayloadSealError(
        'ERR_PAYLOAD_SHORT',
        `Cannot seal: ${what} (it ended after ${done} of ${length} bytes)`,
      );
    writeAllSync(outFd, buf, 0, r);
    done += r;
  }
}

/**
 * Store a packet from inFd into outFd, as queue-write does: the bytes are copied as they are,
 * but a plain packet's header is decoded on the way, and a sealed one's payload is checked
 * against its seal (PayloadSealError). Input that is not a plain packet (gzip, gpg...) or whose
 * header does not decode is copied unchecked; an empty input, or a plain packet that
 * ends within its header, is refused (ShortReadError). Returns the byte count.
 */
export function copyPacketSync(inFd: number, outFd: number): number {
  const prefix = readUpToSync(inFd, PREFIX_LENGTH);
  if (prefix.length === 0)
    throw new ShortReadError('Empty input: there is no packet to write (did the command that makes it fail?)');
  if (prefix.length < PREFIX_LENGTH && startsAsPacket(prefix)) throw cutInHeader(prefix.length);
  writeAllSync(outFd, prefix);
  if (prefix.length < PREFIX_LENGTH) return prefix.length;
  let p: Prefix | undefined;
  try {
    p = decodePrefix(prefix);
  } catch {
    return PREFIX_LENGTH + copy(inFd, outFd); // not a plain packet: stored unchecked
  }
  const meta = readUpToSync(inFd, p.metadataLength);
  if (meta.length < p.metadataLength) throw cutInHeader(PREFIX_LENGTH + meta.length);
  writeAllSync(outFd, meta);
  let seal: Seal | undefined;
  try {
    seal = decodeMetadata(meta, p.metadataCrc).seal;
  } catch {
    seal = undefined; // a bad header is the processor's business, as it always was
  }
  const head = PREFIX_LENGTH + meta.length;
  return head + (seal ? copySealedSync(inFd, outFd, seal) : copy(inFd, outFd));
}

/**
 * Check a sealed payload held in a file from `offset` to its end, without copying it: its length
 * from the file size (no read at all), and with `verify` its CRC-32 too (one read). Returns the
 * failure, or undefined when it holds.
 */
export function checkSealedFileSync(
  fd: number,
  offset: number,
  seal: Seal,
  verify: boolean,
): PayloadSealError | undefined {
  const size = BigInt(fs.fstatSync(fd).size - offset);
  if (size !== seal.length) {
    if (size < seal.length)
      return new PayloadSealError(
        'ERR_PAYLOAD_SHORT',
        `Payload ends early: ${size} of ${seal.length} bytes (cut short?)`,
      );
    return new PayloadSealError('ERR_PAYLOAD_LONG', `Payload runs long: ${size} bytes, sealed as ${seal.length}`);
  }
  if (!verify) return undefined;
  const got = sealFileRangeSync(fd, offset, Number(size));
  return got.crc32 === seal.crc32 ? undefined : checksumMismatch(got.crc32, seal.crc32);
}
