/**
 * SSH public keys: the wire blob (RFC 4253 and RFC 5656 layouts, and OpenSSH's FIDO "sk-" keys),
 * its fingerprint as `ssh-keygen -lf` prints it, and a verifier for SSH signature blobs made by
 * it. Keys become node:crypto KeyObjects through JWK, so no ASN.1 is built by hand here.
 */
import type { JsonWebKey, KeyObject } from 'node:crypto';
import { SignatureError } from '../base/errors.js';
import { type Curve, curveNamed, leftPad, pointToJwk, sshToP1363 } from './ecdsa.js';
import { crypto } from './node-crypto.js';
import { WireReader } from './wire.js';

export interface PublicKey {
  /** The key type as SSH names it (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256` …). */
  readonly type: string;
  /** The wire key blob (what the base64 of a `.pub` line decodes to). */
  readonly blob: Buffer;
  /** `SHA256:` and the unpadded base64 of sha256(blob), as `ssh-keygen -lf` prints it. */
  readonly fingerprint: string;
  readonly comment?: string;
  /** Whether `signature` (an SSH signature blob: string(type) string(sig) …) signs `data` with this key. */
  verify(data: Uint8Array, signature: Buffer): boolean;
}

/** OpenSSH refuses RSA moduli below this (SSH_RSA_MINIMUM_MODULUS_SIZE), and so do we. */
const RSA_MIN_BITS = 1024;

/**
 * The FIDO flag that says the user touched the key. sshd requires it by default (no-touch-required
 * waives it); `ssh-keygen -Y verify` (OpenSSH 9.2 to 10) only prints the flags. We require it: a
 * signature no one touched the key for is what a FIDO key exists to prevent.
 */
const SK_USER_PRESENCE = 0x01;

/** OpenSSH's fingerprint of a key blob. */
export function fingerprintOf(blob: Uint8Array): string {
  return `SHA256:${crypto().createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** A key blob read into a PublicKey; a type we cannot verify (DSA, certificates …) is refused by name. */
export function parsePublicKeyBlob(blob: Uint8Array, comment?: string): PublicKey {
  const own = Buffer.from(blob);
  const r = new WireReader(own, 'public key');
  const type = r.text();
  const id = own.toString('base64');
  let known = verifiers.get(id);
  if (!known) {
    known = { verify: verifierFor(type, r), fingerprint: fingerprintOf(own) };
    r.done();
    remember(id, known);
  }
  return { type, blob: own, fingerprint: known.fingerprint, ...(comment ? { comment } : {}), verify: known.verify };
}

/**
 * Verifiers and fingerprints of the keys seen last: a queue checks many packets by few keys, a
 * P-521 key takes 2 ms to import, and a fingerprint is a SHA-256 (a tenth of a signed job's cost).
 */
const verifiers = new Map<string, { verify: Verify; fingerprint: string }>();
const KEPT_VERIFIERS = 64;

function remember(id: string, known: { verify: Verify; fingerprint: string }): void {
  if (verifiers.size >= KEPT_VERIFIERS) verifiers.delete(verifiers.keys().next().value!);
  verifiers.set(id, known);
}

/** A public key line (`ssh-ed25519 AAAA… comment`), as in a `.pub` file. */
export function parsePublicKeyLine(text: string): PublicKey {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const [type, b64, ...comment] = (line ?? '').trim().split(/[ \t]+/);
  if (!type || !b64) throw new SignatureError('not an SSH public key line (want "TYPE BASE64 [COMMENT]")');
  const blob = decodeKeyBase64(type, b64);
  return parsePublicKeyBlob(blob, comment.join(' ') || undefined);
}

/** The blob of a line's base64 field, checked to name the type the line names (as sshkey_read does). */
export function decodeKeyBase64(type: string, b64: string): Buffer {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new SignatureError(`malformed ${type} key: its base64 is not base64`);
  const blob = Buffer.from(b64, 'base64');
  const named = new WireReader(blob, 'public key').text();
  if (named !== type) throw new SignatureError(`key type mismatch: the line says ${type}, its blob says ${named}`);
  return blob;
}

type Verify = (data: Uint8Array, signature: Buffer) => boolean;

/** The rest of a blob after its type, read into a verifier for that type. */
function verifierFor(type: string, r: WireReader): Verify {
  switch (type) {
    case 'ssh-ed25519':
      return ed25519Verifier(r.string(), r);
    case 'ssh-rsa':
      return rsaVerifier(r);
    case 'ecdsa-sha2-nistp256':
    case 'ecdsa-sha2-nistp384':
    case 'ecdsa-sha2-nistp521':
      return ecdsaVerifier(type, r);
    case 'sk-ssh-ed25519@openssh.com':
      return skVerifier(type, ed25519Verifier(r.string(), r), r.string());
    case 'sk-ecdsa-sha2-nistp256@openssh.com':
      return skVerifier(type, ecdsaVerifier('ecdsa-sha2-nistp256', r), r.string());
    default:
      throw new SignatureError(`unsupported key type ${type}`);
  }
}

/** A KeyObject from JWK; node:crypto's complaint (a point off the curve …) is the blob's fault. */
function keyFromJwk(jwk: JsonWebKey): KeyObject {
  try {
    return crypto().createPublicKey({ key: jwk, format: 'jwk' });
  } catch (err) {
    throw new SignatureError(`malformed public key: ${(err as Error).message}`, { cause: err });
  }
}

/** The type and signature bytes of a signature blob, its type checked against what the key signs with. */
function readSignature(signature: Buffer, allowed: readonly string[]): { type: string; sig: Buffer; r: WireReader } {
  const r = new WireReader(signature, 'signature');
  const type = r.text();
  if (!allowed.includes(type)) r.fail(`signature of type ${type}, not ${allowed.join(' or ')}`);
  return { type, sig: r.string(), r };
}

function ed25519Verifier(pk: Buffer, r: WireReader): Verify & { raw: (data: Uint8Array, sig: Buffer) => boolean } {
  if (pk.length !== 32) r.fail(`an ed25519 key of ${pk.length} bytes`);
  const key = keyFromJwk({ kty: 'OKP', crv: 'Ed25519', x: pk.toString('base64url') });
  const raw = (data: Uint8Array, sig: Buffer) => sig.length === 64 && crypto().verify(null, data, key, sig);
  const verify = (data: Uint8Array, signature: Buffer) => {
    const s = readSignature(signature, ['ssh-ed25519']);
    s.r.done();
    return raw(data, s.sig);
  };
  return Object.assign(verify, { raw });
}

function rsaVerifier(r: WireReader): Verify {
  const e = r.mpint();
  const n = r.mpint();
  const bits = n.length === 0 ? 0 : n.length * 8 - Math.clz32(n[0]!) + 24;
  if (bits < RSA_MIN_BITS)
    throw new SignatureError(`unsupported key type ssh-rsa of ${bits} bits (at least ${RSA_MIN_BITS})`);
  const key = keyFromJwk({ kty: 'RSA', n: n.toString('base64url'), e: e.toString('base64url') });
  // Plain "ssh-rsa" (SHA-1) signatures are refused for SSHSIG, as OpenSSH refuses them.
  const hashes: Record<string, string> = { 'rsa-sha2-512': 'sha512', 'rsa-sha2-256': 'sha256' };
  return (data, signature) => {
    const s = readSignature(signature, Object.keys(hashes));
    s.r.done();
    if (s.sig.length > n.length) return false;
    // OpenSSH accepts a signature shorter than the modulus (leading zeros dropped); OpenSSL does not.
    return crypto().verify(
      hashes[s.type]!,
      data,
      { key, padding: crypto().constants.RSA_PKCS1_PADDING },
      leftPad(s.sig, n.length),
    );
  };
}

function ecdsaVerifier(type: string, r: WireReader): Verify & { raw: (data: Uint8Array, sig: Buffer) => boolean } {
  const curve: Curve = curveNamed(r.text());
  if (`ecdsa-sha2-${curve.name}` !== type) r.fail(`${type} key on curve ${curve.name}`);
  const key = keyFromJwk(pointToJwk(curve, r.string()));
  const raw = (data: Uint8Array, body: Buffer) =>
    crypto().verify(curve.hash, data, { key, dsaEncoding: 'ieee-p1363' }, sshToP1363(curve, body));
  const verify = (data: Uint8Array, signature: Buffer) => {
    const s = readSignature(signature, [type]);
    s.r.done();
    return raw(data, s.sig);
  };
  return Object.assign(verify, { raw });
}

/**
 * A FIDO key's verifier: the authenticator signed sha256(application) || flags || counter ||
 * sha256(data); a signature without the user-presence flag is refused (see SK_USER_PRESENCE).
 */
function skVerifier(
  type: string,
  inner: { raw: (data: Uint8Array, sig: Buffer) => boolean },
  application: Buffer,
): Verify {
  const appHash = crypto().createHash('sha256').update(application).digest();
  return (data, signature) => {
    const s = readSignature(signature, [type]);
    const flags = s.r.u8();
    const counter = s.r.u32();
    s.r.done();
    if (!(flags & SK_USER_PRESENCE))
      throw new SignatureError('signed without touching the security key (no user-presence flag)');
    const tail = Buffer.alloc(5);
    tail.writeUInt8(flags, 0);
    tail.writeUInt32BE(counter, 1);
    const signed = Buffer.concat([appHash, tail, crypto().createHash('sha256').update(data).digest()]);
    return inner.raw(signed, s.sig);
  };
}
