/**
 * A sequence number as text: nextseq's contents and a number given on the command line, read as
 * the reference reads them. Apart from seqfile.ts so that what reads a number alone (the empty
 * queue's quick run, src/process/empty-queue.ts) loads nothing else.
 */
import { U64_MAX } from '../base/u64.js';

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
