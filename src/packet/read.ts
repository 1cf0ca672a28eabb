/**
 * Reading a header from a live source: exactly the header is consumed, so the payload stays in
 * place for whoever reads next (a child process given the same descriptor, or a stream consumer).
 */
import type { Readable } from 'node:stream';
import { ShortReadError } from '../base/errors.js';
import { readUpToSync } from '../sys/io.js';
import { cutInHeader, decodeMetadata, decodePrefix, PREFIX_LENGTH, shortOfPrefix } from './codec.js';
import type { PacketHeader } from './types.js';

/**
 * Read and decode the header from a file descriptor's current position. Metadata longer than
 * `limit` is not read (HeaderTooLargeError).
 */
export function readHeaderSync(fd: number, limit?: number): PacketHeader {
  return readHeaderAndLengthSync(fd, limit).header;
}

/**
 * As readHeaderSync, also giving the header's length in bytes (where the payload starts). Input
 * that ends within the header is said for what it is, as queue-write and queue-status say it:
 * nothing at all, a packet cut short, or bytes that are no packet.
 */
export function readHeaderAndLengthSync(fd: number, limit?: number): { header: PacketHeader; length: number } {
  const head = readUpToSync(fd, PREFIX_LENGTH);
  if (head.length < PREFIX_LENGTH) throw shortOfPrefix(head);
  const prefix = decodePrefix(head, limit);
  const meta = readUpToSync(fd, prefix.metadataLength);
  if (meta.length < prefix.metadataLength) throw cutInHeader(PREFIX_LENGTH + meta.length);
  const header = decodeMetadata(meta, prefix.metadataCrc);
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

/**
 * Read up to n bytes from a readable stream: fewer only at its end. Anything read beyond them is
 * put back. Memory grows with the bytes received, never with n (a header may declare any length).
 */
async function readUpToFromStream(stream: Readable, n: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < n) {
    const chunk = await nextChunk(stream);
    if (chunk === null) break;
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
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, got);
}

/** Read exactly n bytes from a readable stream (ShortReadError at its end); anything read beyond them is put back. */
export async function readExactFromStream(stream: Readable, n: number): Promise<Buffer> {
  const b = await readUpToFromStream(stream, n);
  if (b.length < n) throw new ShortReadError();
  return b;
}

/**
 * Read and decode the header from a stream, leaving the payload unread in it. Input that ends
 * within the header is said for what it is, as by the other readers (shortOfPrefix, cutInHeader).
 * Metadata longer than `limit` is not read (HeaderTooLargeError).
 */
export async function readHeaderFromStream(stream: Readable, limit?: number): Promise<PacketHeader> {
  const head = await readUpToFromStream(stream, PREFIX_LENGTH);
  if (head.length < PREFIX_LENGTH) throw shortOfPrefix(head);
  const prefix = decodePrefix(head, limit);
  const meta = await readUpToFromStream(stream, prefix.metadataLength);
  if (meta.length < prefix.metadataLength) throw cutInHeader(PREFIX_LENGTH + meta.length);
  return decodeMetadata(meta, prefix.metadataCrc);
}
