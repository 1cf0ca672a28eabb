/**
 * A signer's key file: an OpenSSH private key ("openssh-key-v1", PROTOCOL.key), a PEM key that
 * node:crypto reads, or a public key line (whose private half an ssh-agent holds). An encrypted
 * OpenSSH key is not decrypted here: its public half, stored in the clear, finds it in the agent.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { SignatureError, systemErrorWords } from '../base/errors.js';
import { curveNamed, curveOfJwk, jwkToPoint, leftPad, p1363ToSsh, pointToJwk } from './ecdsa.js';
import { type PublicKey, parsePublicKeyBlob, parsePublicKeyLine } from './public-key.js';
import { WireReader, wireConcat, wireMpint, wireString } from './wire.js';

export type LoadedKey =
  | { kind: 'plain'; key: crypto.KeyObject; publicKey: PublicKey }
  | { kind: 'encrypted'; publicKey: PublicKey }
  | { kind: 'public'; publicKey: PublicKey };

/** Why a key that loaded can not sign by itself: what a message says after its path. */
export function whyNoKey(kind: 'encrypted' | 'public'): string {
  return kind === 'encrypted' ? 'it has a passphrase' : 'it holds no private key';
}

const BEGIN_OPENSSH = '-----BEGIN OPENSSH PRIVATE KEY-----';
const END_OPENSSH = '-----END OPENSSH PRIVATE KEY-----';
const AUTH_MAGIC = Buffer.from('openssh-key-v1\0', 'latin1');

/** The key at `path`, as far as we can use it without a passphrase. */
export function loadPrivateKey(path: string): LoadedKey {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    throw new SignatureError(`${path}: ${systemErrorWords(err) ?? (err as Error).message}`, { cause: err });
  }
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith(BEGIN_OPENSSH)) return parseOpenSshKey(trimmed);
    if (/^-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.test(trimmed)) return parsePemKey(trimmed, path);
    if (/^(ssh-|ecdsa-|sk-)\S+[ \t]+[A-Za-z0-9+/]/.test(trimmed))
      return { kind: 'public', publicKey: parsePublicKeyLine(trimmed) };
  } catch (err) {
    if (err instanceof SignatureError)
      throw new SignatureError(`${path}: ${err.reason}`, { fingerprint: err.fingerprint, cause: err });
    throw err;
  }
  throw new SignatureError(`${path}: not an OpenSSH private key`);
}

/** The "openssh-key-v1" format: the public key in the clear, the private section maybe encrypted. */
function parseOpenSshKey(text: string): LoadedKey {
  const end = text.indexOf(END_OPENSSH);
  if (end < 0) throw new SignatureError('not an OpenSSH private key (no END line)');
  const blob = Buffer.from(text.slice(BEGIN_OPENSSH.length, end).replace(/\s+/g, ''), 'base64');
  const r = new WireReader(blob, 'OpenSSH private key');
  if (blob.length < AUTH_MAGIC.length || !r.bytes(AUTH_MAGIC.length).equals(AUTH_MAGIC))
    r.fail('no openssh-key-v1 magic');
  const cipher = r.text();
  r.string(); // kdfname
  r.string(); // kdfoptions
  const count = r.u32();
  if (count !== 1) r.fail(`${count} keys in one file (OpenSSH writes one)`);
  const publicKey = parsePublicKeyBlob(r.string());
  const section = r.string();
  r.done();
  if (cipher !== 'none') return { kind: 'encrypted', publicKey };
  // A FIDO key's private half is a handle to a token: only ssh-agent (or ssh-keygen) can sign with it.
  if (publicKey.type.startsWith('sk-')) return { kind: 'public', publicKey };
  return { kind: 'plain', key: privateSection(section, publicKey), publicKey };
}

/** The unencrypted private section: check numbers, one key whose public half must be the file's, padding 1, 2, 3 … */
function privateSection(section: Buffer, publicKey: PublicKey): crypto.KeyObject {
  const r = new WireReader(section, 'OpenSSH private key');
  const check = r.u32();
  if (r.u32() !== check) r.fail('its check numbers differ');
  const type = r.text();
  if (type !== publicKey.type) r.fail(`private key of type ${type} for a ${publicKey.type} public key`);
  const { jwk, blob } = privateFields(type, r);
  r.string(); // comment
  const pad = r.rest();
  if (pad.some((b, i) => b !== ((i + 1) & 0xff))) r.fail('bad padding');
  if (!blob.equals(publicKey.blob)) r.fail('its private key does not belong to its public key');
  try {
    return crypto.createPrivateKey({ key: jwk, format: 'jwk' });
  } catch (err) {
    throw new SignatureError(`malformed private key: ${(err as Error).message}`, { cause: err });
  }
}

/** A private key's fields as JWK, and the public blob they imply (to compare with the file's). */
function privateFields(type: string, r: WireReader): { jwk: crypto.JsonWebKey; blob: Buffer } {
  if (type === 'ssh-ed25519') {
    const pk = r.string();
    const sk = r.string();
    if (pk.length !== 32 || sk.length !== 64) r.fail('ed25519 key of the wrong size');
    const jwk = {
      kty: 'OKP',
      crv: 'Ed25519',
      x: pk.toString('base64url'),
      d: sk.subarray(0, 32).toString('base64url'),
    };
    return { jwk, blob: wireConcat(wireString(type), wireString(pk)) };
  }
  if (type === 'ssh-rsa') {
    const [n, e, d, iqmp, p, q] = [r.mpint(), r.mpint(), r.mpint(), r.mpint(), r.mpint(), r.mpint()];
    const big = (b: Buffer) => BigInt(`0x${b.toString('hex') || '0'}`);
    const b64 = (x: bigint) => {
      const hex = x.toString(16);
      return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex').toString('base64url');
    };
    const [D, P, Q] = [big(d), big(p), big(q)];
    if (P < 2n || Q < 2n) r.fail('RSA prime of 0 or 1');
    const jwk = { kty: 'RSA', n: n.toString('base64url'), e: e.toString('base64url'), d: b64(D), p: b64(P), q: b64(Q) };
    Object.assign(jwk, { dp: b64(D % (P - 1n)), dq: b64(D % (Q - 1n)), qi: iqmp.toString('base64url') });
    return { jwk, blob: wireConcat(wireString(type), wireMpint(e), wireMpint(n)) };
  }
  if (/^ecdsa-sha2-nistp(256|384|521)$/.test(type)) {
    const curveName = r.text();
    const curve = curveNamed(curveName);
    const q = r.string();
    const d = r.mpint();
    if (d.length > curve.size) r.fail(`private scalar wider than ${curve.name}`);
    const blob = wireConcat(wireString(type), wireString(curveName), wireString(q));
    return { jwk: { ...pointToJwk(curve, q), d: leftPad(d, curve.size).toString('base64url') }, blob };
  }
  throw new SignatureError(`unsupported key type ${type}`);
}

/** A PEM key (PKCS#1, SEC1, PKCS#8) through node:crypto; an encrypted one is found in ssh-agent by its KEY.pub. */
function parsePemKey(text: string, path: string): LoadedKey {
  let key: crypto.KeyObject;
  try {
    key = crypto.createPrivateKey(text);
  } catch (err) {
    if (/ENCRYPTED/.test(text) || /passphrase/i.test((err as Error).message)) return encryptedPem(path);
    throw new SignatureError(`not a private key node:crypto can read (${(err as Error).message})`, { cause: err });
  }
  return { kind: 'plain', key, publicKey: parsePublicKeyBlob(keyBlobOf(key)) };
}

/** An encrypted PEM key's public half: only its .pub file can say, as for ssh-keygen -y without a passphrase. */
function encryptedPem(path: string): LoadedKey {
  let pub: string;
  try {
    pub = fs.readFileSync(`${path}.pub`, 'utf8');
  } catch {
    throw new SignatureError(`an encrypted PEM key, and no ${path}.pub beside it to find it in ssh-agent`);
  }
  return { kind: 'encrypted', publicKey: parsePublicKeyLine(pub) };
}

/** The SSH public key blob of a node:crypto key (private or public). */
export function keyBlobOf(key: crypto.KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  const b = (s: string | undefined) => Buffer.from(s ?? '', 'base64url');
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return wireConcat(wireString('ssh-ed25519'), wireString(b(jwk.x)));
  if (jwk.kty === 'RSA') return wireConcat(wireString('ssh-rsa'), wireMpint(b(jwk.e)), wireMpint(b(jwk.n)));
  if (jwk.kty === 'EC') {
    const curve = curveOfJwk(jwk.crv);
    return wireConcat(
      wireString(`ecdsa-sha2-${curve.name}`),
      wireString(curve.name),
      wireString(jwkToPoint(curve, jwk.x ?? '', jwk.y ?? '')),
    );
  }
  throw new SignatureError(`unsupported key type ${jwk.kty}${jwk.crv ? ` ${jwk.crv}` : ''}`);
}

/** An SSH signature blob of `data` by `key`, as ssh-keygen makes it for SSHSIG (RSA: rsa-sha2-512). */
export function signRaw(key: crypto.KeyObject, publicKey: PublicKey, data: Buffer): Buffer {
  const type = publicKey.type;
  if (type === 'ssh-ed25519') return wireConcat(wireString(type), wireString(crypto.sign(null, data, key)));
  if (type === 'ssh-rsa') {
    const sig = crypto.sign('sha512', data, { key, padding: crypto.constants.RSA_PKCS1_PADDING });
    return wireConcat(wireString('rsa-sha2-512'), wireString(sig));
  }
  const m = /^ecdsa-sha2-(nistp(?:256|384|521))$/.exec(type);
  if (m) {
    const curve = curveNamed(m[1]!);
    return wireConcat(
      wireString(type),
      wireString(p1363ToSsh(curve, crypto.sign(curve.hash, data, { key, dsaEncoding: 'ieee-p1363' }))),
    );
  }
  throw new SignatureError(`cannot sign in-process with a ${type} key`, { fingerprint: publicKey.fingerprint });
}
