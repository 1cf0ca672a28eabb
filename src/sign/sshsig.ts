/**
 * SSHSIG, OpenSSH's detached signature (PROTOCOL.sshsig): the binary blob, the bytes a key signs
 * for it, and the armored text `ssh-keygen -Y sign` writes. fspl signs and verifies in namespace
 * `fspl`, so that no signature made for git, e-mail or files can be replayed as a packet's.
 */
import { SignatureError } from '../base/errors.js';
import { crypto } from './node-crypto.js';
import { type PublicKey, parsePublicKeyBlob } from './public-key.js';
import { WireReader, wireConcat, wireString, wireU32 } from './wire.js';

export const NAMESPACE = 'fspl';

export type HashAlgorithm = 'sha256' | 'sha512';

export interface SshSig {
  publicKey: PublicKey;
  namespace: string;
  hashAlgorithm: HashAlgorithm;
  /** The inner SSH signature blob (string(type) string(sig) …). */
  signature: Buffer;
  /** The whole binary SSHSIG. */
  blob: Buffer;
}

const MAGIC = Buffer.from('SSHSIG');
const VERSION = 1;
const BEGIN = '-----BEGIN SSH SIGNATURE-----';
const END = '-----END SSH SIGNATURE-----';
/** sshbuf_dtob64 wraps its base64 at 70 columns, whatever PROTOCOL.sshsig's 76 suggests. */
const COLUMNS = 70;

/** A binary SSHSIG read; its signature is not checked here (verifySshSig does). */
export function parseSshSig(blob: Uint8Array): SshSig {
  const own = Buffer.from(blob);
  const body = new WireReader(own, 'SSH signature');
  if (own.length < MAGIC.length || !body.bytes(MAGIC.length).equals(MAGIC)) body.fail('no SSHSIG preamble');
  const version = body.u32();
  if (version !== VERSION) body.fail(`version ${version} (only ${VERSION} is known)`);
  const publicKey = parsePublicKeyBlob(body.string());
  const namespace = body.text();
  body.string(); // reserved: ignored, as the spec says
  const hashAlgorithm = body.text();
  const signature = Buffer.from(body.string());
  body.done();
  if (namespace === '')
    throw new SignatureError('malformed SSH signature: empty namespace', { fingerprint: publicKey.fingerprint });
  if (!isHashAlgorithm(hashAlgorithm))
    throw new SignatureError(`unsupported hash algorithm ${JSON.stringify(hashAlgorithm)} (sha256 or sha512)`, {
      fingerprint: publicKey.fingerprint,
    });
  return { publicKey, namespace, hashAlgorithm, signature, blob: own };
}

function isHashAlgorithm(h: string): h is HashAlgorithm {
  return h === 'sha256' || h === 'sha512';
}

/** A binary SSHSIG from its parts (reserved empty, as ssh-keygen writes it). */
export function encodeSshSig(
  publicKeyBlob: Buffer,
  namespace: string,
  hashAlgorithm: HashAlgorithm,
  signature: Buffer,
): Buffer {
  return wireConcat(
    MAGIC,
    wireU32(VERSION),
    wireString(publicKeyBlob),
    wireString(namespace),
    wireString(''),
    wireString(hashAlgorithm),
    wireString(signature),
  );
}

/** The exact bytes a key signs for an SSHSIG over `message`. */
export function toSign(namespace: string, hashAlgorithm: HashAlgorithm, message: Uint8Array): Buffer {
  // One-shot: creating a Hash object costs more than hashing a header.
  const digest = crypto().hash(hashAlgorithm, message, 'buffer');
  return wireConcat(MAGIC, wireString(namespace), wireString(''), wireString(hashAlgorithm), wireString(digest));
}

/** The armored text, byte for byte as `ssh-keygen -Y sign` writes it. */
export function armor(blob: Uint8Array): string {
  const b64 = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength).toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += COLUMNS) lines.push(b64.slice(i, i + COLUMNS));
  return `${BEGIN}\n${lines.map((l) => `${l}\n`).join('')}${END}\n`;
}

/** The binary SSHSIG inside armored text (CRLF and whitespace around it tolerated). */
export function unarmor(text: string | Uint8Array): Buffer {
  const s = (
    typeof text === 'string' ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1')
  ).trim();
  if (!s.startsWith(BEGIN)) throw new SignatureError(`not an armored SSH signature (no "${BEGIN}" line)`);
  const end = s.indexOf(END, BEGIN.length);
  if (end < 0) throw new SignatureError(`not an armored SSH signature (no "${END}" line)`);
  const b64 = s.slice(BEGIN.length, end).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0)
    throw new SignatureError('malformed armored SSH signature: its body is not base64');
  if (b64 === '') throw new SignatureError('malformed armored SSH signature: empty');
  return Buffer.from(b64, 'base64');
}

/** Throw unless `sig` is a valid signature of `message` in `namespace`, the reason and key named. */
export function verifySshSig(sig: SshSig, message: Uint8Array, namespace = NAMESPACE): void {
  const fingerprint = sig.publicKey.fingerprint;
  if (sig.namespace !== namespace)
    throw new SignatureError(
      `signed for namespace ${JSON.stringify(sig.namespace)}, not ${JSON.stringify(namespace)}`,
      { fingerprint },
    );
  if (!isHashAlgorithm(sig.hashAlgorithm))
    throw new SignatureError(`unsupported hash algorithm ${JSON.stringify(sig.hashAlgorithm)}`, { fingerprint });
  let ok: boolean;
  try {
    ok = sig.publicKey.verify(toSign(namespace, sig.hashAlgorithm, message), sig.signature);
  } catch (err) {
    // A malformed inner signature is the signer's fault: name the key it claims.
    if (err instanceof SignatureError && err.fingerprint === undefined)
      throw new SignatureError(err.reason, { fingerprint, cause: err });
    throw err;
  }
  if (!ok) throw new SignatureError('signature does not match what it signs', { fingerprint });
}
