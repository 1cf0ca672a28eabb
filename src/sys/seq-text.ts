/**
 * A sequence number as text: nextseq's contents and a number given on the command line, read as
 * the reference reads them. Apart from seqfile.ts (its lock, its writes) so that what only reads a
 * number (the empty queue's quick run, src/process/empty-queue.ts) loads no more than that.
 */
import fs from 'node:fs';
import { U64_MAX } from '../base/u64.js';
import { closeQuietly } from './io.js';
import { openExisting } from './untrusted.js';

/**
 * Parse a sequence number the way the reference does (Rust's u64::from_str): decimal digits with
 * an optional leading '+', within 0..2^64-1.
 */
export function parseSeq(text: string): bigint | undefined {
  if (!/^\+?[0-9]+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n <= U64_MAX ? n : undefined;
}

/** Why a string is not a sequence number, in the reference's words. */
export function seqParseProblem(text: string): string {
  if (text === '' || text === '+') return 'cannot parse integer from empty string';
  if (!/^\+?[0-9]+$/.test(text)) return 'invalid digit found in string';
  return 'number too large to fit in target type';
}

/** A seqfile's value: its first line, surrounding white space trimmed. */
export function parseSeqfileText(text: string): bigint | undefined {
  const nl = text.indexOf('\n');
  return parseSeq((nl < 0 ? text : text.slice(0, nl)).trim());
}

/**
 * A seqfile's text, read without following a link, and only from a file with this one name (a
 * hard link to another file, swapped in for `.temp` by someone who may write the directory, is
 * refused, never read). A seqfile is small: its first 4 KiB are read (its number is on the first line).
 */
let seqBuffer: Buffer | undefined;
/** The one buffer a seqfile's text is read into (made once: read per job by queue-process); its first 4 KiB count. */
export function seqTextBuffer(): Buffer {
  return (seqBuffer ??= Buffer.allocUnsafe(4096));
}
export function readSeqText(file: string): string {
  const { fd } = openExisting(file, fs.constants.O_RDONLY, { singleLink: true });
  try {
    const buf = seqTextBuffer();
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return buf.toString('utf8', 0, n);
  } finally {
    closeQuietly(fd);
  }
}
