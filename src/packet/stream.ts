/**
 * Packets as streams, for library users: read a packet from any source into its metadata plus a
 * payload stream, and turn a header plus a payload into one readable packet stream. Nothing here
 * holds a payload in memory.
 */
import fs from 'node:fs';
import { pipeline, Readable } from 'node:stream';
import { closeQuietly } from '../sys/io.js';
import { decodeHeader, encodeHeader } from './codec.js';
import { readHeaderAndLengthSync, readHeaderFromStream } from './read.js';
import { SealTransform } from './seal/seal-transform.js';
import type { Bytes, Ctime, PacketHeader, Seal } from './types.js';

/** What a packet says about itself, flattened for convenience. */
export interface PacketMetadata {
  /** Sequence number (unsigned 64-bit). */
  seq: bigint;
  /** Creation time as stored: seconds (signed 64-bit) and nanoseconds. */
  ctime: Ctime;
  /** The creation time as a Date (millisecond precision). */
  date: Date;
  kind: 'Command' | 'NOP' | 'Fail';
  /** Job parameters (empty for NOP and Fail). */
  params: Bytes[];
  /** FSPL_SET_ variables, names without the prefix, in order (empty for NOP and Fail). */
  env: Array<[name: Bytes, value: Bytes]>;
  /** The header as decoded. */
  header: PacketHeader;
  /** The payload's length and CRC-32, on sealed packets only (an extension; see docs/api.md). */
  seal?: Seal;
}

export function metadataOf(header: PacketHeader): PacketMetadata {
  const { seq, ctime, cmd } = header;
  const ms = Number(ctime.secs) * 1000 + Math.floor(ctime.nanos / 1e6);
  return {
    seq,
    ctime,
    date: new Date(ms),
    kind: cmd.kind,
    params: cmd.kind === 'Command' ? cmd.params : [],
    env: cmd.kind === 'Command' ? cmd.env : [],
    header,
    ...(header.seal ? { seal: header.seal } : {}),
  };
}

/** A packet read from a source: its metadata and its payload, not yet read. */
export interface ReadPacket extends PacketMetadata {
  /** The payload. Read it, or destroy it to release the source. */
  payload: Readable;
}

/** Sources a packet can be read from. */
export type PacketSource = Readable | Uint8Array | { path: string } | { fd: number };

/**
 * Read a packet's header from a stream, a buffer, a file ({ path }) or an open descriptor
 * ({ fd }, read from its current position, left open). The payload stream starts right after
 * the header. Bad packets reject with BadPacketError (code ERR_BAD_PACKET or ERR_SHORT_READ).
 * A sealed packet's payload stream is checked as it is read, and fails at the end of a bad
 * payload with PayloadSealError (ERR_PAYLOAD_SHORT, ERR_PAYLOAD_LONG or ERR_PAYLOAD_CHECKSUM).
 */
export async function readPacket(source: PacketSource, options: ReadPacketOptions = {}): Promise<ReadPacket> {
  const packet = await readUnchecked(source, options.maxHeaderSize);
  if (packet.seal) packet.payload = withSealCheck(packet.payload, packet.seal);
  return packet;
}

/**
 * The payload stream checked against a seal (as is, without one): a bad payload fails the
 * stream at its end with PayloadSealError. Destroying the result destroys `payload` too.
 */
export function withSealCheck(payload: Readable, seal: Seal | undefined): Readable {
  if (!seal) return payload;
  const checked = new SealTransform(seal);
  pipeline(payload, checked, () => {}); // errors reach `checked`, whose reader sees them
  return checked;
}

export interface ReadPacketOptions {
  /**
   * The longest header metadata to read (default: 200 MiB, MAX_METADATA_LENGTH); a longer one
   * rejects with HeaderTooLargeError (ERR_HEADER_TOO_LARGE) before it is read. Not for bytes in
   * memory, which are there already.
   */
  maxHeaderSize?: number;
}

async function readUnchecked(source: PacketSource, limit: number | undefined): Promise<ReadPacket> {
  if (source instanceof Uint8Array) {
    const { header, length } = decodeHeader(source);
    const rest = Buffer.from(source.buffer, source.byteOffset + length, source.length - length);
    return { ...metadataOf(header), payload: Readable.from([rest], { objectMode: false }) };
  }
  if (source instanceof Readable) {
    const header = await readHeaderFromStream(source, limit);
    return { ...metadataOf(header), payload: source };
  }
  if ('path' in source) {
    const fd = fs.openSync(source.path, 'r');
    try {
      const { header } = readHeaderAndLengthSync(fd, limit);
      // The stream owns the descriptor, positioned after the header, and closes it when it ends
      // or is destroyed (safely: after any read in flight).
      return { ...metadataOf(header), payload: fdStream(fd, true) };
    } catch (err) {
      closeQuietly(fd);
      throw err;
    }
  }
  const { header } = readHeaderAndLengthSync(source.fd, limit);
  return { ...metadataOf(header), payload: fdStream(source.fd, false) };
}

/** A stream over a descriptor from its current position. */
export function fdStream(fd: number, autoClose: boolean): Readable {
  return fs.createReadStream('', { fd, autoClose, highWaterMark: readSize(fd) });
}

/**
 * Bytes per read for a stream of fd: 1 MiB, or less for a smaller regular file (a read stream
 * allocates that much per read, which small tokens would pay in garbage).
 */
function readSize(fd: number): number {
  const max = 1 << 20;
  try {
    const st = fs.fstatSync(fd);
    if (st.isFile()) return Math.min(max, Math.max(4096, st.size + 1));
  } catch {
    // not ours to judge here: the read reports it
  }
  return max;
}

/** One readable packet: the encoded header, then the payload (if any), streamed. */
export function packetStream(header: PacketHeader, payload?: Readable | Uint8Array): Readable {
  const head = encodeHeader(header);
  if (payload === undefined) return Readable.from([head], { objectMode: false });
  if (payload instanceof Uint8Array) return Readable.from([head, Buffer.from(payload)], { objectMode: false });
  async function* chain(body: Readable) {
    yield head;
    for await (const chunk of body) yield chunk as Buffer;
  }
  return Readable.from(chain(payload), { objectMode: false });
}
