/**
 * ECDSA as SSH writes it (RFC 5656): the NIST curves by their SSH names, public points as JWK,
 * and signatures between SSH's string(mpint r, mpint s) and IEEE P1363's fixed-width r || s,
 * which node:crypto signs and verifies with `dsaEncoding: 'ieee-p1363'`.
 */
import { SignatureError } from '../base/errors.js';
import { WireReader, wireConcat, wireMpint } from './wire.js';

export interface Curve {
  /** The SSH name: nistp256, nistp384, nistp521. */
  readonly name: string;
  /** The JWK curve name. */
  readonly jwk: 'P-256' | 'P-384' | 'P-521';
  /** The hash RFC 5656 pairs with the curve. */
  readonly hash: 'sha256' | 'sha384' | 'sha512';
  /** Bytes of one coordinate (and of r, s and the private scalar). */
  readonly size: number;
}

const CURVES: Record<string, Curve> = {
  nistp256: { name: 'nistp256', jwk: 'P-256', hash: 'sha256', size: 32 },
  nistp384: { name: 'nistp384', jwk: 'P-384', hash: 'sha384', size: 48 },
  nistp521: { name: 'nistp521', jwk: 'P-521', hash: 'sha512', size: 66 },
};

/** The curve of an SSH curve name; a name we do not know is the key's fault, not ours. */
export function curveNamed(name: string): Curve {
  const c = Object.hasOwn(CURVES, name) ? CURVES[name] : undefined;
  if (!c) throw new SignatureError(`unsupported ECDSA curve ${JSON.stringify(name)}`);
  return c;
}

/** The curve a JWK names (for a PEM key loaded by node:crypto). */
export function curveOfJwk(crv: string | undefined): Curve {
  const c = Object.values(CURVES).find((x) => x.jwk === crv);
  if (!c) throw new SignatureError(`unsupported ECDSA curve ${JSON.stringify(crv)}`);
  return c;
}

/** An uncompressed point (0x04 || x || y) as JWK coordinates; compressed points are not what OpenSSH writes. */
export function pointToJwk(curve: Curve, q: Buffer): { kty: 'EC'; crv: string; x: string; y: string } {
  if (q.length !== 1 + 2 * curve.size || q[0] !== 0x04)
    throw new SignatureError(`malformed public key: not an uncompressed ${curve.name} point`);
  return {
    kty: 'EC',
    crv: curve.jwk,
    x: q.subarray(1, 1 + curve.size).toString('base64url'),
    y: q.subarray(1 + curve.size).toString('base64url'),
  };
}

/** JWK coordinates back to the uncompressed point SSH keys carry. */
export function jwkToPoint(curve: Curve, x: string, y: string): Buffer {
  return Buffer.concat([
    Buffer.of(0x04),
    leftPad(Buffer.from(x, 'base64url'), curve.size),
    leftPad(Buffer.from(y, 'base64url'), curve.size),
  ]);
}

/** SSH's string(mpint r, mpint s) body as P1363 r || s; a number wider than the curve is malformed. */
export function sshToP1363(curve: Curve, body: Buffer): Buffer {
  const r = new WireReader(body, 'ECDSA signature');
  const rr = r.mpint();
  const ss = r.mpint();
  r.done();
  if (rr.length > curve.size || ss.length > curve.size) r.fail(`r or s wider than ${curve.name}`);
  return Buffer.concat([leftPad(rr, curve.size), leftPad(ss, curve.size)]);
}

/** P1363 r || s as SSH's mpint r || mpint s (the body of the signature's second string). */
export function p1363ToSsh(curve: Curve, sig: Buffer): Buffer {
  if (sig.length !== 2 * curve.size)
    throw new SignatureError(`ECDSA signature of ${sig.length} bytes for ${curve.name}`);
  return wireConcat(wireMpint(sig.subarray(0, curve.size)), wireMpint(sig.subarray(curve.size)));
}

/** A big-endian number widened to `size` bytes (the caller has checked it fits). */
export function leftPad(b: Buffer, size: number): Buffer {
  if (b.length >= size) return b;
  return Buffer.concat([Buffer.alloc(size - b.length), b]);
}
