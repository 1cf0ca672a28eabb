/**
 * Reading a header from a live source: exactly the header is consumed, so the payload stays in
 * place for whoever reads next (a child process given the same descriptor, or a stream consumer).
 */
import type { Readable } from 'node:stream';
import { ShortReadError } from '../errors.js';
import { readExactSync } from '../io.js';
import { PREFIX_LENGTH, decodeMetadata, decodePrefix } from './codec.js';
import type { PacketHeader } from './types.js';

/** Read and decode the header from a file descriptor's current position. */
export function readHeaderSync(fd: number): PacketHeader {
  return readHeaderAndLengthSync(fd).header;
}

/** As readHeaderSync, also giving the header's length in bytes (where the payload starts). */
export function readHeaderAndLengthSync(fd: number): { header: PacketHeader; length: number } {
  const prefix = decodePrefix(readExactSync(fd, PREFIX_LENGTH));
  const header = decodeMetadata(readExactSync(fd, prefix.metadataLength), prefix.metadataCrc);
  return { header, length: PREFIX_LENGTH + prefix.metadataLength };
}

function nextChunk(stream: Readable): Promise<Buffer | null> {
  const chunk = stream.read() as Buffer | null;
  if (chunk !== null) return Promise.resolve(chunk);
  if (stream.readableEnded || stream.destroyed) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      stream.off('error', onError);
    };
    const onReadable = () => {
      const c = stream.read() as Buffer | null;
      if (c === null) return; // wait for more (or 'end')
      cleanup();
      resolve(c);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.once('error', onError);
  });
}

/** Read exactly n bytes from a readable stream; anything read beyond them is put back. */
export async function readExactFromStream(stream: Readable, n: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < n) {
    const chunk = await nextChunk(stream);
    if (chunk === null) throw new ShortReadError();
    const need = n - got;
    if (chunk.length > need) {
      parts.push(chunk.subarray(0, need));
      stream.unshift(chunk.subarray(need));
      got = n;
    } else {
      parts.push(chunk);
      got += chunk.length;
    }
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
}

/** Read and decode the header from a stream, leaving the payload unread in it. */
export async function readHeaderFromStream(stream: Readable): Promise<PacketHeader> {
  const prefix = decodePrefix(await readExactFromStream(stream, PREFIX_LENGTH));
  return decodeMetadata(await readExactFromStream(stream, prefix.metadataLength), prefix.metadataCrc);
}
