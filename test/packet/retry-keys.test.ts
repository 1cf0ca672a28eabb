/**
 * The retry keys in the header (src/packet/retry-keys.ts): `retries` and `failed`, after the
 * reference's keys, read back as written; a key of the wrong shape makes a bad packet.
 */
import { Encoder } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { decodeMetadata, encodeMetadata, type PacketHeader } from '../../src/lowlevel.js';

const base: PacketHeader = {
  seq: 3n,
  ctime: { secs: 1700000000n, nanos: 1 },
  cmd: { kind: 'Command', params: [], env: [] },
};
const failure = {
  queue: '/srv/q',
  seq: 41n,
  attempts: 4,
  outcome: 'timeout' as const,
  why: 'command timed out and was killed',
  at: '2030-01-01T00:00:00.000Z',
};

describe('retry keys', () => {
  it('round-trip: retries, failed, both, with a seal', () => {
    for (const h of [
      { ...base, retries: 0n },
      { ...base, retries: 5n },
      { ...base, failure },
      { ...base, failure: { ...failure, tail: 'last\nlines' } },
      { ...base, retries: 1n, failure, seal: { length: 3n, crc32: 7 } },
    ]) {
      expect(decodeMetadata(encodeMetadata(h))).toEqual(h);
    }
  });

  it('a header without them encodes as before (byte for byte)', () => {
    expect(encodeMetadata({ ...base, retries: undefined, failure: undefined })).toEqual(encodeMetadata(base));
  });

  it('a key of the wrong shape is a bad packet', () => {
    const enc = new Encoder({ useBigInt64: true });
    const doc = (extra: Record<string, unknown>) => enc.encode({ seq: 1, ctime: [0, 0], cmd_type: 'NOP', ...extra });
    expect(() => decodeMetadata(doc({ retries: -1 }))).toThrow(/retries is not an unsigned 32-bit integer/);
    expect(() => decodeMetadata(doc({ retries: 'x' }))).toThrow(/retries/);
    expect(() => decodeMetadata(doc({ failed: 3 }))).toThrow(/failed is not a map/);
    expect(() => decodeMetadata(doc({ failed: { ...failure, seq: 1, outcome: 'odd' } }))).toThrow(/failed.outcome/);
  });
});
