/**
 * Signed packets (an extension): a sealed packet (seal.ts) may also carry the SHA-512 of its
 * payload and an OpenSSH signature (SSHSIG, namespace `fspl`) of everything in its header, so
 * that a queue can run only what its known senders signed (src/sign/ checks the signature).
 *
 * The two keys come after the seal's, in the MessagePack metadata map:
 *
 *   payload_sha512  bin 8, 64 bytes: SHA-512 of the payload
 *   sshsig          bin 8/16: the binary SSHSIG (PROTOCOL.sshsig; not armored)
 *
 * What is signed (signedMessage, what `fspl stdin-signature --data` prints) is the packet's
 * metadata as fspl encodes it without the `sshsig` key: the map of the six other keys, seq,
 * ctime, cmd_type, payload_len, payload_crc32 and payload_sha512, in that order. It is encoded
 * again from the decoded header, so a header written otherwise (another key order, say) is
 * judged by what it means, never by its bytes. The reference reads its keys by name and ignores
 * the rest, so signed packets stay readable by it (docs/compatibility.md).
 */
import { BadPacketError } from '../base/errors.js';
import type { PacketSignature, Seal } from './types.js';

export const SHA512_KEY = 'payload_sha512';
export const SSHSIG_KEY = 'sshsig';
export const SHA512_LENGTH = 64;

/** The signature of a decoded metadata document, if it has one; BadPacketError if it is malformed. */
export function interpretSignature(o: Record<string, unknown>, seal: Seal | undefined): PacketSignature | undefined {
  const has = (k: string) => Object.hasOwn(o, k);
  if (!has(SHA512_KEY) && !has(SSHSIG_KEY)) return undefined;
  const bad = (what: string): never => {
    throw new BadPacketError(`Invalid packet metadata: ${what}`);
  };
  if (!has(SHA512_KEY) || !has(SSHSIG_KEY)) bad(`a signature needs both ${SHA512_KEY} and ${SSHSIG_KEY}`);
  if (!seal) bad('a signed packet must be sealed');
  const sha512 = o[SHA512_KEY];
  const sshsig = o[SSHSIG_KEY];
  if (!(sha512 instanceof Uint8Array) || sha512.length !== SHA512_LENGTH)
    bad(`${SHA512_KEY} is not ${SHA512_LENGTH} bytes`);
  if (!(sshsig instanceof Uint8Array) || sshsig.length === 0) bad(`${SSHSIG_KEY} is not a byte string`);
  // Copies: the decoder may return views into its input.
  return { sha512: Buffer.from(sha512 as Uint8Array), sshsig: Buffer.from(sshsig as Uint8Array) };
}
