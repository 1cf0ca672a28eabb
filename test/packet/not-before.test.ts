/**
 * The not-before key (src/packet/not-before.ts): written after the reference's keys and read back,
 * a key of the wrong shape a bad packet, a header without it encoded as before; and the command
 * line's TIME, RFC 3339 or +DURATION.
 */
import { Encoder } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { decodeHeader, decodeMetadata, encodeHeader, encodeMetadata, type PacketHeader } from '../../src/lowlevel.js';
import { NOT_BEFORE_MAX, notBeforeText, notYet, parseNotBefore } from '../../src/packet/not-before.js';
import { prepareHeader } from '../../src/packet/prepare.js';

const base: PacketHeader = {
  seq: 3n,
  ctime: { secs: 1700000000n, nanos: 1 },
  cmd: { kind: 'Command', params: [], env: [] },
};
const T = Date.UTC(2026, 11, 1, 8, 0, 0);

describe('the not_before key', () => {
  it('round-trips, alone and beside the other extension keys', () => {
    for (const h of [
      { ...base, notBefore: 0 },
      { ...base, notBefore: T },
      { ...base, notBefore: NOT_BEFORE_MAX },
      { ...base, retries: 2n, notBefore: T + 1, seal: { length: 3n, crc32: 7 } },
    ]) {
      expect(decodeMetadata(encodeMetadata(h))).toEqual(h);
      expect(decodeHeader(encodeHeader(h)).header).toEqual(h);
    }
  });

  it('is a uint key named not_before, after the reference keys', () => {
    const bytes = encodeMetadata({ ...base, notBefore: T });
    expect(bytes[0]).toBe(0x84); // a map of 4: seq, ctime, cmd_type, not_before
    expect(bytes.includes(Buffer.from('\xaanot_before', 'latin1'))).toBe(true);
  });

  it('a header without it encodes as before (byte for byte)', () => {
    expect(encodeMetadata({ ...base, notBefore: undefined })).toEqual(encodeMetadata(base));
  });

  it('a key of the wrong shape is a bad packet', () => {
    const enc = new Encoder({ useBigInt64: true });
    const doc = (v: unknown) => enc.encode({ seq: 1, ctime: [0, 0], cmd_type: 'NOP', not_before: v });
    for (const v of [
      -1,
      1.5,
      'tomorrow',
      '2026-12-01T08:00:00Z',
      [1],
      NOT_BEFORE_MAX + 1,
      2n ** 64n - 1n,
      null,
      true,
    ]) {
      expect(() => decodeMetadata(doc(v)), String(v)).toThrow(
        /not_before is not a time in milliseconds since the epoch/,
      );
    }
    expect(decodeMetadata(doc(BigInt(T))).notBefore).toBe(T);
  });

  it('the writer refuses what it could not read back', () => {
    expect(() => encodeMetadata({ ...base, notBefore: -1 })).toThrow(RangeError);
    expect(() => encodeMetadata({ ...base, notBefore: 0.5 })).toThrow(RangeError);
  });

  it('prepareHeader takes a Date, checked before a number is taken', () => {
    expect(prepareHeader({ seq: 1n, notBefore: new Date(T) }).notBefore).toBe(T);
    expect(prepareHeader({ seq: 1n }).notBefore).toBeUndefined();
    expect(() => prepareHeader({ seq: 1n, notBefore: new Date(Number.NaN) })).toThrow(/notBefore must be a valid Date/);
    expect(() => prepareHeader({ seq: 1n, notBefore: new Date(-1) })).toThrow(/notBefore/);
  });

  it('notYet and its words', () => {
    expect(notYet({ ...base, notBefore: T }, T - 1)).toBe(true);
    expect(notYet({ ...base, notBefore: T }, T)).toBe(false);
    expect(notYet(base, 0)).toBe(false);
    expect(notBeforeText(T)).toBe('2026-12-01T08:00:00Z');
    expect(notBeforeText(T + 5)).toBe('2026-12-01T08:00:00.005Z');
  });
});

describe('parseNotBefore: TIME on the command line', () => {
  const now = Date.UTC(2026, 10, 28, 12, 0, 0);
  it('RFC 3339 with its offset', () => {
    expect(parseNotBefore('2026-12-01T08:00:00Z', now)).toBe(T);
    expect(parseNotBefore('2026-12-01t08:00:00z', now)).toBe(T);
    expect(parseNotBefore('2026-12-01 08:00:00Z', now)).toBe(T);
    expect(parseNotBefore('2026-12-01T09:30:00+01:30', now)).toBe(T);
    expect(parseNotBefore('2026-12-01T03:00:00-05:00', now)).toBe(T);
    expect(parseNotBefore('2026-12-01T08:00:00.25Z', now)).toBe(T + 250);
    expect(parseNotBefore('2026-12-01T08:00:00.0001Z', now)).toBe(T + 1); // never early
    expect(parseNotBefore('2026-12-01T08:00:00.123Z', now)).toBe(T + 123);
    expect(parseNotBefore('2016-12-31T23:59:60Z', now)).toBe(Date.UTC(2017, 0, 1));
    expect(parseNotBefore('2000-01-01T00:00:00Z', now)).toBe(Date.UTC(2000, 0, 1)); // past: runs at once
  });

  it('+DURATION from now', () => {
    expect(parseNotBefore('+90s', now)).toBe(now + 90_000);
    expect(parseNotBefore('+15m', now)).toBe(now + 900_000);
    expect(parseNotBefore('+2h', now)).toBe(now + 7_200_000);
    expect(parseNotBefore('+1d', now)).toBe(now + 86_400_000);
    expect(parseNotBefore('+1h30m', now)).toBe(now + 5_400_000);
    expect(parseNotBefore('+1d2h3m4s', now)).toBe(now + ((26 * 60 + 3) * 60 + 4) * 1000);
    expect(parseNotBefore('+0s', now)).toBe(now);
  });

  it('anything else: a RangeError saying what is expected', () => {
    for (const bad of [
      '',
      '+',
      '90s',
      '+90',
      '+1.5h',
      '+30m1h',
      '-5m',
      '+99999999999999999d',
      'tomorrow',
      '2026-12-01',
      '2026-12-01T08:00:00', // no offset
      '2026-12-01T08:00Z',
      '2026-02-30T08:00:00Z',
      '2026-13-01T08:00:00Z',
      '2026-12-01T24:00:00Z',
      '2026-12-01T08:60:00Z',
      '2026-12-01T08:00:61Z',
      '2026-12-01T08:00:00+24:00',
      '1969-12-31T23:59:59Z',
      '0075-01-01T00:00:00Z',
      ' 2026-12-01T08:00:00Z',
    ]) {
      expect(() => parseNotBefore(bad, now), bad).toThrow(/expected an RFC 3339 time with its offset .* or \+DURATION/);
    }
  });
});
