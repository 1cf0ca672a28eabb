import { describe, expect, it } from 'vitest';
import {
  bytesFromJson,
  bytesToJson,
  ctimeToJson,
  headerToJson,
  jobEntryToJson,
  jobInfoToJson,
  nextseqToJson,
  toJsonLine,
} from '../src/json.js';
import { type PacketHeader, U64_MAX } from '../src/lowlevel.js';

const b = (s: string) => Buffer.from(s, 'utf8');

describe('JSON conversion', () => {
  it('writes valid UTF-8 as text and anything else as base64', () => {
    expect(bytesToJson(b('héllo ✓'))).toBe('héllo ✓');
    expect(bytesToJson(new Uint8Array(0))).toBe('');
    expect(bytesToJson(b('a\nb\0c'))).toBe('a\nb\0c');
    expect(bytesToJson(Buffer.from([0xff, 0xfe, 0x41]))).toEqual({ base64: '//5B' });
    expect(bytesToJson(Buffer.from([0xc3]))).toEqual({ base64: 'ww==' }); // a cut two-byte sequence
    expect(bytesToJson(Buffer.from([0xed, 0xa0, 0x80]))).toEqual({ base64: '7aCA' }); // an encoded surrogate
    // A Uint8Array view into a larger buffer: only its own bytes count.
    const big = Buffer.from('xxabcxx');
    expect(bytesToJson(new Uint8Array(big.buffer, big.byteOffset + 2, 3))).toBe('abc');
    for (const v of [b('text'), Buffer.from([0x80, 0x00, 0xff])])
      expect(bytesFromJson(bytesToJson(v)).equals(v)).toBe(true);
  });

  it('writes 64-bit integers as strings, up to u64 max and negative seconds', () => {
    const h: PacketHeader = { seq: U64_MAX, ctime: { secs: -1n, nanos: 999_999_999 }, cmd: { kind: 'NOP' } };
    const j = headerToJson(h);
    expect(j.seq).toBe('18446744073709551615');
    expect(j.ctime).toMatchObject({ secs: '-1', nanos: 999_999_999, rfc3339_utc: '1969-12-31T23:59:59Z' });
    expect(j).toMatchObject({ type: 'NOP', params: [], env: [] });
    expect(JSON.parse(JSON.stringify(j)).seq).toBe('18446744073709551615');
    expect(nextseqToJson(U64_MAX)).toEqual({ nextseq: '18446744073709551615' });
    expect(ctimeToJson({ secs: 9_223_372_036_854_775_807n, nanos: 0 }).secs).toBe('9223372036854775807');
  });

  it('renders a command header, a job entry and job info', () => {
    const h: PacketHeader = {
      seq: 42n,
      ctime: { secs: 1893553445n, nanos: 5 },
      cmd: {
        kind: 'Command',
        params: [b('a'), Buffer.from([0xff])],
        env: [
          [b('X'), b('y')],
          [Buffer.from([0x80]), b('')],
        ],
      },
    };
    const j = headerToJson(h);
    expect(j).toEqual({
      seq: '42',
      ctime: { secs: '1893553445', nanos: 5, rfc3339_utc: '2030-01-02T03:04:05Z', rfc3339_local: expect.any(String) },
      type: 'Command',
      params: ['a', { base64: '/w==' }],
      env: [
        { name: 'X', value: 'y' },
        { name: { base64: 'gA==' }, value: '' },
      ],
    });
    const entry = jobEntryToJson({ filename: 'fspl-x.fspl', header: h });
    expect(Object.keys(entry)).toEqual(['seq', 'filename', 'ctime', 'type', 'params', 'env', 'sealed', 'signed']);
    const line = toJsonLine(entry);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');

    const info = jobInfoToJson(h, { queuedir: 'q', filename: 'fspl-x.fspl' });
    expect(info).toMatchObject({ seq: '42', filename: 'fspl-x.fspl', queuedir: 'q', fullpath: 'q/jobs/fspl-x.fspl' });
    const vars = info.variables as Array<{ name: unknown; value: unknown }>;
    expect(vars.map((v) => v.name)).toEqual([
      'FSPL_SEQ',
      'FSPL_CTIME_SECS',
      'FSPL_CTIME_NANOS',
      'FSPL_CTIME_RFC3339_UTC',
      'FSPL_CTIME_RFC3339_LOCAL',
      'FSPL_JOB_FILENAME',
      'FSPL_JOB_QUEUEDIR',
      'FSPL_JOB_FULLPATH',
      'FSPL_PARAM_1',
      'FSPL_PARAM_2',
      'FSPL_SET_X',
      { base64: Buffer.from([...b('FSPL_SET_'), 0x80]).toString('base64') },
    ]);
    expect(vars[10]!.value).toBe('y');
    expect(vars[9]!.value).toEqual({ base64: '/w==' });
    expect(jobInfoToJson(h)).not.toHaveProperty('filename');
  });
});
