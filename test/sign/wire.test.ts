/**
 * The wire reader and the parsers over it: a short input or a lying length is a SignatureError,
 * never a RangeError, and no length field makes anything allocate beyond the input.
 */
import crypto from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { SignatureError } from '../../src/base/errors.js';
import {
  encodeSshSig,
  parsePublicKeyBlob,
  parseSshSig,
  toSign,
  verifySshSig,
  WireReader,
  wireConcat,
  wireString,
  wireU32,
} from '../../src/sign/index.js';
import { keyBlobOf, signRaw } from '../../src/sign/private-key.js';
import { rng } from '../helpers.js';

const MESSAGE = Buffer.from('payload');

/** An SSHSIG made in-process for each kind of key node:crypto makes. */
function sampleSigs(): Buffer[] {
  const pairs = [
    crypto.generateKeyPairSync('ed25519'),
    crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }),
    crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    crypto.generateKeyPairSync('ec', { namedCurve: 'P-521' }),
  ];
  return pairs.map(({ privateKey, publicKey }) => {
    const pk = parsePublicKeyBlob(keyBlobOf(publicKey));
    return encodeSshSig(pk.blob, 'fspl', 'sha512', signRaw(privateKey, pk, toSign('fspl', 'sha512', MESSAGE)));
  });
}

/** Parse and verify; anything thrown must be a SignatureError. Returns whether it was let in. */
function letIn(blob: Buffer): boolean {
  try {
    verifySshSig(parseSshSig(blob), MESSAGE);
    return true;
  } catch (err) {
    if (!(err instanceof SignatureError)) throw new Error(`not a SignatureError: ${err}`, { cause: err });
    return false;
  }
}

describe('WireReader', () => {
  test('reads what the writers write', () => {
    const r = new WireReader(
      wireConcat(wireU32(7), wireString('abc'), Buffer.of(9), wireString(Buffer.of(0, 0x80)), wireString('')),
    );
    expect(r.u32()).toBe(7);
    expect(r.text()).toBe('abc');
    expect(r.u8()).toBe(9);
    expect(r.mpint()).toEqual(Buffer.of(0x80));
    expect(r.string().length).toBe(0);
    r.done();
    expect(r.rest().length).toBe(0);
  });

  test('a length larger than what remains, a short u32, a negative mpint or trailing bytes are SignatureErrors', () => {
    expect(() => new WireReader(Buffer.of(0xff, 0xff, 0xff, 0xff, 1), 'x').string()).toThrow(
      new SignatureError('malformed x: truncated string body (4294967295 bytes wanted, 1 left)'),
    );
    expect(() => new WireReader(Buffer.of(0, 0)).u32()).toThrow(SignatureError);
    expect(() => new WireReader(Buffer.alloc(0)).u8()).toThrow(SignatureError);
    expect(() => new WireReader(wireString(Buffer.of(0x80))).mpint()).toThrow(/negative mpint/);
    expect(() => new WireReader(Buffer.of(1)).done()).toThrow(/1 unexpected trailing bytes/);
    expect(() => new WireReader(Buffer.of(1)).bytes(2)).toThrow(SignatureError);
  });
});

describe('malformed signatures', () => {
  const sigs = sampleSigs();

  test('the samples are let in', () => {
    for (const s of sigs) expect(letIn(s)).toBe(true);
  });

  test('every truncation of a signature is refused with a SignatureError', () => {
    for (const s of sigs) for (let n = 0; n < s.length; n++) expect(letIn(s.subarray(0, n)), `cut at ${n}`).toBe(false);
  });

  test('a trailing byte, a wrong magic, a later version or an empty namespace is refused', () => {
    const s = sigs[0]!;
    expect(() => parseSshSig(Buffer.concat([s, Buffer.of(0)]))).toThrow(/trailing/);
    expect(() => parseSshSig(Buffer.concat([Buffer.from('SSHSIH'), s.subarray(6)]))).toThrow(/no SSHSIG preamble/);
    const v2 = Buffer.from(s);
    v2.writeUInt32BE(2, 6);
    expect(() => parseSshSig(v2)).toThrow(/version 2/);
    const pk = parseSshSig(s).publicKey.blob;
    expect(() => parseSshSig(encodeSshSig(pk, '', 'sha512', Buffer.alloc(0)))).toThrow(/empty namespace/);
    expect(() => parseSshSig(encodeSshSig(pk, 'fspl', 'md5' as 'sha512', Buffer.alloc(0)))).toThrow(
      /unsupported hash algorithm "md5"/,
    );
  });

  test('random byte changes are refused with SignatureErrors only (seeded)', () => {
    const next = rng(20261128);
    for (const s of sigs) {
      for (let i = 0; i < 400; i++) {
        const m = Buffer.from(s);
        const at = Math.floor(next() * m.length);
        m[at] = Math.floor(next() * 256);
        if (m.equals(s)) continue;
        // Every byte counts: the key's are the verifier's, the rest are signed or frame what is.
        expect(letIn(m), `byte ${at} of a ${parseSshSig(s).publicKey.type} signature`).toBe(false);
      }
    }
  });
});
