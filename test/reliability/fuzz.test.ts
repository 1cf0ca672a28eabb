/**
 * Hostile packets: property-based fuzzing (fast-check) of the header decoders in src/packet
 * (decodeHeader, and through it decodePrefix and decodeMetadata; readHeaderSync on a descriptor;
 * readHeaderFromStream on a stream), then a sample of the same inputs through the CLI.
 *
 * Promise checked: every input ends in a valid header or a typed error (BadPacketError:
 * ERR_BAD_PACKET or ERR_SHORT_READ) - no other exception, no crash, no hang; nothing allocates
 * a declared length before the bytes exist; the CLI prints one `Error: ` line and exits 1, and a
 * queue scan skips such files without a word.
 */

import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { encode as msgpackEncode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { afterAll, afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { FsplError, PayloadSealError } from '../../src/base/errors.js';
import { crc32, decodeHeader, encodeHeader, PREFIX_LENGTH } from '../../src/packet/codec.js';
import { readHeaderFromStream, readHeaderSync } from '../../src/packet/read.js';
import { sealOf } from '../../src/packet/seal/seal.js';
import { copyPacketSync } from '../../src/packet/seal/sealed-copy.js';
import { MAX_METADATA_DEPTH } from '../../src/packet/shape.js';
import { readPacket } from '../../src/packet/stream.js';
import { I64_MAX, I64_MIN, type PacketHeader, U64_MAX } from '../../src/packet/types.js';
import { Queue } from '../../src/queue/queue.js';
import { fspl, lines, packet, readLog, record, recorder, rngFor, tempDir } from './common.js';

// ------------------------------------------------------------------------------------------------
// Outcomes

/** ERR_HEADER_TOO_LARGE: a declared metadata length over the readers' limit (refused unread). */
type Outcome = 'ok' | 'ERR_BAD_PACKET' | 'ERR_SHORT_READ' | 'ERR_HEADER_TOO_LARGE';

/** Run a decoder: 'ok', or the code of a typed packet error. Anything else is rethrown (a bug). */
function outcome(fn: () => PacketHeader): Outcome {
  let h: PacketHeader;
  try {
    h = fn();
  } catch (err) {
    if (
      err instanceof FsplError &&
      (err.code === 'ERR_BAD_PACKET' || err.code === 'ERR_SHORT_READ' || err.code === 'ERR_HEADER_TOO_LARGE')
    )
      return err.code;
    throw err;
  }
  // A header that decodes must be a well-formed one.
  expect(typeof h.seq).toBe('bigint');
  expect(h.seq >= 0n && h.seq <= U64_MAX).toBe(true);
  expect(h.ctime.secs >= I64_MIN && h.ctime.secs <= I64_MAX).toBe(true);
  expect(Number.isInteger(h.ctime.nanos) && h.ctime.nanos >= 0 && h.ctime.nanos <= 0xffffffff).toBe(true);
  expect(['NOP', 'Fail', 'Command']).toContain(h.cmd.kind);
  if (h.cmd.kind === 'Command') {
    for (const p of h.cmd.params) expect(p).toBeInstanceOf(Uint8Array);
    for (const [k, v] of h.cmd.env) expect([k, v].every((b) => b instanceof Uint8Array)).toBe(true);
  }
  if (h.seal) {
    expect(h.seal.length >= 0n && h.seal.length <= U64_MAX).toBe(true);
    expect(Number.isInteger(h.seal.crc32) && h.seal.crc32 >= 0 && h.seal.crc32 <= 0xffffffff).toBe(true);
  }
  return 'ok';
}

async function outcomeAsync(fn: () => Promise<PacketHeader>): Promise<Outcome> {
  try {
    await fn();
    return 'ok';
  } catch (err) {
    if (
      err instanceof FsplError &&
      (err.code === 'ERR_BAD_PACKET' || err.code === 'ERR_SHORT_READ' || err.code === 'ERR_HEADER_TOO_LARGE')
    )
      return err.code;
    throw err;
  }
}

const tally: Record<string, Record<string, number>> = {};
function count(category: string, o: Outcome): void {
  const t = (tally[category] ??= { cases: 0, ok: 0, ERR_BAD_PACKET: 0, ERR_SHORT_READ: 0 });
  t.cases!++;
  t[o] = (t[o] ?? 0) + 1;
}

// ------------------------------------------------------------------------------------------------
// Building packets

/** A prefix for `meta` with correct CRCs (the declared length may lie). */
function prefixFor(meta: Uint8Array, declared: bigint = BigInt(meta.length)): Buffer {
  const p = Buffer.alloc(PREFIX_LENGTH);
  p.write('*FILESPOOLER', 0, 'ascii');
  p.writeUInt16BE(1, 12);
  p.writeBigUInt64BE(declared, 14);
  p.writeUInt32BE(crc32(meta), 22);
  p.writeUInt32BE(crc32(p.subarray(0, 26)), 26);
  return p;
}

/** Metadata wrapped in a valid prefix: the CRCs pass, so the bytes reach the MessagePack decoder. */
const wrap = (meta: Uint8Array, tail: Uint8Array = Buffer.alloc(0)) => Buffer.concat([prefixFor(meta), meta, tail]);

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((u) => Buffer.from(u));
/** Lengths spread over the whole range (fast-check favours short arrays by default). */
const anyBytes = (max: number) => fc.uint8Array({ maxLength: max, size: 'max' }).map((u) => Buffer.from(u));

/** A seal (payload_len, payload_crc32): any value in range, huge lengths included. */
const sealArb = fc.record({
  length: fc.oneof(fc.bigInt({ min: 0n, max: U64_MAX }), fc.bigInt({ min: 0n, max: 200n }), fc.constant(U64_MAX)),
  crc32: fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constant(0)),
});

const unsealedHeaderArb: fc.Arbitrary<PacketHeader> = fc.record({
  seq: fc.oneof(fc.bigInt({ min: 0n, max: U64_MAX }), fc.bigInt({ min: 0n, max: 1000n })),
  ctime: fc.record({
    secs: fc.bigInt({ min: I64_MIN, max: I64_MAX }),
    nanos: fc.integer({ min: 0, max: 999_999_999 }),
  }),
  cmd: fc.oneof(
    fc.constant({ kind: 'NOP' as const }),
    fc.constant({ kind: 'Fail' as const }),
    fc.record({
      kind: fc.constant('Command' as const),
      params: fc.array(bytes(40), { maxLength: 6 }),
      env: fc.array(fc.tuple(bytes(12), bytes(40)), { maxLength: 4 }),
    }),
  ),
});

/** Headers, sealed (with seals that lie about the payload, mostly) or not. */
const headerArb: fc.Arbitrary<PacketHeader> = fc
  .tuple(unsealedHeaderArb, fc.option(sealArb))
  .map(([h, seal]) => (seal === null ? h : { ...h, seal }));

const validPacketArb = fc
  .tuple(headerArb, bytes(64))
  .map(([h, payload]) => ({ h, packet: Buffer.concat([encodeHeader(h), payload]) }));

/** MessagePack values, biased towards the names and shapes a header uses. */
const keyArb = fc.constantFrom(
  'seq',
  'ctime',
  'cmd_type',
  'Command',
  'params',
  'env',
  'NOP',
  'Fail',
  'secs',
  'nanos',
  'secs_since_epoch',
  '0',
  '1',
  'x',
  '__proto__',
  'payload_len',
  'payload_crc32',
);
const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.bigInt({ min: -(1n << 63n), max: U64_MAX }),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.string({ maxLength: 8 }),
    keyArb,
    fc.uint8Array({ maxLength: 8 }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(keyArb, tie('value'), { maxKeys: 4 }),
  ),
}));

/** Documents shaped like headers, with any part replaced by something else. */
const nearHeaderArb = fc
  .record({
    seq: fc.oneof(fc.bigInt({ min: 0n, max: U64_MAX }), valueArb),
    ctime: fc.oneof(
      fc.tuple(fc.bigInt({ min: I64_MIN, max: I64_MAX }), fc.integer({ min: 0, max: 0xffffffff })),
      fc.record({ secs: fc.integer(), nanos: fc.nat() }),
      valueArb,
    ),
    cmd_type: fc.oneof(
      fc.constantFrom('NOP', 'Fail', 'Other'),
      fc.record({
        Command: fc.record({
          params: fc.array(fc.oneof(fc.array(fc.nat(300)), valueArb), { maxLength: 3 }),
          env: fc.array(fc.oneof(fc.tuple(fc.array(fc.nat(255)), fc.array(fc.nat(255))), valueArb), { maxLength: 3 }),
        }),
      }),
      fc.record({ Command: fc.tuple(fc.array(fc.array(fc.nat(255))), fc.array(valueArb, { maxLength: 2 })) }),
      valueArb,
    ),
    extra: fc.option(valueArb),
    // The seal's keys, with values in range or anything at all, one or both of them.
    payload_len: fc.option(fc.oneof(fc.bigInt({ min: -(1n << 63n), max: U64_MAX }), valueArb)),
    payload_crc32: fc.option(fc.oneof(fc.bigInt({ min: -(1n << 33n), max: 1n << 34n }), valueArb)),
    positional: fc.boolean(),
  })
  .map(({ seq, ctime, cmd_type, extra, payload_len, payload_crc32, positional }) => {
    const seal = {
      ...(payload_len === null ? {} : { payload_len }),
      ...(payload_crc32 === null ? {} : { payload_crc32 }),
    };
    const doc = positional
      ? [seq, ctime, cmd_type]
      : { seq, ctime, cmd_type, ...(extra === null ? {} : { x: extra }), ...seal };
    return Buffer.from(msgpackEncode(doc, { useBigInt64: true }));
  });

/** Raw MessagePack-ish bytes: random, or a random start followed by a huge declared length. */
const HUGE_TYPES = [0xc5, 0xc6, 0xc8, 0xc9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf];
const garbageMetaArb = fc.oneof(
  anyBytes(200),
  fc.tuple(bytes(20), fc.constantFrom(...HUGE_TYPES), fc.nat(), bytes(30)).map(([head, t, n, tail]) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(n >>> 0 || 0xffffffff);
    const wide = t === 0xc5 || t === 0xc8 || t === 0xda || t === 0xdc || t === 0xde ? len.subarray(2) : len;
    return Buffer.concat([Buffer.from([0x83, 0xa3, 0x73, 0x65, 0x71]), head, Buffer.from([t]), wide, tail]);
  }),
);

/** Nesting `depth` levels deep, in one of several container forms, around a scalar. */
function nested(depth: number, form: number): Buffer {
  const unit = [
    Buffer.from([0x91]),
    Buffer.from([0x81, 0xa1, 0x78]),
    Buffer.from([0xdc, 0x00, 0x01]),
    Buffer.from([0xdf, 0, 0, 0, 1, 0xa1, 0x79]),
  ][form]!;
  return Buffer.concat([Buffer.alloc(unit.length * depth, unit), Buffer.from([0x07])]);
}

/** A valid header with an extra key holding a deeply nested value. */
function headerWithDeepExtra(depth: number, form: number): Buffer {
  const ok = msgpackEncode({ seq: 1, ctime: [0, 0], cmd_type: 'NOP' });
  const meta = Buffer.concat([
    Buffer.from([0x84]),
    Buffer.from(ok.subarray(1)),
    Buffer.from([0xa1, 0x78]),
    nested(depth, form),
  ]);
  return wrap(meta);
}

// ------------------------------------------------------------------------------------------------
// Watching allocations: the largest Buffer asked for while decoding a hostile input.

let largestAlloc = 0;
beforeEach(() => {
  largestAlloc = 0;
  for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow'] as const) {
    const real = Buffer[name].bind(Buffer) as (n: number, ...rest: unknown[]) => Buffer;
    vi.spyOn(Buffer, name).mockImplementation(((n: number, ...rest: unknown[]) => {
      if (n > largestAlloc) largestAlloc = n;
      return real(n, ...rest);
    }) as never);
  }
});
afterEach(() => {
  vi.restoreAllMocks();
});

const MiB = 1024 * 1024;
/** readExactSync reads in 1 MiB pieces: the most it may ask for beyond the bytes present. */
const READ_CHUNK = MiB;

// ------------------------------------------------------------------------------------------------

const rng = rngFor('fuzz');
const SEED = rng.seed;
let seedIndex = 0;
const params = (numRuns: number) => ({ seed: SEED + seedIndex++, numRuns, endOnFailure: true });

describe('header decoder under hostile input (library)', () => {
  const dir = path.join(process.env.TMPDIR || '/tmp', `fspl-rel-fuzz-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const scratch = path.join(dir, 'case');
  const scratchSeal = path.join(dir, 'sealed');
  /** decodeHeader on the buffer and readHeaderSync on a file with the same bytes agree. */
  const both = (category: string, buf: Buffer): Outcome => {
    const a = outcome(() => decodeHeader(buf).header);
    fs.writeFileSync(scratch, buf);
    const fd = fs.openSync(scratch, 'r');
    let b: Outcome;
    try {
      b = outcome(() => readHeaderSync(fd));
    } finally {
      fs.closeSync(fd);
    }
    expect(b, 'readHeaderSync agrees with decodeHeader').toBe(a);
    count(category, a);
    return a;
  };

  test('valid packets decode to exactly what was encoded', () => {
    fc.assert(
      fc.property(validPacketArb, ({ h, packet }) => {
        const { header, length } = decodeHeader(packet);
        expect(header).toEqual({
          ...h,
          cmd:
            h.cmd.kind === 'Command'
              ? {
                  ...h.cmd,
                  params: h.cmd.params.map((p) => Buffer.from(p)),
                  env: h.cmd.env.map(([k, v]) => [Buffer.from(k), Buffer.from(v)]),
                }
              : h.cmd,
        });
        expect(length).toBe(encodeHeader(h).length);
        count('valid packets', 'ok');
      }),
      params(3000),
    );
  });

  test('random bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          anyBytes(100),
          anyBytes(100).map((b) => Buffer.concat([Buffer.from('*FILESPOOLER'), b])),
        ),
        (b) => {
          both('random bytes', b);
        },
      ),
      params(5000),
    );
  });

  test('truncations of valid packets: always a short read', () => {
    fc.assert(
      fc.property(validPacketArb, fc.nat(), ({ packet }, cut) => {
        const headerLength = decodeHeader(packet).length;
        const b = packet.subarray(0, cut % headerLength);
        expect(both('truncations', b)).toBe('ERR_SHORT_READ');
      }),
      params(4000),
    );
  });

  test('1 to 3 flipped bits anywhere in a header: always refused (CRC-32 catches them all)', () => {
    fc.assert(
      fc.property(validPacketArb, fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), ({ packet }, flips) => {
        const headerLength = decodeHeader(packet).length;
        const b = Buffer.from(packet);
        const bits = new Set(flips.map((f) => f % (headerLength * 8)));
        for (const bit of bits) b[bit >> 3]! ^= 1 << (bit & 7);
        expect(both('bit flips', b)).not.toBe('ok');
      }),
      params(5000),
    );
  });

  test('flipped bits in the metadata with the CRCs made to match: decoded or refused, never a crash', () => {
    fc.assert(
      fc.property(validPacketArb, fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), ({ packet }, flips) => {
        const { length } = decodeHeader(packet);
        const meta = Buffer.from(packet.subarray(PREFIX_LENGTH, length));
        for (const f of flips) meta[(f >> 3) % meta.length]! ^= 1 << (f & 7);
        both('bit flips, CRCs fixed', wrap(meta, packet.subarray(length)));
      }),
      params(5000),
    );
  });

  test('garbage MessagePack behind valid CRCs, huge declared container and string lengths included', () => {
    fc.assert(
      fc.property(garbageMetaArb, (meta) => {
        both('garbage MessagePack, valid CRCs', wrap(meta));
      }),
      params(5000),
    );
  });

  test('documents shaped like headers with parts replaced (map and positional forms)', () => {
    fc.assert(
      fc.property(nearHeaderArb, (meta) => {
        both('near-headers, valid CRCs', wrap(meta));
      }),
      params(5000),
    );
  });

  test('huge declared metadata lengths: refused without allocating them', () => {
    const lengthArb = fc.oneof(
      fc.bigInt({ min: 0n, max: U64_MAX }),
      fc.constantFrom(
        2n ** 32n,
        2n ** 32n - 1n,
        4n * 2n ** 30n,
        150n * BigInt(MiB),
        200n * BigInt(MiB),
        200n * BigInt(MiB) + 1n,
        U64_MAX,
      ),
      fc.bigInt({ min: 0n, max: 4096n }),
    );
    let largest = 0;
    fc.assert(
      fc.property(lengthArb, bytes(100), (declared, rest) => {
        const b = Buffer.concat([prefixFor(rest, declared), rest]);
        largestAlloc = 0;
        const o = both('huge declared lengths', b);
        if (declared > BigInt(rest.length)) expect(o).not.toBe('ok');
        expect(largestAlloc, `declared ${declared}, ${b.length} bytes present`).toBeLessThanOrEqual(
          Math.max(READ_CHUNK, b.length),
        );
        largest = Math.max(largest, largestAlloc);
      }),
      params(2000),
    );
    tally['huge declared lengths']!.largestBufferAllocated = largest;
  });

  test('deep nesting: refused past the depth limit, decoded below it', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 1, max: 1100 }), fc.integer({ min: 1, max: 20000 })),
        fc.integer({ min: 0, max: 3 }),
        (depth, form) => {
          const o = both('deep nesting', headerWithDeepExtra(depth, form));
          // The header map is one level; the extra value adds `depth` more.
          expect(o, `depth ${depth} form ${form}`).toBe(depth + 1 <= MAX_METADATA_DEPTH ? 'ok' : 'ERR_BAD_PACKET');
        },
      ),
      params(600),
    );
  });

  test('nested declarations that would need gigabytes are refused from the bytes present', () => {
    // Before the fix in src/packet/shape.ts, the 90 KB case crashed the process (out of memory)
    // and the 30 KB one took 2.4 GB.
    const heapBefore = process.memoryUsage().heapUsed;
    for (const [count, declared, op] of [
      [10_000, 65535, 0xdc],
      [30_000, 65535, 0xdc],
      [100_000, 0xffffffff, 0xdd],
      [100_000, 0xffff, 0xde],
    ] as const) {
      const unit = op === 0xdd ? Buffer.alloc(5) : Buffer.alloc(3);
      unit[0] = op;
      if (op === 0xdd) unit.writeUInt32BE(declared, 1);
      else unit.writeUInt16BE(declared, 1);
      const meta = Buffer.alloc(unit.length * count, unit);
      expect(both('nested bombs', wrap(meta))).toBe('ERR_BAD_PACKET');
    }
    const grew = process.memoryUsage().heapUsed - heapBefore;
    tally['nested bombs']!.heapGrowthMiB = Math.round(grew / MiB);
    expect(grew).toBeLessThan(256 * MiB);
  });

  test('readHeaderFromStream agrees with decodeHeader, whatever the chunking', async () => {
    const arb = fc.tuple(
      fc.oneof(
        validPacketArb.map((v) => v.packet),
        garbageMetaArb.map((m) => wrap(m)),
        bytes(80),
        nearHeaderArb.map((m) => wrap(m)),
      ),
      fc.integer({ min: 1, max: 64 }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async ([b, size]) => {
        const expected = outcome(() => decodeHeader(b).header);
        const chunks: Buffer[] = [];
        for (let i = 0; i < b.length; i += size) chunks.push(b.subarray(i, i + size));
        const got = await outcomeAsync(() => readHeaderFromStream(Readable.from(chunks, { objectMode: false })));
        expect(got).toBe(expected);
        count('streams', got);
      }),
      params(1500),
    );
  });

  test(
    'a stream declaring 150 MiB of metadata and then ' + 'ending: a short read, memory bounded by the bytes sent',
    async () => {
      const rest = Buffer.alloc(100, 0x90);
      const b = Buffer.concat([prefixFor(rest, 150n * BigInt(MiB)), rest]);
      const before = process.memoryUsage().arrayBuffers;
      largestAlloc = 0;
      expect(await outcomeAsync(() => readHeaderFromStream(Readable.from([b], { objectMode: false })))).toBe(
        'ERR_SHORT_READ',
      );
      count('streams', 'ERR_SHORT_READ');
      expect(largestAlloc).toBeLessThanOrEqual(READ_CHUNK);
      expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * MiB);
    },
  );

  test(
    'sealed packets whose seal lies (any length up to 2^64-1, any ' +
      'CRC): payload readers end in a typed result, allocating nothing',
    async () => {
      const devnull = fs.openSync('/dev/null', 'w');
      const before = process.memoryUsage().arrayBuffers;
      try {
        await fc.assert(
          fc.asyncProperty(unsealedHeaderArb, sealArb, fc.boolean(), bytes(300), async (h, lie, honest, payload) => {
            const seal = honest ? sealOf(payload) : lie;
            const packet = Buffer.concat([encodeHeader({ ...h, seal }), payload]);
            const expected =
              seal.length === BigInt(payload.length) && seal.crc32 === sealOf(payload).crc32 ? 'ok' : 'bad';
            // The library's payload stream.
            let got: string;
            try {
              const read = await readPacket(packet);
              for await (const _ of read.payload) void _;
              got = 'ok';
            } catch (err) {
              if (!(err instanceof PayloadSealError)) throw err;
              got = 'bad';
            }
            expect(got).toBe(expected);
            // queue-write's copy loop, from a file.
            fs.writeFileSync(scratchSeal, packet);
            const fd = fs.openSync(scratchSeal, 'r');
            try {
              copyPacketSync(fd, devnull);
              got = 'ok';
            } catch (err) {
              if (!(err instanceof PayloadSealError)) throw err;
              got = 'bad';
            } finally {
              fs.closeSync(fd);
            }
            expect(got).toBe(expected);
            count('sealed payloads', expected === 'ok' ? 'ok' : 'ERR_BAD_PACKET');
          }),
          params(2000),
        );
      } finally {
        fs.closeSync(devnull);
      }
      expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * MiB);
    },
  );

  test('records the figures', () => {
    const cases = Object.values(tally).reduce((n, t) => n + (t.cases ?? 0), 0);
    // How much memory metadata that really exists can take once decoded (measured, not asserted
    // beyond a typed result): 1 MiB of empty arrays.
    const meta = Buffer.alloc(MiB, 0x90);
    meta[0] = 0xdd;
    meta.writeUInt32BE(MiB - 5, 1);
    const h0 = process.memoryUsage().heapUsed;
    const o = outcome(() => decodeHeader(wrap(meta)).header);
    const h1 = process.memoryUsage().heapUsed;
    record('fuzz', SEED, {
      cases,
      byCategory: tally,
      oneMiBOfEmptyArrays: { outcome: o, heapGrowthMiB: Math.round((h1 - h0) / MiB) },
    });
    expect(cases).toBeGreaterThan(30_000);
  });
});

// ------------------------------------------------------------------------------------------------
// The same inputs through the CLI

const hostileArb = fc.oneof(
  anyBytes(100),
  validPacketArb.chain(({ packet }) =>
    fc.nat(packet.length).map((n) => packet.subarray(0, Math.min(n, decodeHeader(packet).length - 1))),
  ),
  garbageMetaArb.map((m) => wrap(m)),
  nearHeaderArb.map((m) => wrap(m)),
  fc.bigInt({ min: 200n * BigInt(MiB), max: U64_MAX }).map((n) => prefixFor(Buffer.alloc(0), n)),
  fc.integer({ min: 1025, max: 5000 }).map((d) => headerWithDeepExtra(d, d % 4)),
);

describe('hostile packets through the CLI', () => {
  const CLI_CASES = 60;
  const samples = fc.sample(hostileArb, { seed: SEED, numRuns: CLI_CASES });
  // The bombs too: each one used to take the whole CLI down.
  samples.push(wrap(Buffer.alloc(3 * 30_000, Buffer.from([0xdc, 0xff, 0xff]))));
  samples.push(wrap(Buffer.alloc(5 * 100_000, Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff]))));

  test(`stdin-info on ${CLI_CASES + 2} hostile packets: one Error line and exit 1 for each refusal`, {
    timeout: 120_000,
  }, async () => {
    const expected = samples.map((b) => outcome(() => decodeHeader(b).header));
    const results: Array<{ code: number | null; stderr: string; stdout: Buffer }> = [];
    let next = 0;
    const lane = async () => {
      while (next < samples.length) {
        const i = next++;
        results[i] = await fspl(['stdin-info'], { stdin: samples[i]! });
      }
    };
    await Promise.all([lane(), lane()]);
    let refused = 0;
    let accepted = 0;
    for (let i = 0; i < samples.length; i++) {
      const r = results[i]!;
      const what = `case ${i} (${samples[i]!.subarray(0, 48).toString('hex')}...): ${r.stderr}`;
      if (expected[i] === 'ok') {
        expect(r.code, what).toBe(0);
        accepted++;
      } else {
        expect(r.code, what).toBe(1);
        expect(lines(r.stderr), what).toEqual([expect.stringMatching(/^Error: [^\n]+$/)]);
        expect(r.stderr, what).not.toMatch(/\n\s+at |FATAL|heap/);
        expect(r.stdout.length, what).toBe(0);
        refused++;
      }
    }
    record('fuzz-cli-stdin-info', SEED, { cases: samples.length, refusedWithOneErrorLine: refused, accepted });
  });

  test('a queue of 3,000 hostile files and 20 good jobs: every ' +
    'scan (native addon or not) lists and runs only the good ones', {
    timeout: 120_000,
  }, async () => {
    const QUEUE_CASES = 3000;
    const dir = tempDir();
    const qdir = path.join(dir, 'q');
    const q = Queue.init(qdir);
    const log = path.join(dir, 'log');
    // Hostile inputs that happen to be valid headers are left out, so that the listing is known.
    const hostile = [...samples, ...fc.sample(hostileArb, { seed: SEED + 1, numRuns: QUEUE_CASES })].filter(
      (b) => outcome(() => decodeHeader(b).header) !== 'ok',
    );
    hostile.forEach((b, i) => fs.writeFileSync(q.jobPath(`fspl-hostile-${i}.fspl`), b));
    for (let s = 1; s <= 20; s++) q.writeBuffer(packet(s));
    const good = Array.from({ length: 20 }, (_, i) => String(i + 1));
    const before = fs.readdirSync(q.jobsDir).length;
    // Said once per file: a header that declares more than the limit (--max-header-size, 8 MiB: so
    // at least those over the readers' own 200 MiB) is not read; every other hostile file is
    // skipped without a word, as the reference does.
    const tooLarge = hostile.filter((b) => outcome(() => decodeHeader(b).header) === 'ERR_HEADER_TOO_LARGE').length;
    const unsaid = (stderr: string) =>
      lines(stderr).filter(
        (l) => !/WARN fspl::queue: Skipping "fspl-hostile-\d+\.fspl": .*\bover the limit of \d+/.test(l),
      );
    const said = (stderr: string) => lines(stderr).length - unsaid(stderr).length;
    const listings: Record<string, string[]> = {};
    for (const [name, env] of [
      ['default', {}],
      ['FSPL_NO_NATIVE=1', { FSPL_NO_NATIVE: '1' }],
    ] as const) {
      const listing = await fspl(['queue-ls', '-q', qdir], { env, timeoutMs: 60_000 });
      expect(listing.code, `${name}: ${listing.stderr}`).toBe(0);
      expect(unsaid(listing.stderr), name).toEqual([]);
      expect(said(listing.stderr), name).toBeGreaterThanOrEqual(tooLarge);
      listings[name] = lines(listing.stdout.toString())
        .slice(1)
        .map((l) => l.split(/\s+/)[0]!);
      expect(listings[name], name).toEqual(good);
    }
    const run = await fspl(['queue-process', '-q', qdir, recorder(dir, log)], { timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(unsaid(run.stderr)).toEqual([]);
    expect(said(run.stderr)).toBeGreaterThanOrEqual(tooLarge);
    expect(readLog(log)).toEqual(good.map(Number));
    expect(fs.readdirSync(q.jobsDir).length).toBe(before - 20);
    record('fuzz-cli-queue', SEED, {
      hostileFilesInQueue: hostile.length,
      goodJobs: 20,
      listedByQueueLs: listings.default!.length,
      listedWithoutNativeAddon: listings['FSPL_NO_NATIVE=1']!.length,
      ran: readLog(log).length,
      hostileFilesLeftUntouched: fs.readdirSync(q.jobsDir).length,
    });
  });
});
