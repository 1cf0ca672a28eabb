/**
 * Signing many headers with one plain (unencrypted) key, loaded once: a net run signs every token
 * it sends to another host (src/net/place/signatures.ts), on the event loop, with no agent and no
 * command to wait for. Each signature is checked as a verifier will check it, as signer.ts does.
 */
import type crypto from 'node:crypto';
import { SignatureError } from '../base/errors.js';
import { signedMessage } from '../packet/codec.js';
import type { PacketHeader } from '../packet/types.js';
import { loadPrivateKey, signRaw, whyNoKey } from './private-key.js';
import type { PublicKey } from './public-key.js';
import { encodeSshSig, NAMESPACE, parseSshSig, toSign, verifySshSig } from './sshsig.js';

const HASH = 'sha512';

export class HeaderSigner {
  private constructor(
    private readonly key: crypto.KeyObject,
    readonly publicKey: PublicKey,
    readonly path: string,
  ) {}

  /** The key at `path`, which must be a private key without a passphrase (SignatureError saying why not). */
  static load(path: string): HeaderSigner {
    const loaded = loadPrivateKey(path);
    if (loaded.kind !== 'plain')
      throw new SignatureError(`${path} can not sign unattended (${whyNoKey(loaded.kind)})`, {
        fingerprint: loaded.publicKey.fingerprint,
      });
    return new HeaderSigner(loaded.key, loaded.publicKey, path);
  }

  /** A sealed header, signed for a payload whose SHA-512 is `sha512`. */
  sign(header: PacketHeader, sha512: Uint8Array): PacketHeader {
    if (!header.seal) throw new SignatureError('a signed packet must be sealed');
    const message = signedMessage(header, sha512);
    const raw = signRaw(this.key, this.publicKey, toSign(NAMESPACE, HASH, message));
    const blob = encodeSshSig(this.publicKey.blob, NAMESPACE, HASH, raw);
    verifySshSig(parseSshSig(blob), message);
    return { ...header, signature: { sha512: Buffer.from(sha512), sshsig: blob } };
  }
}
