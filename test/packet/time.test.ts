import { afterEach, describe, expect, it } from 'vitest';
import { now, rfc3339Local, rfc3339Utc } from '../../src/packet/time.js';

const saved = process.env.TZ;
afterEach(() => {
  process.env.TZ = saved;
});

describe('time', () => {
  it('formats UTC with Z and whole seconds', () => {
    expect(rfc3339Utc(1893553445n)).toBe('2030-01-02T03:04:05Z');
    expect(rfc3339Utc(0n)).toBe('1970-01-01T00:00:00Z');
    expect(rfc3339Utc(5680281600n)).toBe('2150-01-01T00:00:00Z');
    expect(rfc3339Utc(-1n)).toBe('1969-12-31T23:59:59Z');
  });

  it('formats local time with a numeric offset in the zone given by TZ', () => {
    process.env.TZ = 'UTC';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T03:04:05+00:00');
    process.env.TZ = 'America/Chicago';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-01T21:04:05-06:00');
    expect(rfc3339Local(1909191845n)).toBe('2030-07-01T22:04:05-05:00');
    process.env.TZ = 'Asia/Kolkata';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T08:34:05+05:30');
  });

  it('now() gives seconds and nanoseconds', () => {
    const t = now();
    expect(t.secs).toBeGreaterThan(1_600_000_000n);
    expect(t.nanos).toBeGreaterThanOrEqual(0);
    expect(t.nanos).toBeLessThan(1_000_000_000);
  });
});

describe('POSIX TZ strings', () => {
  it('fixed offsets and M-rule daylight time, as the C library reads them', () => {
    process.env.TZ = 'UTC-3:30';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T06:34:05+03:30');
    process.env.TZ = 'CET-1CEST,M3.5.0,M10.5.0/3';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T04:04:05+01:00');
    expect(rfc3339Local(1909191845n)).toBe('2030-07-02T05:04:05+02:00');
    process.env.TZ = 'AEST-10AEDT,M10.1.0,M4.1.0/3';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T14:04:05+11:00');
    expect(rfc3339Local(1909191845n)).toBe('2030-07-02T13:04:05+10:00');
    process.env.TZ = '<+0545>-5:45';
    expect(rfc3339Local(1893553445n)).toBe('2030-01-02T08:49:05+05:45');
  });
});
