/**
 * The packet header: a 30-byte prefix followed by MessagePack metadata.
 *
 *   0  12  "*FILESPOOLER"
 *  12   2  version (1), big-endian
 *  14   8  metadata length, big-endian
 *  22   4  CRC-32 of the metadata
 *  26   4  CRC-32 of bytes 0..25
 */
import { Decoder } from '@msgpack/msgpack';
import { BadPacketError, HeaderTooLargeError, ShortReadError } from '../base/errors.js';
import { requirePackage } from '../sys/require-package.js';
import { claimedSeq } from './claim.js';
import { MsgpackWriter } from './msgpack.js';
import { interpretNotBefore, notBeforeKeyCount, writeNotBefore } from './not-before.js';
import { interpretRetryKeys, retryKeyCount, writeRetryKeys } from './retry-keys.js';
import { interpretSeal, SEAL_CRC_KEY, SEAL_LENGTH_KEY } from './seal/seal.js';
import { checkMsgpackShape } from './shape.js';
import { interpretSignature, SHA512_KEY, SHA512_LENGTH, SSHSIG_KEY } from './signature.js';
import {
  type Bytes,
  type CommandType,
  type Ctime,
  I64_MAX,
  I64_MIN,
  MAX_METADATA_LENGTH,
  type PacketHeader,
  U64_MAX,
} from './types.js';

export const PREFIX_LENGTH = 30;
export const TAG = Buffer.from('*FILESPOOLER', 'ascii');
export const VERSION = 1;

export { checkMaxHeaderSize, DEFAULT_MAX_HEADER_SIZE, MAX_METADATA_LENGTH } from './types.js';

let crcBuf: ((data: Uint8Array) => number) | undefined;

/**
 * CRC-32 (IEEE 802.3) of the prefix and the metadata, by the crc-32 package, loaded on the first
 * header coded in JavaScript (it builds its tables as it loads: a start-up cost).
 */
export function crc32(data: Uint8Array): number {
  crcBuf ??= requirePackage<typeof import('crc-32')>('crc-32').buf;
  return crcBuf(data) >>> 0;
}

/**
 * Encode the MessagePack metadata, byte-identical to the reference writer (for its three keys).
 * `signed: false` leaves the signature's `sshsig` key out: what a signature signs (signedMessage).
 */
export function encodeMetadata(header: PacketHeader, signed = true): Buffer {
  if (header.seq < 0n || header.seq > U64_MAX) throw new RangeError('seq must be an unsigned 64-bit integer');
  if (header.ctime.secs < I64_MIN || header.ctime.secs > I64_MAX)
    throw new RangeError('ctime seconds must fit in 64 bits');
  const w = new MsgpackWriter();
  const { seal, signature } = header;
  if (signature && !seal) throw new RangeError('a signed packet must be sealed');
  if (signature && signature.sha512.length !== SHA512_LENGTH)
    throw new RangeError(`payload sha512 must be ${SHA512_LENGTH} bytes`);
  const sig = signature && signed ? signature.sshsig : undefined;
  w.mapHeader(
    3 + (seal ? 2 : 0) + (signature ? 1 : 0) + (sig ? 1 : 0) + retryKeyCount(header) + notBeforeKeyCount(header),
  );
  w.str('seq');
  w.uint(header.seq);
  w.str('ctime');
  w.arrayHeader(2);
  w.sint(header.ctime.secs);
  w.uint(header.ctime.nanos);
  w.str('cmd_type');
  const cmd = header.cmd;
  if (cmd.kind === 'NOP' || cmd.kind === 'Fail') {
    w.str(cmd.kind);
  } else {
    w.mapHeader(1);
    w.str('Command');
    w.mapHeader(2);
    w.str('params');
    w.arrayHeader(cmd.params.length);
    for (const p of cmd.params) w.byteArray(p);
    w.str('env');
    w.arrayHeader(cmd.env.length);
    for (const [k, v] of cmd.env) {
      w.arrayHeader(2);
      w.byteArray(k);
      w.byteArray(v);
    }
  }
  if (seal) {
    if (seal.length < 0n || seal.length > U64_MAX)
      throw new RangeError('seal length must be an unsigned 64-bit integer');
    if (!Number.isInteger(seal.crc32) || seal.crc32 < 0 || seal.crc32 > 0xffff_ffff)
      throw new RangeError('seal crc32 must be an unsigned 32-bit integer');
    // After the reference's keys, which it reads by name and ignores the rest (an extension).
    w.str(SEAL_LENGTH_KEY);
    w.uint(seal.length);
    w.str(SEAL_CRC_KEY);
    w.uint(seal.crc32);
  }
  if (signature) {
    w.str(SHA512_KEY);
    w.bin(signature.sha512);
  }
  // Before sshsig: a signature covers them (signedMessage leaves out only sshsig).
  writeRetryKeys(w, header);
  writeNotBefore(w, header);
  if (sig) {
    w.str(SSHSIG_KEY);
    w.bin(sig);
  }
  return w.finish();
}

/**
 * What a signed packet's signature signs (signature.ts): its metadata with the payload's SHA-512
 * and without the `sshsig` key. `header` must be sealed.
 */
export function signedMessage(header: PacketHeader, sha512: Uint8Array): Buffer {
  if (!header.seal) throw new RangeError('only a sealed packet can be signed');
  return encodeMetadata({ ...header, signature: { sha512, sshsig: NO_SIG } }, false);
}
const NO_SIG = new Uint8Array(0);

/**
 * Whether two sealed headers sign the same message (signedMessage of each, with its own sha512),
 * by their fields rather than by encoding both: what a signature verified over one covers the other.
 */
export function sameSignedContent(a: PacketHeader, b: PacketHeader): boolean {
  if (a.seq !== b.seq || a.ctime.secs !== b.ctime.secs || a.ctime.nanos !== b.ctime.nanos) return false;
  if (a.retries !== b.retries || a.notBefore !== b.notBefore || Boolean(a.failure) !== Boolean(b.failure)) return false;
  if (a.failure && JSON.stringify(a.failure, big) !== JSON.stringify(b.failure, big)) return false;
  if (!a.seal || !b.seal || a.seal.length !== b.seal.length || a.seal.crc32 !== b.seal.crc32) return false;
  if (!a.signature || !b.signature || !bytesEqual(a.signature.sha512, b.signature.sha512)) return false;
  const x = a.cmd;
  const y = b.cmd;
  if (x.kind !== 'Command' || y.kind !== 'Command') return x.kind === y.kind;
  if (x.params.length !== y.params.length || x.env.length !== y.env.length) return false;
  for (let i = 0; i < x.params.length; i++) if (!bytesEqual(x.params[i], y.params[i])) return false;
  for (let i = 0; i < x.env.length; i++)
    if (!bytesEqual(x.env[i][0], y.env[i][0]) || !bytesEqual(x.env[i][1], y.env[i][1])) return false;
  return true;
}

const big = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/** Encode the whole header (prefix and metadata): what goes before the payload. */
export function encodeHeader(header: PacketHeader): Buffer {
  const meta = encodeMetadata(header);
  const out = Buffer.allocUnsafe(PREFIX_LENGTH + meta.length);
  TAG.copy(out, 0);
  out.writeUInt16BE(VERSION, 12);
  out.writeBigUInt64BE(BigInt(meta.length), 14);
  out.writeUInt32BE(crc32(meta), 22);
  out.writeUInt32BE(crc32(out.subarray(0, 26)), 26);
  meta.copy(out, PREFIX_LENGTH);
  return out;
}

export interface Prefix {
  metadataLength: number;
  metadataCrc: number;
}

/** Whether bytes start as a packet does (its tag, or as much of it as there is). */
export function startsAsPacket(b: Uint8Array): boolean {
  const n = Math.min(b.length, TAG.length);
  return n > 0 && Buffer.from(b.buffer, b.byteOffset, n).equals(TAG.subarray(0, n));
}

/** A packet that ends within its header, after n bytes: most likely a transfer cut short. */
export function cutInHeader(n: number): ShortReadError {
  return new ShortReadError(`Input ends within the packet header, after ${n} bytes (cut short in transit?)`);
}

/**
 * Input shorter than a packet's prefix, said for what it is (by every reader of headers alike):
 * nothing at all, a packet cut short (ShortReadError), or bytes that are no packet (BadPacketError).
 */
export function shortOfPrefix(head: Uint8Array): BadPacketError {
  if (head.length === 0)
    return new ShortReadError('Empty input: there is no packet (did the command that makes it fail?)');
  if (startsAsPacket(head)) return cutInHeader(head.length);
  return new BadPacketError(
    `Input is not a filespooler packet: ${head.length} byte${head.length === 1 ? '' : 's'}, ` +
      `fewer than a packet's header`,
  );
}

/**
 * Check a 30-byte prefix. Errors carry the reference's wording. Metadata longer than `limit` is
 * refused (HeaderTooLargeError) before anything reads it; bytes given beyond the prefix, if any,
 * tell which number such a header claims (claim.ts).
 */
export function decodePrefix(prefix: Uint8Array, limit = MAX_METADATA_LENGTH): Prefix {
  const b = Buffer.isBuffer(prefix) ? prefix : Buffer.from(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  if (b.length < PREFIX_LENGTH) throw new ShortReadError();
  if (!b.subarray(0, 12).equals(TAG)) throw new BadPacketError("Input doesn't appear to be a filespooler file");
  const version = b.readUInt16BE(12);
  if (version !== VERSION) throw new BadPacketError(`Input version ${version} != ${VERSION}`);
  if (b.readUInt32BE(26) !== crc32(b.subarray(0, 26))) throw new BadPacketError('CRC-32 mismatch on file prefix');
  const len = b.readBigUInt64BE(14);
  const max = Math.min(limit, MAX_METADATA_LENGTH);
  if (len > BigInt(max)) throw new HeaderTooLargeError(len, max, claimedSeq(b.subarray(PREFIX_LENGTH)));
  return { metadataLength: Number(len), metadataCrc: b.readUInt32BE(22) };
}

/** Check the metadata CRC and decode it. */
export function decodeMetadata(meta: Uint8Array, expectedCrc?: number): PacketHeader {
  if (expectedCrc !== undefined && crc32(meta) !== expectedCrc) throw new BadPacketError('CRC-32 mismatch on metadata');
  checkMsgpackShape(meta); // before the decoder allocates anything: see shape.ts
  let doc: unknown;
  try {
    doc = decoderFor(meta.length).decode(meta);
  } catch (err) {
    throw new BadPacketError(`Invalid packet metadata: ${(err as Error).message}`);
  }
  return interpretMetadata(doc);
}

const decoders = new Map<number, Decoder>();

/**
 * A MessagePack decoder whose length limits equal the input size: no container can hold more
 * elements than there are bytes, so a hostile declared length fails fast instead of allocating.
 * Decoders are reused per input size (queues hold many headers of the same few sizes), which
 * keeps scans of large queues from churning the garbage collector.
 */
function decoderFor(size: number): Decoder {
  const limit = Math.max(size, 16);
  let d = decoders.get(limit);
  if (!d) {
    if (decoders.size >= 64) decoders.clear();
    d = new Decoder({
      useBigInt64: true,
      maxArrayLength: limit,
      maxMapLength: limit,
      maxStrLength: limit,
      maxBinLength: limit,
      maxExtLength: limit,
    });
    decoders.set(limit, d);
  }
  return d;
}

/** Decode a complete header held in memory; returns the header and its length in bytes. */
export function decodeHeader(buf: Uint8Array): { header: PacketHeader; length: number } {
  if (buf.length < PREFIX_LENGTH) throw shortOfPrefix(buf);
  const { metadataLength, metadataCrc } = decodePrefix(buf.subarray(0, PREFIX_LENGTH));
  const end = PREFIX_LENGTH + metadataLength;
  if (buf.length < end) throw cutInHeader(buf.length);
  return { header: decodeMetadata(buf.subarray(PREFIX_LENGTH, end), metadataCrc), length: end };
}

// ---- liberal interpretation of the decoded MessagePack document ----

function bad(what: string): never {
  throw new BadPacketError(`Invalid packet metadata: ${what}`);
}

/** Fields of a struct, whether written as a map (any key order) or positionally as an array. */
function fields(v: unknown, names: string[], what: string): unknown[] {
  if (Array.isArray(v)) {
    if (v.length < names.length) bad(`${what} has ${v.length} fields, expected ${names.length}`);
    return v.slice(0, names.length);
  }
  if (v instanceof Map) v = Object.fromEntries(v);
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
    const o = v as Record<string, unknown>;
    return names.map((n) => {
      if (!Object.hasOwn(o, n)) bad(`${what} lacks field ${n}`);
      return o[n];
    });
  }
  return bad(`${what} is not a map or an array`);
}

function integer(v: unknown, what: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return bad(`${what} is not an integer`);
}

function byteString(v: unknown, what: string): Bytes {
  if (v instanceof Uint8Array) return Buffer.from(v); // a copy: the decoder may return views into its input
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (Array.isArray(v)) {
    const out = Buffer.allocUnsafe(v.length);
    for (let i = 0; i < v.length; i++) {
      const b = v[i];
      if (typeof b !== 'number' || !Number.isInteger(b) || b < 0 || b > 255) bad(`${what} is not a byte string`);
      out[i] = b;
    }
    return out;
  }
  return bad(`${what} is not a byte string`);
}

function interpretCtime(v: unknown): Ctime {
  let secs: unknown;
  let nanos: unknown;
  if (Array.isArray(v)) {
    [secs, nanos] = fields(v, ['secs', 'nanos'], 'ctime');
  } else {
    const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
    secs = o.secs ?? o.secs_since_epoch;
    nanos = o.nanos ?? o.nanos_since_epoch;
    if (secs === undefined || nanos === undefined) bad('ctime is not [seconds, nanoseconds]');
  }
  const s = integer(secs, 'ctime seconds');
  const n = integer(nanos, 'ctime nanoseconds');
  if (s < I64_MIN || s > I64_MAX) bad('ctime seconds out of range');
  if (n < 0n || n > 0xffff_ffffn) bad('ctime nanoseconds out of range');
  return { secs: s, nanos: Number(n) };
}

function interpretCmd(v: unknown): CommandType {
  let variant: string;
  let body: unknown;
  if (typeof v === 'string') {
    variant = v;
  } else if (v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array)) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length !== 1) bad('cmd_type must have exactly one variant');
    [variant, body] = entries[0]!;
  } else {
    return bad('cmd_type is not a string or a map');
  }
  switch (variant) {
    case 'NOP':
      return { kind: 'NOP' };
    case 'Fail':
      return { kind: 'Fail' };
    case 'Command': {
      const [params, env] = fields(body, ['params', 'env'], 'Command');
      if (!Array.isArray(params)) bad('params is not an array');
      if (!Array.isArray(env)) bad('env is not an array');
      return {
        kind: 'Command',
        params: params.map((p, i) => byteString(p, `param ${i + 1}`)),
        env: env.map((pair, i) => {
          const [k, val] = fields(pair, ['0', '1'], `env entry ${i + 1}`);
          return [byteString(k, 'env name'), byteString(val, 'env value')] as [Bytes, Bytes];
        }),
      };
    }
    default:
      return bad(`unknown cmd_type ${JSON.stringify(variant)}`);
  }
}

function interpretMetadata(doc: unknown): PacketHeader {
  const [seq, ctime, cmd] = fields(doc, ['seq', 'ctime', 'cmd_type'], 'metadata');
  const s = integer(seq, 'seq');
  if (s < 0n || s > U64_MAX) bad('seq out of range');
  const header: PacketHeader = { seq: s, ctime: interpretCtime(ctime), cmd: interpretCmd(cmd) };
  const seal = interpretSeal(doc);
  if (seal) header.seal = seal;
  const o = doc instanceof Map ? Object.fromEntries(doc) : (doc as Record<string, unknown>);
  const signature = interpretSignature(o, seal);
  if (signature) header.signature = signature;
  if (!Array.isArray(o)) {
    interpretRetryKeys(o, header);
    interpretNotBefore(o, header);
  }
  return header;
}
