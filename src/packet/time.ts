/** Timestamps: the packet's ctime and its RFC 3339 renderings (whole seconds). */
import type { Ctime } from './types.js';
import { posixOffset, posixZone } from './tz.js';

const MAX_DATE_SECS = 8_640_000_000_000n; // the range of a JavaScript Date

/**
 * The current time. Node offers the wall clock in milliseconds only, so nanoseconds are a
 * multiple of 1,000,000 (documented in docs/compatibility.md). Unlike the reference, a clock set
 * before 1970 gives negative seconds instead of a panic.
 */
export function now(): Ctime {
  const ms = Date.now();
  const secs = Math.floor(ms / 1000);
  return { secs: BigInt(secs), nanos: (ms - secs * 1000) * 1_000_000 };
}

function p2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function year(y: number): string {
  if (y >= 0 && y <= 9999) return String(y).padStart(4, '0');
  return y < 0 ? `-${String(-y).padStart(4, '0')}` : `+${y}`;
}

function toDate(secs: bigint): Date | undefined {
  if (secs > MAX_DATE_SECS || secs < -MAX_DATE_SECS) return undefined;
  return new Date(Number(secs) * 1000);
}

/** e.g. 2030-01-02T03:04:05Z */
export function rfc3339Utc(secs: bigint): string {
  const d = toDate(secs);
  if (!d) return `${secs}`;
  return (
    `${year(d.getUTCFullYear())}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}` +
    `T${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}Z`
  );
}

/** e.g. 2030-01-01T21:04:05-06:00, in the zone given by TZ (a zone name or a POSIX TZ string). */
export function rfc3339Local(secs: bigint): string {
  const zone = posixZone(process.env.TZ);
  if (zone) {
    const offset = posixOffset(zone, Number(secs));
    const d = toDate(secs + BigInt(offset));
    if (!d) return `${secs}`;
    const a = Math.abs(offset);
    const sign = offset < 0 ? '-' : '+';
    return (
      `${year(d.getUTCFullYear())}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}` +
      `T${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}` +
      `${sign}${p2(Math.floor(a / 3600))}:${p2(Math.floor(a / 60) % 60)}`
    );
  }
  const d = toDate(secs);
  if (!d) return `${secs}`;
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  return (
    `${year(d.getFullYear())}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}` +
    `T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}` +
    `${sign}${p2(Math.floor(a / 60))}:${p2(a % 60)}`
  );
}
