/**
 * Storing a packet only if its signature lets it in (`queue-write --allowed-signers`): the
 * header is judged before a byte is stored, the payload hashed as it is copied, and the verdict
 * given before the job is renamed into jobs/ (job-write.ts removes the temporary file on any
 * error): a refused packet is never stored, and the exit is non-zero.
 */
import { BadPacketError, SignatureError } from '../base/errors.js';
import { cutInHeader, decodeMetadata, decodePrefix, PREFIX_LENGTH, shortOfPrefix } from '../packet/codec.js';
import { SealVerifier } from '../packet/seal/seal.js';
import { readSomeSync, readUpToSync, writeAllSync } from '../sys/io.js';
import type { AllowedSigners } from './allowed-signers.js';
import { refusalError } from './judge.js';
import { checkHeaderSignature } from './packet-signature.js';
import { PayloadDigest } from './payload-digest.js';

const CHUNK = 1 << 20;

/** Copy the packet on inFd to outFd if its signature lets it in; SignatureError (nothing to keep) if not. */
export function copySignedPacketSync(inFd: number, outFd: number, signers: AllowedSigners): number {
  const prefix = readUpToSync(inFd, PREFIX_LENGTH);
  if (prefix.length < PREFIX_LENGTH) throw shortOfPrefix(prefix);
  let p: ReturnType<typeof decodePrefix>;
  try {
    p = decodePrefix(prefix);
  } catch (err) {
    if (!(err instanceof BadPacketError)) throw err;
    throw new SignatureError(
      `input is not a plain packet (${err.message}): only a packet's signature can be checked as it is stored`,
    );
  }
  const meta = readUpToSync(inFd, p.metadataLength);
  if (meta.length < p.metadataLength) throw cutInHeader(PREFIX_LENGTH + meta.length);
  const header = decodeMetadata(meta, p.metadataCrc);
  try {
    checkHeaderSignature(header, signers);
  } catch (err) {
    if (err instanceof SignatureError) throw refusalError(header.seq, err);
    throw err;
  }
  writeAllSync(outFd, prefix);
  writeAllSync(outFd, meta);
  const digest = new PayloadDigest(header);
  const seal = new SealVerifier(header.seal!);
  const buf = Buffer.allocUnsafe(CHUNK);
  for (;;) {
    const r = readSomeSync(inFd, buf, 0, buf.length);
    if (r === 0) break;
    const chunk = buf.subarray(0, r);
    seal.update(chunk); // throws as soon as it runs past the signed length
    digest.update(chunk);
    writeAllSync(outFd, chunk);
  }
  try {
    digest.finish(); // first: a payload that is not the signed one is said so, whatever its seal says
    seal.finish();
  } catch (err) {
    const why = err instanceof SignatureError ? err : new SignatureError((err as Error).message);
    throw refusalError(header.seq, why);
  }
  return PREFIX_LENGTH + meta.length + seal.seen;
}
