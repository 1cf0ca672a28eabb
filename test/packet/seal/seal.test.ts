import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Decoder } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { BadPacketError, PayloadSealError } from '../../../src/base/errors.js';
import { Queue } from '../../../src/index.js';
import { decodeHeader, encodeHeader, encodeMetadata, PREFIX_LENGTH } from '../../../src/packet/codec.js';
import { MsgpackWriter } from '../../../src/packet/msgpack.js';
import { preparePacket } from '../../../src/packet/prepare.js';
import { SEAL_CRC_KEY, SEAL_LENGTH_KEY, SealVerifier, sealOf } from '../../../src/packet/seal/seal.js';
import { SealTransform } from '../../../src/packet/seal/seal-transform.js';
import { readPacket } from '../../../src/packet/stream.js';
import type { PacketHeader } from '../../../src/packet/types.js';
import { tempDir } from '../../helpers.js';

const base: PacketHeader = {
  seq: 7n,
  ctime: { secs: 1700000000n, nanos: 5 },
  cmd: { kind: 'Command', params: [Buffer.from('a')], env: [] },
};

async function bytesOf(s: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Read the payload; resolves to the bytes or rejects with the stream's error. */
async function payloadOf(packet: Uint8Array): Promise<Buffer> {
  return bytesOf((await readPacket(packet)).payload);
}

describe('the seal in the header', () => {
  it('is two extra keys after the reference three; without it the metadata is unchanged', () => {
    const plain = encodeMetadata(base);
    expect(plain[0]).toBe(0x83);
    const sealed = encodeMetadata({ ...base, seal: { length: 70000n, crc32: 0xdeadbeef } });
    expect(sealed[0]).toBe(0x85);
    expect(sealed.subarray(1, plain.length)).toEqual(plain.subarray(1));
    const doc = new Decoder({ useBigInt64: true }).decode(sealed) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(['seq', 'ctime', 'cmd_type', SEAL_LENGTH_KEY, SEAL_CRC_KEY]);
    expect([SEAL_LENGTH_KEY, SEAL_CRC_KEY]).toEqual(['payload_len', 'payload_crc32']);
    expect(Number(doc.payload_len)).toBe(70000);
    expect(Number(doc.payload_crc32)).toBe(0xdeadbeef);
  });

  it('round-trips, and an unsealed header decodes without one', () => {
    const seal = { length: 0xffff_ffff_ffff_ffffn, crc32: 0 };
    expect(decodeHeader(encodeHeader({ ...base, seal })).header).toEqual({ ...base, seal });
    expect(decodeHeader(encodeHeader(base)).header).toEqual(base);
    expect('seal' in decodeHeader(encodeHeader(base)).header).toBe(false);
  });

  it('refuses to encode values out of range', () => {
    expect(() => encodeMetadata({ ...base, seal: { length: -1n, crc32: 0 } })).toThrow(RangeError);
    expect(() => encodeMetadata({ ...base, seal: { length: 1n, crc32: 2 ** 32 } })).toThrow(RangeError);
  });

  /** A header with the reference's keys plus `extra` (key, writer) pairs. */
  function withKeys(extra: Array<[string, (w: MsgpackWriter) => void]>): Buffer {
    const plain = encodeMetadata(base);
    const w = new MsgpackWriter();
    w.mapHeader(3 + extra.length);
    const body = Buffer.concat([plain.subarray(1)]);
    const head = w.finish();
    const tail = new MsgpackWriter();
    for (const [k, write] of extra) {
      tail.str(k);
      write(tail);
    }
    const meta = Buffer.concat([head, body, tail.finish()]);
    const prefix = Buffer.alloc(PREFIX_LENGTH);
    Buffer.from('*FILESPOOLER').copy(prefix);
    prefix.writeUInt16BE(1, 12);
    prefix.writeBigUInt64BE(BigInt(meta.length), 14);
    prefix.writeUInt32BE(zlib.crc32(meta), 22);
    prefix.writeUInt32BE(zlib.crc32(prefix.subarray(0, 26)), 26);
    return Buffer.concat([prefix, meta]);
  }

  it('rejects a malformed seal as a bad packet, and ignores other unknown keys', () => {
    const bad = [
      withKeys([[SEAL_LENGTH_KEY, (w) => w.uint(3)]]),
      withKeys([[SEAL_CRC_KEY, (w) => w.uint(3)]]),
      withKeys([
        [SEAL_LENGTH_KEY, (w) => w.sint(-1)],
        [SEAL_CRC_KEY, (w) => w.uint(0)],
      ]),
      withKeys([
        [SEAL_LENGTH_KEY, (w) => w.uint(1)],
        [SEAL_CRC_KEY, (w) => w.uint(2n ** 32n)],
      ]),
      withKeys([
        [SEAL_LENGTH_KEY, (w) => w.str('12')],
        [SEAL_CRC_KEY, (w) => w.uint(0)],
      ]),
    ];
    for (const b of bad) expect(() => decodeHeader(b)).toThrow(BadPacketError);
    expect(decodeHeader(withKeys([['len', (w) => w.uint(5)]])).header).toEqual(base);
  });
});

describe('SealVerifier and SealTransform', () => {
  const data = Buffer.from('hello, sealed world');
  const seal = sealOf(data);

  it('accept the sealed bytes in any chunking', () => {
    const v = new SealVerifier(seal);
    for (let i = 0; i < data.length; i += 3) v.update(data.subarray(i, i + 3));
    v.finish();
    expect(v.verified).toBe(true);
  });

  it('catch a short, long or corrupted payload with typed codes', () => {
    const short = new SealVerifier(seal);
    short.update(data.subarray(0, 5));
    expect(() => short.finish()).toThrow(expect.objectContaining({ code: 'ERR_PAYLOAD_SHORT' }));
    const long = new SealVerifier(seal);
    long.update(data);
    expect(() => long.update(Buffer.from('x'))).toThrow(expect.objectContaining({ code: 'ERR_PAYLOAD_LONG' }));
    const bad = new SealVerifier(seal);
    const flipped = Buffer.from(data);
    flipped[4] ^= 1;
    bad.update(flipped);
    expect(() => bad.finish()).toThrow(PayloadSealError);
    expect(bad.failure?.code).toBe('ERR_PAYLOAD_CHECKSUM');
  });

  it('a soft transform ends cleanly and keeps the failure', async () => {
    const t = new SealTransform(seal, { soft: true });
    const out = await bytesOf(Readable.from([data.subarray(0, 4)]).pipe(t));
    expect(out.toString()).toBe('hell');
    expect(t.verifier.failure?.code).toBe('ERR_PAYLOAD_SHORT');
  });
});

describe('readPacket on sealed packets', () => {
  for (const size of [0, 1, 65535, 65536, 65537]) {
    it(`verifies a ${size}-byte payload`, async () => {
      const payload = Buffer.alloc(size, 0x5a);
      for (let i = 0; i < size; i += 997) payload[i] = i & 0xff;
      const packet = await bytesOf(preparePacket({ seq: 1n, payload, seal: true }));
      const read = await readPacket(packet);
      expect(read.seal).toEqual({ length: BigInt(size), crc32: zlib.crc32(payload) });
      expect((await bytesOf(read.payload)).equals(payload)).toBe(true);
    });
  }

  it('fails the payload stream at the end of a bad payload, with a typed code', async () => {
    const payload = Buffer.alloc(200000, 1);
    const packet = await bytesOf(preparePacket({ seq: 1n, payload, seal: true }));
    await expect(payloadOf(packet.subarray(0, packet.length - 10))).rejects.toMatchObject({
      code: 'ERR_PAYLOAD_SHORT',
    });
    await expect(payloadOf(Buffer.concat([packet, Buffer.from('more')]))).rejects.toMatchObject({
      code: 'ERR_PAYLOAD_LONG',
    });
    const flipped = Buffer.from(packet);
    flipped[flipped.length - 1000] ^= 0x80;
    await expect(payloadOf(flipped)).rejects.toBeInstanceOf(PayloadSealError);
    // From a file and from a stream too.
    const dir = tempDir();
    const f = path.join(dir, 'p');
    fs.writeFileSync(f, flipped);
    await expect(bytesOf((await readPacket({ path: f })).payload)).rejects.toMatchObject({
      code: 'ERR_PAYLOAD_CHECKSUM',
    });
    await expect(bytesOf((await readPacket(fs.createReadStream(f))).payload)).rejects.toMatchObject({
      code: 'ERR_PAYLOAD_CHECKSUM',
    });
  });
});

describe('preparePacket({ seal: true })', () => {
  it('seals a file and a stream alike, spooling the stream to $TMPDIR and leaving nothing there', async () => {
    const dir = tempDir();
    const spoolDir = tempDir();
    const f = path.join(dir, 'payload');
    const payload = Buffer.alloc(3 * 1024 * 1024 + 17, 3);
    fs.writeFileSync(f, payload);
    const fromFile = await bytesOf(preparePacket({ seq: 2n, payload: { path: f }, seal: true, ctime: base.ctime }));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = spoolDir;
    let fromStream: Buffer;
    try {
      fromStream = await bytesOf(
        preparePacket({
          seq: 2n,
          payload: Readable.from([payload.subarray(0, 5), payload.subarray(5)]),
          seal: true,
          ctime: base.ctime,
        }),
      );
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(fromStream.equals(fromFile)).toBe(true);
    expect(fs.readdirSync(spoolDir)).toEqual([]);
    expect((await payloadOf(fromFile)).equals(payload)).toBe(true);
    // Unsealed packets are unchanged by the option's existence.
    const plain = await bytesOf(preparePacket({ seq: 2n, payload, ctime: base.ctime }));
    expect(
      plain.equals(
        Buffer.concat([
          encodeHeader({ seq: 2n, ctime: base.ctime, cmd: { kind: 'Command', params: [], env: [] } }),
          payload,
        ]),
      ),
    ).toBe(true);
  });

  it('a function executor fails a corrupted sealed job and it stays in the queue', async () => {
    const dir = path.join(tempDir(), 'q');
    const q = Queue.init(dir);
    await q.write(preparePacket({ seq: 1n, payload: Buffer.alloc(100000, 9), seal: true }));
    const [name] = fs.readdirSync(q.jobsDir);
    const file = path.join(q.jobsDir, name!);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 50] ^= 1;
    fs.writeFileSync(file, bytes);
    let consumed = 0;
    const run = q.process(async (job) => {
      try {
        for await (const c of job.payload) consumed += (c as Buffer).length;
      } catch {
        // A careless function that swallows the error: the job still fails.
      }
    });
    await expect(run).rejects.toMatchObject({ code: 'ERR_JOB_FAILED' });
    expect(consumed).toBe(100000);
    expect(fs.readdirSync(q.jobsDir)).toEqual([name]);
    expect(q.getNext()).toBe(1n);
  });
});
