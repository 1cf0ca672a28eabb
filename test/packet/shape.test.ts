import { Decoder, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadPacketError, crc32, decodeHeader } from '../../src/lowlevel.js';
import { checkMsgpackShape, MAX_METADATA_DEPTH } from '../../src/packet/shape.js';

function wrap(meta: Buffer): Buffer {
  const p = Buffer.alloc(30);
  p.write('*FILESPOOLER', 0, 'ascii');
  p.writeUInt16BE(1, 12);
  p.writeBigUInt64BE(BigInt(meta.length), 14);
  p.writeUInt32BE(crc32(meta), 22);
  p.writeUInt32BE(crc32(p.subarray(0, 26)), 26);
  return Buffer.concat([p, meta]);
}

const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.string(),
    fc.uint8Array(),
    fc.array(tie('v')),
    fc.dictionary(fc.string(), tie('v')),
  ),
})).v;

describe('checkMsgpackShape', () => {
  it('refuses nested declarations that the bytes cannot hold, before anything is allocated', () => {
    // 30,000 nested array16 headers each declaring 65,535 elements: 90 KB that made the
    // MessagePack decoder allocate until the process died.
    const bomb = Buffer.alloc(3 * 30_000, Buffer.from([0xdc, 0xff, 0xff]));
    expect(() => decodeHeader(wrap(bomb))).toThrow(BadPacketError);
    expect(() => decodeHeader(wrap(bomb))).toThrow(/an array declares 65535 elements, more than the bytes left/);
  });

  it('accepts every complete MessagePack value and refuses every strict prefix of one', () => {
    fc.assert(
      fc.property(value, (v) => {
        const b = Buffer.from(encode(v, { useBigInt64: true }));
        checkMsgpackShape(b);
        // MessagePack is prefix-free: a cut value is never complete.
        for (const cut of new Set([0, 1, b.length >> 1, b.length - 1])) {
          if (cut < b.length) expect(() => checkMsgpackShape(b.subarray(0, cut))).toThrow(BadPacketError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never refuses what the decoder reads (up to the depth limit)', () => {
    const decoder = new Decoder({ useBigInt64: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64, size: 'max' }), (u) => {
        const b = Buffer.from(u);
        let decoded = true;
        try {
          decoder.decode(b);
        } catch {
          decoded = false;
        }
        if (decoded) checkMsgpackShape(b);
      }),
      { numRuns: 20_000 },
    );
  });

  it(`limits nesting to ${MAX_METADATA_DEPTH} levels`, () => {
    const deep = (n: number) => Buffer.concat([Buffer.alloc(n, 0x91), Buffer.from([0x00])]);
    expect(() => checkMsgpackShape(deep(MAX_METADATA_DEPTH))).not.toThrow();
    expect(() => checkMsgpackShape(deep(MAX_METADATA_DEPTH + 1))).toThrow(/nested more than/);
  });
});
