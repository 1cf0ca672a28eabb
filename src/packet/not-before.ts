/**
 * Not before a time (an extension): one more metadata key after the reference's, which it reads by
 * name and ignores the rest of (as it does the seal's and the retry keys):
 *
 *   not_before   unsigned integer: milliseconds since the Unix epoch (UTC); the job does not run
 *                before then (`prepare --not-before TIME`), and in sequence order nothing after it
 *
 * Milliseconds rather than an RFC 3339 string: one spelling for one instant (no offsets, no
 * fractions to normalise), compared without parsing. A key of the wrong shape (not an integer, or
 * past what a Date holds) makes the packet a bad packet, as a bad seal does.
 *
 * The command line's TIME is parsed here too: RFC 3339 with its offset, or +DURATION from now.
 */
import { BadPacketError } from '../base/errors.js';
import type { MsgpackWriter } from './msgpack.js';
import type { PacketHeader } from './types.js';

export const NOT_BEFORE_KEY = 'not_before';

/** The latest time a JavaScript Date holds, in ms since the epoch: the largest not_before. */
export const NOT_BEFORE_MAX = 8_640_000_000_000_000;

/** Whether `ms` can be a not-before time: a whole number of ms from the epoch to NOT_BEFORE_MAX. */
export function isNotBeforeMs(ms: number): boolean {
  return Number.isSafeInteger(ms) && ms >= 0 && ms <= NOT_BEFORE_MAX;
}

/** How many of these keys a header has (for its map's length). */
export function notBeforeKeyCount(header: PacketHeader): number {
  return header.notBefore === undefined ? 0 : 1;
}

/** Write the key if the header has it, after the others. */
export function writeNotBefore(w: MsgpackWriter, header: PacketHeader): void {
  const ms = header.notBefore;
  if (ms === undefined) return;
  if (!isNotBeforeMs(ms))
    throw new RangeError('notBefore must be whole milliseconds from the epoch to the year 275760');
  w.str(NOT_BEFORE_KEY);
  w.uint(ms);
}

/** Read the key from a decoded metadata object into the header. */
export function interpretNotBefore(o: Record<string, unknown>, header: PacketHeader): void {
  if (!Object.hasOwn(o, NOT_BEFORE_KEY)) return;
  const v = o[NOT_BEFORE_KEY];
  const ms = typeof v === 'bigint' && v <= BigInt(NOT_BEFORE_MAX) ? Number(v) : v;
  if (typeof ms !== 'number' || !isNotBeforeMs(ms))
    throw new BadPacketError(
      `Invalid packet metadata: ${NOT_BEFORE_KEY} is not a time in milliseconds since the epoch`,
    );
  header.notBefore = ms;
}

/** Whether a job (its header, or what a listing keeps of it) waits for its not-before time at `nowMs`. */
export function notYet(job: { readonly notBefore?: number }, nowMs = Date.now()): boolean {
  return job.notBefore !== undefined && job.notBefore > nowMs;
}

/** A not-before time in words: RFC 3339 UTC, with milliseconds only when it has some. */
export function notBeforeText(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const DURATION = /^\+(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/**
 * A not-before TIME as the command line gives it, in ms since the epoch: RFC 3339 with its offset
 * (`2026-12-01T08:00:00Z`, `2026-12-01T09:00:00+01:00`) or a duration from `nowMs` (`+90s`,
 * `+15m`, `+2h`, `+1d`, `+1h30m`). A fraction of a millisecond rounds up (never early).
 * RangeError, saying what is expected, when it is neither or is out of range.
 */
export function parseNotBefore(text: string, nowMs = Date.now()): number {
  const ms = DURATION.test(text) && text !== '+' ? nowMs + durationMs(text) : rfc3339Ms(text);
  if (ms === undefined || !isNotBeforeMs(ms)) {
    throw new RangeError(
      `expected an RFC 3339 time with its offset (2026-12-01T08:00:00Z) or ` +
        `+DURATION (+90s, +15m, +2h, +1d, +1h30m), from 1970 to the year 275760`,
    );
  }
  return ms;
}

function durationMs(text: string): number {
  const [, d, h, m, s] = DURATION.exec(text)!;
  const n = (x: string | undefined) => (x === undefined ? 0 : Number(x));
  return (((n(d) * 24 + n(h)) * 60 + n(m)) * 60 + n(s)) * 1000;
}

function rfc3339Ms(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  // Second 60 is RFC 3339's leap second: Date.UTC rolls it into the next minute.
  // Before 1970 is no not-before time (and Date.UTC reads years 0 to 99 as 1900 to 1999).
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  if (new Date(Date.UTC(year, month - 1, day)).getUTCMonth() !== month - 1) return undefined; // 2026-02-30
  const at = Date.UTC(year, month - 1, day, hour, minute, second);
  let offset = 0;
  if (!z) {
    if (Number(oh) > 23 || Number(om) > 59) return undefined;
    offset = (Number(oh) * 60 + Number(om)) * 60_000 * (sign === '-' ? -1 : 1);
  }
  const fracMs = frac ? Math.ceil(Number(`0${frac}`) * 1000 - 1e-9) : 0;
  return at - offset + fracMs;
}
