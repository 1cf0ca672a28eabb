import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BadPacketError,
  decodeHeader,
  decodeMetadata,
  encodeHeader,
  encodeMetadata,
  formatInfo,
  jobVariables,
  type PacketHeader,
  ShortReadError,
} from '../../src/lowlevel.js';
import { VECTORS } from '../helpers.js';

const good = fs
  .readdirSync(VECTORS)
  .filter((f) => f.endsWith('.info'))
  .map((f) => f.replace(/\.info$/, ''));

process.env.TZ = 'UTC'; // the .info files were made with TZ=UTC

describe('golden vectors', () => {
  it('are present', () => {
    expect(good.length).toBeGreaterThanOrEqual(11);
  });

  for (const name of good) {
    it(`${name}: decodes to the reference's info and payload, and re-encodes byte for byte`, () => {
      const packet = fs.readFileSync(path.join(VECTORS, `${name}.fspl`));
      const { header, length } = decodeHeader(packet);
      expect(formatInfo(jobVariables(header)).equals(fs.readFileSync(path.join(VECTORS, `${name}.info`)))).toBe(true);
      expect(packet.subarray(length).equals(fs.readFileSync(path.join(VECTORS, `${name}.payload`)))).toBe(true);
      expect(encodeHeader(header).equals(packet.subarray(0, length))).toBe(true);
    });
  }

  const damaged: Array<[string, typeof BadPacketError, string]> = [
    ['bad-tag', BadPacketError, "Input doesn't appear to be a filespooler file"],
    ['bad-version', BadPacketError, 'Input version 2 != 1'],
    ['bad-prefix-crc', BadPacketError, 'CRC-32 mismatch on file prefix'],
    ['bad-meta-crc', BadPacketError, 'CRC-32 mismatch on metadata'],
    // The reference says "failed to fill whole buffer" for all three (docs/compatibility.md).
    ['truncated-prefix', ShortReadError, 'Input ends within the packet header, after 20 bytes (cut short in transit?)'],
    ['truncated-meta', ShortReadError, 'Input ends within the packet header, after 40 bytes (cut short in transit?)'],
    ['empty', ShortReadError, 'Empty input: there is no packet (did the command that makes it fail?)'],
  ];
  for (const [name, cls, message] of damaged) {
    it(`${name}: refused with ${cls.name}`, () => {
      const packet = fs.readFileSync(path.join(VECTORS, `${name}.fspl`));
      let caught: unknown;
      try {
        decodeHeader(packet);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(cls);
      expect((caught as Error).message).toBe(message);
      expect((caught as BadPacketError).code).toBe(cls === ShortReadError ? 'ERR_SHORT_READ' : 'ERR_BAD_PACKET');
    });
  }
});

describe('encoding', () => {
  const base: PacketHeader = { seq: 1n, ctime: { secs: 1893553445n, nanos: 0 }, cmd: { kind: 'NOP' } };

  it('uses the smallest integer forms', () => {
    const cases: Array<[bigint, string]> = [
      [0n, '00'],
      [127n, '7f'],
      [128n, 'cc80'],
      [255n, 'ccff'],
      [256n, 'cd0100'],
      [65535n, 'cdffff'],
      [65536n, 'ce00010000'],
      [4294967295n, 'ceffffffff'],
      [4294967296n, 'cf0000000100000000'],
      [18446744073709551615n, 'cfffffffffffffffff'],
    ];
    for (const [seq, hex] of cases) {
      const meta = encodeMetadata({ ...base, seq });
      expect(meta.subarray(5, 5 + hex.length / 2).toString('hex')).toBe(hex);
      expect(decodeMetadata(meta).seq).toBe(seq);
    }
  });

  it('writes negative seconds in signed forms and reads them back (clocks before 1970)', () => {
    for (const secs of [-1n, -32n, -33n, -128n, -129n, -32768n, -32769n, -2147483648n, -2147483649n, -(1n << 63n)]) {
      const h = { ...base, ctime: { secs, nanos: 5 } };
      expect(decodeMetadata(encodeMetadata(h)).ctime).toEqual({ secs, nanos: 5 });
    }
  });

  it('writes byte strings as integer arrays, with array16 past 15 entries', () => {
    const params = Array.from({ length: 20 }, (_, i) => Buffer.from([i, 0x80 + i]));
    const h: PacketHeader = {
      ...base,
      cmd: { kind: 'Command', params, env: [[Buffer.from('A'), Buffer.from([0xff])]] },
    };
    const meta = encodeMetadata(h);
    expect(meta.includes(Buffer.from([0xdc, 0x00, 0x14]))).toBe(true);
    expect(meta.includes(Buffer.from([0x92, 0x00, 0xcc, 0x80]))).toBe(true);
    const back = decodeMetadata(meta);
    expect(back).toEqual(h);
  });

  it('rejects out-of-range values', () => {
    expect(() => encodeMetadata({ ...base, seq: 1n << 64n })).toThrow(RangeError);
    expect(() => encodeMetadata({ ...base, seq: -1n })).toThrow(RangeError);
  });
});

describe('liberal reading', () => {
  // Hand-built MessagePack documents in forms the reference writer never produces.
  const str = (s: string) => Buffer.concat([Buffer.from([0xa0 | s.length]), Buffer.from(s)]);

  it('accepts keys in any order and wide integer forms', () => {
    const doc = Buffer.concat([
      Buffer.from([0x83]),
      str('cmd_type'),
      str('NOP'),
      str('ctime'),
      Buffer.from([0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 10, 0xce, 0, 0, 0, 7]),
      str('seq'),
      Buffer.from([0xcf, 0, 0, 0, 0, 0, 0, 0, 3]),
    ]);
    expect(decodeMetadata(doc)).toEqual({ seq: 3n, ctime: { secs: 10n, nanos: 7 }, cmd: { kind: 'NOP' } });
  });

  it('accepts the positional (array) form of the structs and bin/str byte strings', () => {
    const doc = Buffer.concat([
      Buffer.from([0x93, 0x05, 0x92, 0x01, 0x02, 0x81]),
      str('Command'),
      Buffer.from([0x92, 0x92, 0xc4, 0x02, 0x61, 0x62]),
      str('cd'),
      Buffer.from([0x91, 0x92]),
      str('K'),
      str('V'),
    ]);
    const h = decodeMetadata(doc);
    expect(h.seq).toBe(5n);
    expect(h.cmd).toEqual({
      kind: 'Command',
      params: [Buffer.from('ab'), Buffer.from('cd')],
      env: [[Buffer.from('K'), Buffer.from('V')]],
    });
  });

  it('turns wrong shapes into BadPacketError', () => {
    const bad = [
      Buffer.from([0xc1]),
      Buffer.from([0x01]),
      Buffer.concat([Buffer.from([0x81]), str('seq'), Buffer.from([0x01])]),
      Buffer.concat([
        Buffer.from([0x83]),
        str('seq'),
        Buffer.from([0xff]),
        str('ctime'),
        Buffer.from([0x92, 0, 0]),
        str('cmd_type'),
        str('NOP'),
      ]),
      Buffer.concat([
        Buffer.from([0x83]),
        str('seq'),
        Buffer.from([1]),
        str('ctime'),
        Buffer.from([0x92, 0, 0]),
        str('cmd_type'),
        str('Boom'),
      ]),
      Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]),
    ];
    for (const b of bad) expect(() => decodeMetadata(b)).toThrow(BadPacketError);
  });
});
