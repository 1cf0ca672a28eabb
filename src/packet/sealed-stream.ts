/**
 * Sealed packets as streams, for the library (preparePacket({ seal: true })): the asynchronous
 * counterpart of sealed-copy.ts's writeSealedPacketSync, with the same two cases: a file is read
 * twice (checksum, then copy, checked again), anything else is spooled to a nameless file in
 * $TMPDIR first.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { PayloadSealError } from '../base/errors.js';
import { openSpoolSync } from '../sys/spool.js';
import { encodeHeader } from './codec.js';
import { crc32Update, SealVerifier, sealOf } from './seal.js';
import type { PacketHeader, Seal } from './types.js';

const read = promisify(fs.read);
const write = promisify(fs.write);
const CHUNK = 1 << 20;

/** Chunks of a file's bytes from `start`, up to `length` (fewer if it ends first); positional reads. */
async function* range(fd: number, start: number, length: number): AsyncGenerator<Buffer> {
  let done = 0;
  while (done < length) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, length - done));
    const { bytesRead } = await read(fd, buf, 0, buf.length, start + done);
    if (bytesRead === 0) return;
    done += bytesRead;
    yield buf.subarray(0, bytesRead);
  }
}

async function sealRange(fd: number, length: number): Promise<Seal> {
  let crc = 0;
  let n = 0;
  for await (const chunk of range(fd, 0, length)) {
    crc = crc32Update(chunk, crc);
    n += chunk.length;
  }
  return { length: BigInt(n), crc32: crc };
}

/** Yield the sealed header and then `seal.length` bytes of fd from 0, checked against the seal. */
async function* emit(header: PacketHeader, fd: number, seal: Seal, what: string): AsyncGenerator<Buffer> {
  yield encodeHeader({ ...header, seal });
  const v = new SealVerifier(seal);
  try {
    for await (const chunk of range(fd, 0, Number(seal.length))) {
      v.update(chunk);
      yield chunk;
    }
    v.finish();
  } catch (err) {
    if (err instanceof PayloadSealError) throw new PayloadSealError(err.code, `Cannot seal: ${what} (${err.message})`);
    throw err;
  }
}

/**
 * One sealed packet: the header with the payload's seal, then the payload. A payload given as
 * { fd } is a regular file we own (read from its start, closed at the end).
 */
export function sealedPacketStream(header: PacketHeader, payload?: Readable | Uint8Array | { fd: number }): Readable {
  if (payload === undefined) return Readable.from([encodeHeader({ ...header, seal: { length: 0n, crc32: 0 } })], { objectMode: false });
  if (payload instanceof Uint8Array) {
    return Readable.from([encodeHeader({ ...header, seal: sealOf(payload) }), Buffer.from(payload)], { objectMode: false });
  }
  async function* fromFile(fd: number) {
    try {
      const seal = await sealRange(fd, fs.fstatSync(fd).size);
      yield* emit(header, fd, seal, 'the payload file changed while being read');
    } finally {
      fs.closeSync(fd);
    }
  }
  async function* fromStream(body: Readable) {
    const spool = openSpoolSync();
    try {
      let crc = 0;
      let length = 0;
      for await (const chunk of body) {
        const b = chunk as Buffer;
        crc = crc32Update(b, crc);
        for (let done = 0; done < b.length; ) done += (await write(spool, b, done, b.length - done)).bytesWritten;
        length += b.length;
      }
      yield* emit(header, spool, { length: BigInt(length), crc32: crc }, 'the spool file changed while being read');
    } finally {
      fs.closeSync(spool);
      body.destroy();
    }
  }
  return Readable.from(payload instanceof Readable ? fromStream(payload) : fromFile(payload.fd), { objectMode: false });
}
