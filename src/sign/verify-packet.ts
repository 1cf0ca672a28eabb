/**
 * verifyPacket, for the library: judge a whole packet against allowed signers, as a queue with
 * allowed signers judges its jobs (judge.ts), without running or storing anything.
 */
import { SignatureError } from '../base/errors.js';
import { type PacketSource, readPacket } from '../packet/stream.js';
import type { PacketHeader } from '../packet/types.js';
import type { AllowedSigners } from './allowed-signers.js';
import { checkHeaderSignature, type Signer } from './packet-signature.js';
import { PayloadDigest } from './payload-digest.js';

/**
 * Read a packet (a stream, bytes, a file, a descriptor) to its end and check its signature: its
 * header signed by a key the allowed signers name for namespace `fspl` now, its payload the
 * signed bytes. Resolves to the header and who signed it; rejects with SignatureError
 * (ERR_SIGNATURE) saying why not, or BadPacketError if it is no packet.
 */
export async function verifyPacket(
  source: PacketSource,
  allowedSigners: AllowedSigners,
): Promise<{ header: PacketHeader; signer: Signer }> {
  const packet = await readPacket(source);
  let signer: Signer;
  try {
    signer = checkHeaderSignature(packet.header, allowedSigners);
  } catch (err) {
    packet.payload.destroy();
    throw err;
  }
  const digest = new PayloadDigest(packet.header);
  try {
    for await (const chunk of packet.payload) digest.update(chunk as Buffer);
  } catch (err) {
    throw new SignatureError(`payload is not the signed one: ${(err as Error).message}`, { cause: err });
  }
  digest.finish();
  return { header: packet.header, signer };
}
