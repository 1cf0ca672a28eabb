/**
 * Reading job files' headers: one file opened at its payload (openPayloadSync), and the headers
 * of many job files for a queue's scans (Queue.scan, rescan, readJobHeaders): plain files in one
 * native call when the addon is there, else one 4 KiB read each; through a decoder, a few
 * decoders at once. A file that does not read is left out, and logged or handed to the caller's
 * onFailure. No header over the queue's maxHeaderSize is read: its prefix says how long it is.
 */
import { DecoderError, HeaderTooLargeError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { DEFAULT_MAX_HEADER_SIZE, decodeMetadata, decodePrefix, PREFIX_LENGTH } from '../packet/codec.js';
import { nativeOpenHead, nativeReadHeads } from '../packet/native-heads.js';
import { readHeaderSync } from '../packet/read.js';
import type { PacketHeader } from '../packet/types.js';
import { closeQuietly, readSomeSync } from '../sys/io.js';
import { openJobFile } from '../sys/untrusted.js';
import type { JobEntry } from './jobs.js';

/** What a scan reads of a Queue (queue.ts imports this module, so this one names no Queue). */
export interface ScannedQueue {
  readonly logger: Logger;
  readonly decoder: string | undefined;
  readonly jobsDir: string;
  readonly maxHeaderSize: number;
  jobPath(filename: string): string;
  readHeader(filename: string): Promise<PacketHeader>;
}

/** Called for each job file whose header can not be read (Queue's ScanOptions.onFailure). */
export type ScanFailure = (filename: string, err: unknown) => void;

/** How many decoders a scan runs at once. */
const DECODER_CONCURRENCY = 4;

/** Per queue object, the files over its limit already warned about: once per file, not per scan. */
const warnedTooLarge = new WeakMap<ScannedQueue, Set<string>>();

/** Warn once about a file whose header is over the queue's limit: what it claims, and what to do. */
function warnTooLarge(queue: ScannedQueue, filename: string, err: HeaderTooLargeError): void {
  let warned = warnedTooLarge.get(queue);
  if (!warned) warnedTooLarge.set(queue, (warned = new Set()));
  if (warned.has(filename)) return;
  if (warned.size >= 10_000) warned.clear();
  warned.add(filename);
  const claims =
    err.claimedSeq === undefined ? '' : `; it claims number ${err.claimedSeq}, which waits as a missing job would`;
  queue.logger.warn(
    'queue',
    `Skipping ${JSON.stringify(filename)}: its header's metadata is ${err.metadataLength} ` +
      `bytes, over the limit of ${err.limit} (--max-header-size, ` +
      `FSPL_MAX_HEADER_SIZE)${claims}`,
  );
}

/** The headers of these job files of `queue` (unreadable ones left out), in the given order. */
export async function readHeaders(queue: ScannedQueue, names: string[], onFailure?: ScanFailure): Promise<JobEntry[]> {
  const results: Array<JobEntry | undefined> = new Array(names.length);
  const log = queue.logger;
  const skip = (filename: string, err: unknown) => {
    // A hung decoder is not a bad file: stop. A failing one is worth a warning (a missing key
    // or program would otherwise look like an empty queue), unless the caller takes the
    // failures itself; other files are skipped quietly, as the reference does.
    if (err instanceof DecoderError && err.timedOut) throw err;
    if (err instanceof HeaderTooLargeError && !onFailure) {
      warnTooLarge(queue, filename, err);
      return;
    }
    const level = err instanceof DecoderError && !onFailure ? 'warn' : 'debug';
    log[level]('queue', () => `Skipping ${JSON.stringify(filename)}: ${(err as Error).message}`);
    onFailure?.(filename, err);
  };
  // Plain files with the native addon: all the reads in one call, and the headers in the usual
  // encoding decoded there too; the others are decoded here from memory.
  const heads = queue.decoder === undefined ? nativeReadHeads(queue.jobsDir, names, SCAN_READ) : undefined;
  const limit = queue.maxHeaderSize;
  if (heads) {
    const { bytes, lengths } = heads;
    const debug = log.enabled('debug'); // a call per file is measurable here
    // The addon decodes whatever header it read whole, up to SCAN_READ bytes: under a lower
    // limit, the length in each prefix is checked first (a header over it is refused as below).
    const checkLength = limit < SCAN_READ - PREFIX_LENGTH;
    let offset = 0;
    for (let i = 0; i < names.length; i++) {
      const filename = names[i]!;
      const n = lengths[i]!;
      if (debug) log.debug('queue', `Queue scan reading header from ${JSON.stringify(queue.jobPath(filename))}`);
      try {
        // A failed open or read, or a header longer than the bytes read: read it again the
        // usual way, which also gives the usual error.
        const start = n >= 0 ? bytes.subarray(offset, offset + n) : undefined;
        const native =
          checkLength && start && n >= PREFIX_LENGTH && start.readBigUInt64BE(14) > BigInt(limit)
            ? undefined
            : heads.header(i);
        const header =
          native ??
          (start ? headerFromStart(start, limit) : undefined) ??
          readHeaderFileSync(queue.jobPath(filename), limit);
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
 * Open a file, read its header, close it: one read of the first 4 KiB usually holds all of it;
 * longer ones are read exactly, if their metadata is no longer than `limit` (HeaderTooLargeError,
 * naming the number its first bytes claim).
 */
export function readHeaderFileSync(p: string, limit = DEFAULT_MAX_HEADER_SIZE): PacketHeader {
  // O_NONBLOCK: a FIFO named like a job must not hang a scan (for regular files it changes nothing);
  // O_NOFOLLOW: a link planted in jobs/ is not a job (untrusted.ts).
  const fd = openJobFile(p);
  try {
    const buf = (scanBuffer ??= Buffer.allocUnsafe(SCAN_READ));
    const n = readSomeSync(fd, buf, 0, SCAN_READ, 0);
    // positional reads left the offset at 0
    return headerFromStart(buf.subarray(0, n), limit) ?? readHeaderSync(fd, limit);
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
 * (read it from the file then). A bad prefix or metadata throws as reading it would, and so does
 * metadata longer than `limit` (HeaderTooLargeError).
 */
export function headerFromStart(buf: Buffer, limit?: number): PacketHeader | undefined {
  if (buf.length < PREFIX_LENGTH) return undefined;
  const prefix = decodePrefix(buf, limit); // the bytes after the prefix: what a header over the limit claims
  const end = PREFIX_LENGTH + prefix.metadataLength;
  return end <= buf.length ? decodeMetadata(buf.subarray(PREFIX_LENGTH, end), prefix.metadataCrc) : undefined;
}

/** Open a job file with its descriptor at the start of its payload (just after the header). */
export function openPayloadSync(p: string): number {
  return openPayloadAndHeaderSync(p).fd;
}

/** What is read at once for a header in C, as Queue.openPlainJob reads it: real headers are far smaller. */
const HEAD_READ = 4096;

/**
 * As openPayloadSync, also giving the header read on the way: in C when the addon is there (the
 * same checks as openJobFile, and a header in the usual encoding decoded there, as a queue run's
 * jobs are), else in JavaScript.
 */
export function openPayloadAndHeaderSync(p: string): { fd: number; header: PacketHeader } {
  const head = nativeOpenHead(p, HEAD_READ);
  if (head?.header) return { fd: head.fd, header: head.header };
  const fd = head?.fd ?? openJobFile(p); // at 0 when the addon left the header to be read here
  try {
    return { fd, header: readHeaderSync(fd) };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}
