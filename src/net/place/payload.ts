/**
 * A token's payload: read after its header, copied out, and sealed (its length and CRC-32) for
 * tokens bound for another host.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import type { PacketHeader, Seal } from '../../packet/index.js';
import { sealOf } from '../../packet/seal/seal.js';
import { sealRestOfFileSync } from '../../packet/seal/sealed-copy.js';
import { headerFromStart, openPayloadSync, payloadOffset, readHeaderFileSync } from '../../queue/job-headers.js';
import { copy } from '../../sys/copy.js';
import { closeQuietly, readSomeSync, writeAllSync } from '../../sys/io.js';
import { createFresh, type FileOwner, openExisting, openJobFile, UntrustedFileError } from '../../sys/untrusted.js';
import type { TokenContent } from './token.js';

/** The seal (length and CRC-32) of a token's payload, read once from its sources. */
export function sealOfPayload(p: TokenContent['payload']): Seal {
  if (!p) return { length: 0n, crc32: 0 };
  if ('data' in p) return sealOf(p.data);
  const fds: number[] = [];
  try {
    if ('tokens' in p) for (const file of p.tokens) fds.push(openPayloadSync(file));
    else if ('path' in p)
      fds.push(openExisting(p.path).fd); // a staged output: not through a link
    else throw new TypeError('a sealed token needs its payload as a file or tokens, not a descriptor');
    // Positional reads: the descriptors' own offsets stay where the copy will start.
    let seal: Seal = { length: 0n, crc32: 0 };
    for (const fd of fds) seal = sealRestOfFileSync(fd, seal);
    return seal;
  } finally {
    for (const fd of fds) closeQuietly(fd);
  }
}

/**
 * What a token's first read takes: its header and, for most tokens, all of its payload (one byte
 * more, so that a read that fills it says the token is larger).
 */
const START_READ = 64 * 1024;
let startBuffer: Buffer | undefined;

/**
 * The first bytes of a token, into a buffer shared by the synchronous readers below (valid until
 * the next call), read from the descriptor's offset, which moves past them.
 */
function readStart(fd: number): { buf: Buffer; n: number } {
  const buf = (startBuffer ??= Buffer.allocUnsafe(START_READ + 1));
  return { buf, n: readSomeSync(fd, buf, 0, buf.length) };
}

/**
 * Copy a token's payload into a file of its own (for commands that read inputs by name), and
 * return its header, decoded from the same read. One open and one read of the token do for both
 * (the payload's first bytes written from that read, the rest, if any, copied on by
 * copy_file_range): the header alone cost an open, a read and a close more (an and-merge's tokens
 * far from the head of their place keep no header), and the copy a second open and two reads,
 * on the way to starting the command.
 */
export function extractPayload(file: string, dest: string, owner?: FileOwner): PacketHeader {
  const inFd = openJobFile(file);
  try {
    const { buf, n } = readStart(inFd);
    const header = headerFromStart(buf.subarray(0, n));
    // Made new (untrusted.ts), for the firing's user when it runs as another (owner).
    const out = createFresh(dest, 0o644, owner);
    try {
      if (header === undefined) {
        // A header longer than the read (or a file cut short, which readHeaderSync reports).
        return extractFromScratch(file, out);
      }
      const start = payloadOffset(buf);
      writeAllSync(out, buf, start, n - start);
      copy(inFd, out); // what is left past the read (none for most tokens)
      return header;
    } finally {
      closeQuietly(out);
    }
  } finally {
    closeQuietly(inFd);
  }
}

/** extractPayload the long way: the header read on its own, then the payload copied. */
function extractFromScratch(file: string, out: number): PacketHeader {
  const header = readHeaderFileSync(file);
  copyPayloads([file], out);
  return header;
}

/**
 * Copy the payloads of these token files, one after the other, to a descriptor; their lengths. A
 * token that a user of its place replaced by a link after it was indexed is not read, and gives
 * nothing (length 0): it is as if that user had written an empty token, which is theirs to do,
 * and a run's commit (an error token's copy of its input) does not stop on it (docs/security.md).
 */
export function copyPayloads(files: readonly string[], out: number): number[] {
  return files.map((file) => {
    let inFd: number;
    try {
      inFd = openPayloadSync(file);
    } catch (err) {
      if (err instanceof UntrustedFileError) return 0;
      throw err;
    }
    try {
      return copy(inFd, out);
    } finally {
      closeQuietly(inFd);
    }
  });
}

/** A small token read whole: its header and its payload (a copy of its own). */
export interface WholeToken {
  header: PacketHeader;
  payload: Buffer;
}

/**
 * Read a token whole in one open and one read when it is small (most are), its header decoded
 * from that read; undefined when it is larger than START_READ or its header longer than the read
 * (stream it then: payloadStream). A JavaScript transition's inputs are read so: cheaper than a
 * header read and then a read stream on libuv's pool.
 */
export function readSmallToken(file: string): WholeToken | undefined {
  const fd = openJobFile(file);
  try {
    const { buf, n } = readStart(fd);
    if (n > START_READ) return undefined;
    const header = headerFromStart(buf.subarray(0, n));
    return header && { header, payload: Buffer.from(buf.subarray(payloadOffset(buf), n)) };
  } finally {
    closeQuietly(fd);
  }
}

/** Bytes in memory as a payload stream (one chunk). */
export function payloadOf(chunk: Buffer): Readable {
  return new Readable({
    read() {
      if (chunk.length > 0) this.push(chunk);
      this.push(null);
    },
  });
}

/**
 * A token's payload as a stream, for a JavaScript transition's `payload()` or `fspl net` tools:
 * a small token read whole (readSmallToken), a larger one streamed from just after its header
 * (positional reads).
 */
export function payloadStream(file: string): Readable {
  const whole = readSmallToken(file);
  if (whole) return payloadOf(whole.payload);
  // From the descriptor's offset: openPayloadSync leaves it just after the header.
  return fs.createReadStream('', { fd: openPayloadSync(file), autoClose: true, highWaterMark: 1 << 20 });
}
