/**
 * Packets as streams, for library users: read a packet from any source into its metadata plus a
 * payload stream, and turn a header plus a payload into one readable packet stream. Nothing here
 * holds a payload in memory.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { closeQuietly } from '../io.js';
import { decodeHeader, encodeHeader } from './codec.js';
import { readHeaderAndLengthSync, readHeaderFromStream } from './read.js';
import type { Bytes, Ctime, PacketHeader } from './types.js';

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
 */
export async function readPacket(source: PacketSource): Promise<ReadPacket> {
  if (source instanceof Uint8Array) {
    const { header, length } = decodeHeader(source);
    const rest = Buffer.from(source.buffer, source.byteOffset + length, source.length - length);
    return { ...metadataOf(header), payload: Readable.from([rest], { objectMode: false }) };
  }
  if (source instanceof Readable) {
    const header = await readHeaderFromStream(source);
    return { ...metadataOf(header), payload: source };
  }
  if ('path' in source) {
    const fd = fs.openSync(source.path, 'r');
    try {
      const { header } = readHeaderAndLengthSync(fd);
      // The stream owns the descriptor, positioned after the header, and closes it when it ends
      // or is destroyed (safely: after any read in flight).
      return { ...metadataOf(header), payload: fdStream(fd, true) };
    } catch (err) {
      closeQuietly(fd);
      throw err;
    }
  }
  const { header } = readHeaderAndLengthSync(source.fd);
  return { ...metadataOf(header), payload: fdStream(source.fd, false) };
}

/** A stream over a descriptor from its current position. */
export function fdStream(fd: number, autoClose: boolean): Readable {
  return fs.createReadStream('', { fd, autoClose, highWaterMark: 1 << 20 });
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
