/**
 * A packet's signature (packet/signature.ts says where it travels and what it signs): made by
 * prepare-signed.ts, judged here by checkHeaderSignature against the allowed signers (its
 * payload by payload-digest.ts), and shown (stdin-signature, listings).
 */
import { SignatureError } from '../base/errors.js';
import { signedMessage } from '../packet/codec.js';
import type { PacketHeader } from '../packet/types.js';
import type { AllowedSigners } from './allowed-signers.js';
import { armor, NAMESPACE, parseSshSig, verifySshSig } from './sshsig.js';

/** Who signed a packet, as the allowed signers name them. */
export interface Signer {
  /** The principals field of the allowed_signers line that lets the key in (FSPL_JOB_SIGNER). */
  principal: string;
  /** The key's fingerprint, `SHA256:…` (FSPL_JOB_SIGNER_KEY). */
  fingerprint: string;
}

/**
 * Whether a header's signature lets its packet in: signed, by a key the allowed signers name for
 * namespace `fspl` at `at`, over exactly this header. The payload is checked apart (PayloadDigest).
 * Throws SignatureError saying why not.
 */
export function checkHeaderSignature(header: PacketHeader, signers: AllowedSigners, at: Date = new Date()): Signer {
  const signature = header.signature;
  if (!signature) throw new SignatureError('not signed');
  const sig = parseSshSig(signature.sshsig);
  const fingerprint = sig.publicKey.fingerprint;
  const { principal } = signers.check(sig.publicKey, NAMESPACE, at);
  verifySshSig(sig, signedMessage(header, signature.sha512), NAMESPACE);
  return { principal, fingerprint };
}

/** A signed header's signature, armored as `ssh-keygen -Y sign` writes it (`fspl stdin-signature`). */
export function armoredSignature(header: PacketHeader): string {
  if (!header.signature) throw new SignatureError(`packet ${header.seq} is not signed`);
  return armor(header.signature.sshsig);
}

/** The exact bytes a signed header's signature signs (`fspl stdin-signature --data`). */
export function signedData(header: PacketHeader): Buffer {
  if (!header.signature) throw new SignatureError(`packet ${header.seq} is not signed`);
  return signedMessage(header, header.signature.sha512);
}

/** The fingerprint of the key a header claims to be signed by, unchecked (for listings); undefined if unsigned or unreadable. */
export function claimedSigner(header: PacketHeader): string | undefined {
  if (!header.signature) return undefined;
  try {
    return parseSshSig(header.signature.sshsig).publicKey.fingerprint;
  } catch {
    return undefined;
  }
}
