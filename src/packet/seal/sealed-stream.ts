/**
 * Sealed packets as streams, for the library (preparePacket({ seal: true })): the asynchronous
 * counterpart of sealed-copy.ts's writeSealedPacketSync, with the same two cases: a file is read
 * twice (checksum, then copy, checked again), anything else is spooled to a nameless file in
 * $TMPDIR first.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { PayloadSealError } from '../../base/errors.js';
import { openSpoolSync } from '../../sys/spool.js';
import { encodeHeader } from '../codec.js';
import type { PacketHeader, Seal } from '../types.js';
import { crc32Update, SealVerifier, sealOf } from './seal.js';
import { newSha512 } from './sealed-copy.js';

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

/** Yield the header (which records `seal`) and then `seal.length` bytes of fd from 0, checked against the seal. */
async function* emit(header: PacketHeader, fd: number, seal: Seal, what: string): AsyncGenerator<Buffer> {
  yield encodeHeader(header);
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

/** A payload measured for its header (as sealed-copy.ts's MeasuredPayload): a file of ours, from 0. */
export interface MeasuredFile {
  fd: number;
  seal: Seal;
  /** SHA-512 of the payload, when asked for (a signed packet's). */
  sha512?: Buffer;
  what: string;
  close(): void;
}

/**
 * Measure a payload for a sealed (with `digest`, signed) packet: a file given as { fd } (a
 * regular file we own, read from its start and closed by close()) is read once here; a stream is
 * spooled to a nameless file in $TMPDIR, measured on the way in.
 */
export async function measurePayload(payload: Readable | { fd: number }, digest: boolean): Promise<MeasuredFile> {
  const hash = digest ? newSha512() : undefined;
  if (!(payload instanceof Readable)) {
    const fd = payload.fd;
    try {
      let crc = 0;
      let n = 0;
      for await (const chunk of range(fd, 0, fs.fstatSync(fd).size)) {
        crc = crc32Update(chunk, crc);
        hash?.update(chunk);
        n += chunk.length;
      }
      const seal = { length: BigInt(n), crc32: crc };
      return {
        fd,
        seal,
        sha512: hash?.digest(),
        what: 'the payload file changed while being read',
        close: () => fs.closeSync(fd),
      };
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }
  const spool = openSpoolSync();
  try {
    let crc = 0;
    let length = 0;
    for await (const chunk of payload) {
      const b = chunk as Buffer;
      crc = crc32Update(b, crc);
      hash?.update(b);
      for (let done = 0; done < b.length; ) done += (await write(spool, b, done, b.length - done)).bytesWritten;
      length += b.length;
    }
    const seal = { length: BigInt(length), crc32: crc };
    return {
      fd: spool,
      seal,
      sha512: hash?.digest(),
      what: 'the spool file changed while being read',
      close: () => fs.closeSync(spool),
    };
  } catch (err) {
    fs.closeSync(spool);
    throw err;
  } finally {
    payload.destroy();
  }
}

/** A measured payload's packet: `header` (which records its seal), then the payload, checked again. */
export async function* emitMeasured(header: PacketHeader, m: MeasuredFile): AsyncGenerator<Buffer> {
  if (!header.seal) throw new RangeError('emitMeasured: the header must be sealed');
  yield* emit(header, m.fd, header.seal, m.what);
}

/** One sealed packet: the header with its seal, then the payload ({ fd }: a file of ours, closed at the end). */
export function sealedPacketStream(header: PacketHeader, payload?: Readable | Uint8Array | { fd: number }): Readable {
  if (payload === undefined)
    return Readable.from([encodeHeader({ ...header, seal: { length: 0n, crc32: 0 } })], { objectMode: false });
  if (payload instanceof Uint8Array) {
    return Readable.from([encodeHeader({ ...header, seal: sealOf(payload) }), Buffer.from(payload)], {
      objectMode: false,
    });
  }
  async function* sealed(given: Readable | { fd: number }) {
    const m = await measurePayload(given, false);
    try {
      yield* emit({ ...header, seal: m.seal }, m.fd, m.seal, m.what);
    } finally {
      m.close();
    }
  }
  return Readable.from(sealed(payload), { objectMode: false });
}
