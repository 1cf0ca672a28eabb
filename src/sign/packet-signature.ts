/**
 * A packet's signature (packet/signature.ts says where it travels and what it signs): made by
 * prepare-signed.ts, judged here by checkHeaderSignature against the allowed signers (its
 * payload by payload-digest.ts), and shown (stdin-signature, listings).
 */
import { SignatureError } from '../base/errors.js';
import { sameSignedContent, signedMessage } from '../packet/codec.js';
import type { PacketHeader } from '../packet/types.js';
import type { AllowedSigners } from './allowed-signers.js';
import { armor, NAMESPACE, parseSshSig, type SshSig, verifySshSig } from './sshsig.js';

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
  const blob = Buffer.from(signature.sshsig.buffer, signature.sshsig.byteOffset, signature.sshsig.byteLength);
  const key = blob.toString('latin1');
  const known = verified.get(key);
  const sig = known?.sig ?? parseSshSig(blob);
  // The signers are asked every time: a line's validity is judged at the time of each check.
  const { principal } = signers.check(sig.publicKey, NAMESPACE, at);
  if (!known || !sameSignedContent(known.header, header)) {
    verifySshSig(sig, signedMessage(header, signature.sha512), NAMESPACE);
    if (verified.size >= VERIFIED_MAX) verified.clear();
    verified.set(key, { sig, header });
  }
  return { principal, fingerprint: sig.publicKey.fingerprint };
}

/**
 * Signatures verified lately, by their bytes, with the header each was verified over: a queue
 * checks each header twice (at the scan, and just before it runs), and the second time is free.
 */
const verified = new Map<string, { sig: SshSig; header: PacketHeader }>();
const VERIFIED_MAX = 4096;

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

/** The fingerprint of the key a header claims to be signed by, unchecked (for listings). */
export function claimedSigner(header: PacketHeader): string | undefined {
  if (!header.signature) return undefined;
  try {
    return parseSshSig(header.signature.sshsig).publicKey.fingerprint;
  } catch {
    return undefined;
  }
}
