/**
 * packet/claim.ts: the number a header too large to read claims, from its first bytes only.
 */
import { describe, expect, it } from 'vitest';
import { encodeHeader } from '../../src/lowlevel.js';
import { claimedSeq } from '../../src/packet/claim.js';

/** The metadata of an encoded packet: past its 30-byte prefix. */
const metadataOf = (seq: bigint) =>
  encodeHeader({ seq, ctime: { secs: 1n, nanos: 0 }, cmd: { kind: 'NOP' } }).subarray(30);

describe('claimedSeq', () => {
  it('reads seq as the reference writes it, at every width, above 2^53 too', () => {
    for (const seq of [0n, 1n, 127n, 128n, 255n, 256n, 65_536n, 2n ** 32n, 2n ** 53n + 1n, 2n ** 64n - 1n]) {
      expect(claimedSeq(metadataOf(seq)), String(seq)).toBe(seq);
    }
  });

  it('needs only the first bytes: the rest may be cut or missing', () => {
    expect(claimedSeq(metadataOf(999n).subarray(0, 8))).toBe(999n); // fixmap, "seq", uint16
  });

  it('reads the positional (array) form, and a str8 key', () => {
    expect(claimedSeq(Uint8Array.from([0x93, 0xcd, 0x03, 0xe7]))).toBe(999n);
    expect(claimedSeq(Uint8Array.from([0x83, 0xd9, 3, 0x73, 0x65, 0x71, 0x2a]))).toBe(42n);
  });

  it('claims nothing for what it can not read so: another first key, a negative number, a cut integer, nothing', () => {
    expect(claimedSeq(Uint8Array.from([0x83, 0xa5, 0x63, 0x74, 0x69, 0x6d, 0x65]))).toBeUndefined();
    expect(claimedSeq(Uint8Array.from([0x83, 0xa3, 0x73, 0x65, 0x71, 0xd0, 0xff]))).toBeUndefined();
    expect(claimedSeq(Uint8Array.from([0x83, 0xa3, 0x73, 0x65, 0x71, 0xcf, 0x00]))).toBeUndefined();
    expect(claimedSeq(Uint8Array.from([]))).toBeUndefined();
    expect(claimedSeq(Uint8Array.from([0xc0]))).toBeUndefined();
  });
});
