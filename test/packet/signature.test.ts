/**
 * The signed packet's format (packet/signature.ts): two keys after the seal's, what the signature
 * signs (the metadata without `sshsig`, encoded again from the decoded header), and the headers
 * that are bad packets.
 */
import { Decoder } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { BadPacketError } from '../../src/base/errors.js';
import {
  crc32,
  decodeHeader,
  encodeHeader,
  encodeMetadata,
  PREFIX_LENGTH,
  signedMessage,
} from '../../src/packet/codec.js';
import { MsgpackWriter } from '../../src/packet/msgpack.js';
import { SHA512_KEY, SSHSIG_KEY } from '../../src/packet/signature.js';
import type { PacketHeader } from '../../src/packet/types.js';

const sha512 = Buffer.alloc(64, 7);
const sshsig = Buffer.from('SSHSIG-not-really');
const base: PacketHeader = {
  seq: 9n,
  ctime: { secs: 1700000000n, nanos: 5 },
  cmd: { kind: 'Command', params: [Buffer.from('p')], env: [[Buffer.from('K'), Buffer.from('v')]] },
  seal: { length: 3n, crc32: 0x1234 },
};
const signed: PacketHeader = { ...base, signature: { sha512, sshsig } };

/** Metadata written by hand: the reference's three keys, then `extra` key/value pairs as given. */
function metadataWith(extra: Array<[string, (w: MsgpackWriter) => void]>): Buffer {
  const w = new MsgpackWriter();
  const plain = encodeMetadata({ seq: 9n, ctime: base.ctime, cmd: base.cmd });
  w.mapHeader(3 + extra.length);
  const body = plain.subarray(1); // after the fixmap byte of three keys
  const out = Buffer.concat([w.finish(), body]);
  const tail = new MsgpackWriter();
  for (const [k, write] of extra) {
    tail.str(k);
    write(tail);
  }
  return Buffer.concat([out, tail.finish()]);
}

/** A whole header around metadata: the prefix as encodeHeader makes it, its length and CRCs for `meta`. */
function headerOf(meta: Buffer): Buffer {
  const prefix = Buffer.from(encodeHeader({ seq: 9n, ctime: base.ctime, cmd: base.cmd }).subarray(0, PREFIX_LENGTH));
  prefix.writeBigUInt64BE(BigInt(meta.length), 14);
  prefix.writeUInt32BE(crc32(meta), 22);
  prefix.writeUInt32BE(crc32(prefix.subarray(0, 26)), 26);
  return Buffer.concat([prefix, meta]);
}

describe('signed packets: the format', () => {
  it('two bin keys after the seal, which decode back; the message is the metadata without sshsig', () => {
    const meta = encodeMetadata(signed);
    const doc = new Decoder().decode(meta) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual([
      'seq',
      'ctime',
      'cmd_type',
      'payload_len',
      'payload_crc32',
      SHA512_KEY,
      SSHSIG_KEY,
    ]);
    expect(Buffer.from(doc[SHA512_KEY] as Uint8Array).equals(sha512)).toBe(true);
    expect(Buffer.from(doc[SSHSIG_KEY] as Uint8Array).equals(sshsig)).toBe(true);
    const back = decodeHeader(encodeHeader(signed)).header;
    expect(back.signature?.sha512).toEqual(sha512);
    expect(back.signature?.sshsig).toEqual(sshsig);
    const message = signedMessage(base, sha512);
    expect(Object.keys(new Decoder().decode(message) as object)).toEqual([
      'seq',
      'ctime',
      'cmd_type',
      'payload_len',
      'payload_crc32',
      SHA512_KEY,
    ]);
    // The packet's metadata is the message with the sshsig key added: the map count, then the key at the end.
    expect(meta.subarray(1, message.length)).toEqual(message.subarray(1));
    expect(signedMessage(back, back.signature!.sha512)).toEqual(message);
  });

  it('the message changes with every field that affects the run', () => {
    const m = (h: PacketHeader, digest = sha512) => signedMessage(h, digest).toString('hex');
    const all = [
      m(base),
      m({ ...base, seq: 10n }),
      m({ ...base, ctime: { secs: 1700000001n, nanos: 5 } }),
      m({ ...base, ctime: { secs: 1700000000n, nanos: 6 } }),
      m({ ...base, cmd: { kind: 'Command', params: [Buffer.from('q')], env: [[Buffer.from('K'), Buffer.from('v')]] } }),
      m({ ...base, cmd: { kind: 'Command', params: [Buffer.from('p')], env: [[Buffer.from('K'), Buffer.from('w')]] } }),
      m({ ...base, cmd: { kind: 'NOP' } }),
      m({ ...base, seal: { length: 4n, crc32: 0x1234 } }),
      m(base, Buffer.alloc(64, 8)),
    ];
    expect(new Set(all).size).toBe(all.length);
    expect(() => signedMessage({ ...base, seal: undefined }, sha512)).toThrow(RangeError);
  });

  it('bad packets: one key without the other, a digest of another length, a signature on an unsealed packet', () => {
    const bin = (b: Buffer) => (w: MsgpackWriter) => w.bin(b);
    const seal: Array<[string, (w: MsgpackWriter) => void]> = [
      ['payload_len', (w) => w.uint(3)],
      ['payload_crc32', (w) => w.uint(0x1234)],
    ];
    const bad = (extra: Array<[string, (w: MsgpackWriter) => void]>, why: RegExp) => {
      const e = (() => {
        try {
          decodeHeader(headerOf(metadataWith(extra)));
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(e).toBeInstanceOf(BadPacketError);
      expect((e as Error).message).toMatch(why);
    };
    bad([...seal, [SHA512_KEY, bin(sha512)]], /needs both payload_sha512 and sshsig/);
    bad([...seal, [SSHSIG_KEY, bin(sshsig)]], /needs both/);
    bad([...seal, [SHA512_KEY, bin(Buffer.alloc(32))], [SSHSIG_KEY, bin(sshsig)]], /payload_sha512 is not 64 bytes/);
    bad(
      [
        [SHA512_KEY, bin(sha512)],
        [SSHSIG_KEY, bin(sshsig)],
      ],
      /a signed packet must be sealed/,
    );
    bad([...seal, [SHA512_KEY, bin(sha512)], [SSHSIG_KEY, (w) => w.uint(5)]], /sshsig is not a byte string/);
    // Written in another key order, it means the same and gives the same message.
    const reordered = decodeHeader(
      headerOf(metadataWith([[SSHSIG_KEY, bin(sshsig)], [SHA512_KEY, bin(sha512)], ...seal])),
    ).header;
    expect(signedMessage(reordered, reordered.signature!.sha512)).toEqual(signedMessage(base, sha512));
  });
});
