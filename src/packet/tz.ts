/**
 * POSIX TZ strings (`UTC-3:30`, `CET-1CEST,M3.5.0,M10.5.0/3`). The C library that the reference
 * uses honours them; Node's ICU only knows zone names and silently falls back to UTC. This reads
 * them when ICU doesn't know the value. Supported: fixed offsets, and DST with `Mm.w.d[/time]`
 * rules (or none, meaning the US rules); `Jn` and `n` day rules fall back to standard time.
 */

export interface PosixZone {
  /** Seconds east of UTC in standard time. */
  std: number;
  /** Seconds east of UTC in daylight time, if the zone has one. */
  dst?: number;
  rules?: [Rule, Rule];
}

interface Rule {
  month: number;
  week: number;
  day: number;
  /** Seconds after local midnight. */
  time: number;
}

const NAME = '(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]+>)';
const OFFSET = '([+-]?\\d{1,2}(?::\\d{1,2}){0,2})';
const RE = new RegExp(`^${NAME}${OFFSET}(?:${NAME}${OFFSET}?(?:,(.*))?)?$`);
const HAS_DST = new RegExp(`^${NAME}${OFFSET}${NAME}`);

function hms(s: string): number {
  const neg = s.startsWith('-');
  const parts = s.replace(/^[+-]/, '').split(':').map(Number);
  const v = (parts[0] ?? 0) * 3600 + (parts[1] ?? 0) * 60 + (parts[2] ?? 0);
  return neg ? -v : v;
}

function rule(s: string): Rule | undefined {
  const m = /^M(\d{1,2})\.(\d)\.(\d)(?:\/([+-]?\d{1,3}(?::\d{1,2}){0,2}))?$/.exec(s);
  if (!m) return undefined;
  return { month: Number(m[1]), week: Number(m[2]), day: Number(m[3]), time: m[4] ? hms(m[4]) : 7200 };
}

const cache = new Map<string, PosixZone | null>();

function knownToIcu(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The POSIX zone the TZ value describes, or undefined to let ICU handle it. */
export function posixZone(tz: string | undefined): PosixZone | undefined {
  if (!tz) return undefined;
  let z = cache.get(tz);
  if (z === undefined) {
    z = null;
    const m = RE.exec(tz);
    if (m && !knownToIcu(tz)) {
      const std = -hms(m[1]!);
      z = { std };
      if (HAS_DST.test(tz)) {
        z.dst = m[2] !== undefined ? -hms(m[2]) : std + 3600;
        const spec = (m[3] ?? 'M3.2.0,M11.1.0').split(',');
        const a = rule(spec[0] ?? '');
        const b = rule(spec[1] ?? '');
        if (a && b) z.rules = [a, b];
        else delete z.dst;
      }
    }
    cache.set(tz, z);
  }
  return z ?? undefined;
}

function ruleDay(year: number, r: Rule): number {
  const first = new Date(Date.UTC(year, r.month - 1, 1)).getUTCDay();
  let day = 1 + ((r.day - first + 7) % 7) + (r.week - 1) * 7;
  const days = new Date(Date.UTC(year, r.month, 0)).getUTCDate();
  while (day > days) day -= 7;
  return Date.UTC(year, r.month - 1, day) / 1000;
}

/** Seconds east of UTC at the instant `secs` in this zone. */
export function posixOffset(z: PosixZone, secs: number): number {
  if (z.dst === undefined || !z.rules) return z.std;
  const year = new Date((secs + z.std) * 1000).getUTCFullYear();
  const start = ruleDay(year, z.rules[0]) + z.rules[0].time - z.std;
  const end = ruleDay(year, z.rules[1]) + z.rules[1].time - z.dst;
  const inDst = start < end ? secs >= start && secs < end : secs >= start || secs < end;
  return inDst ? z.dst : z.std;
}
