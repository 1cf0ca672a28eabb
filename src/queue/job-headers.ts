/**
 * Reading job files' headers: one file opened at its payload (openPayloadSync), and the headers
 * of many job files for a queue's scans (Queue.scan, rescan, readJobHeaders): plain files in one
 * native call when the addon is there, else one 4 KiB read each; through a decoder, a few
 * decoders at once. A file that does not read is left out, and logged or handed to the caller's
 * onFailure.
 */
import fs from 'node:fs';
import { DecoderError } from '../base/errors.js';
import { decodeMetadata, decodePrefix, PREFIX_LENGTH } from '../packet/codec.js';
import { nativeReadHeads } from '../packet/native-heads.js';
import { readHeaderSync } from '../packet/read.js';
import type { PacketHeader } from '../packet/types.js';
import { closeQuietly, readSomeSync } from '../sys/io.js';
import type { JobEntry } from './jobs.js';
import type { Queue, ScanOptions } from './queue.js';

/** How many decoders a scan runs at once. */
const DECODER_CONCURRENCY = 4;

/** The headers of these job files of `queue` (unreadable ones left out), in the given order. */
export async function readHeaders(queue: Queue, names: string[], onFailure?: ScanOptions['onFailure']): Promise<JobEntry[]> {
  const results: Array<JobEntry | undefined> = new Array(names.length);
  const log = queue.logger;
  const skip = (filename: string, err: unknown) => {
    // A hung decoder is not a bad file: stop. A failing one is worth a warning (a missing key
    // or program would otherwise look like an empty queue), unless the caller takes the
    // failures itself; other files are skipped quietly, as the reference does.
    if (err instanceof DecoderError && err.timedOut) throw err;
    const level = err instanceof DecoderError && !onFailure ? 'warn' : 'debug';
    log[level]('queue', () => `Skipping ${JSON.stringify(filename)}: ${(err as Error).message}`);
    onFailure?.(filename, err);
  };
  // Plain files with the native addon: all the reads in one call, and the headers in the usual
  // encoding decoded there too; the others are decoded here from memory.
  const heads = queue.decoder === undefined ? nativeReadHeads(queue.jobsDir, names, SCAN_READ) : undefined;
  if (heads) {
    const { bytes, lengths } = heads;
    const debug = log.enabled('debug'); // a call per file is measurable here
    let offset = 0;
    for (let i = 0; i < names.length; i++) {
      const filename = names[i]!;
      const n = lengths[i]!;
      if (debug) log.debug('queue', `Queue scan reading header from ${JSON.stringify(queue.jobPath(filename))}`);
      try {
        // A failed open or read, or a header longer than the bytes read: read it again the
        // usual way, which also gives the usual error.
        const header =
          heads.header(i) ?? (n >= 0 ? headerFromStart(bytes.subarray(offset, offset + n)) : undefined) ?? readHeaderFileSync(queue.jobPath(filename));
        results[i] = { filename, header };
      } catch (err) {
        skip(filename, err);
      }
      if (n > 0) offset += n;
    }
    return results.filter((r): r is JobEntry => r !== undefined);
  }
  const read = async (i: number) => {
    const filename = names[i]!;
    log.debug('queue', () => `Queue scan reading header from ${JSON.stringify(queue.jobPath(filename))}`);
    try {
      results[i] = { filename, header: await queue.readHeader(filename) };
    } catch (err) {
      skip(filename, err);
    }
  };
  // Through a decoder each header costs a process, so a few run at once; plain files are
  // read one after the other (the reads are synchronous anyway).
  const lanes = queue.decoder === undefined ? 1 : Math.min(DECODER_CONCURRENCY, names.length);
  let next = 0;
  const lane = async () => {
    while (next < names.length) await read(next++);
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return results.filter((r): r is JobEntry => r !== undefined);
}

const SCAN_READ = 4096;
let scanBuffer: Buffer | undefined;

/**
 * Open a file, read its header, close it. Real headers are small, so one read of the first 4 KiB
 * usually holds all of it (a scan of 10,000 jobs saves 10,000 system calls); longer ones are read
 * exactly.
 */
export function readHeaderFileSync(p: string): PacketHeader {
  // O_NONBLOCK: a FIFO named like a job must not hang a scan (for regular files it changes nothing).
  const fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const buf = (scanBuffer ??= Buffer.allocUnsafe(SCAN_READ));
    const n = readSomeSync(fd, buf, 0, SCAN_READ, 0);
    return headerFromStart(buf.subarray(0, n)) ?? readHeaderSync(fd); // positional reads left the offset at 0
  } finally {
    closeQuietly(fd);
  }
}

/**
 * Where the payload starts in a packet whose first bytes are these: the header's length, read
 * from its prefix (which is checked: a bad one throws as reading it would). The bytes need not
 * hold the whole header.
 */
export function payloadOffset(start: Uint8Array): number {
  return PREFIX_LENGTH + decodePrefix(start.subarray(0, PREFIX_LENGTH)).metadataLength;
}

/**
 * Decode a header from the first bytes of a file, or undefined when they do not hold all of it
 * (read it from the file then). A bad prefix or metadata throws as reading it would.
 */
export function headerFromStart(buf: Buffer): PacketHeader | undefined {
  if (buf.length < PREFIX_LENGTH) return undefined;
  const prefix = decodePrefix(buf.subarray(0, PREFIX_LENGTH));
  const end = PREFIX_LENGTH + prefix.metadataLength;
  return end <= buf.length ? decodeMetadata(buf.subarray(PREFIX_LENGTH, end), prefix.metadataCrc) : undefined;
}

/** Open a job file with its descriptor at the start of its payload (just after the header). */
export function openPayloadSync(p: string): number {
  return openPayloadAndHeaderSync(p).fd;
}

/** As openPayloadSync, also giving the header read on the way. */
export function openPayloadAndHeaderSync(p: string): { fd: number; header: PacketHeader } {
  const fd = fs.openSync(p, 'r');
  try {
    return { fd, header: readHeaderSync(fd) };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}
