/**
 * Judging a packet's signature before it runs or is stored, for a queue, a stdin-process or a
 * receiver with allowed signers: its header as read now, from the descriptor that will feed the
 * command (not the scan's copy, which its writer may have changed since), then its payload whole.
 * Nothing of a packet that fails reaches its command, and it never takes its number: a queue
 * moves it to refused/ (process/queue-run.ts), a receiver too; stdin-process and queue-write
 * refuse it.
 */
import { SignatureError } from '../base/errors.js';
import type { PacketHeader } from '../packet/types.js';
import type { AllowedSigners } from './allowed-signers.js';
import { checkHeaderSignature, type Signer } from './packet-signature.js';
import { type CheckedPayload, checkPayloadFileSync } from './payload-digest.js';

/** A signed job's verdict: refused (why, in one line), or let in, with its signer and its checked payload. */
export type SignedVerdict =
  | { readonly kind: 'refused'; readonly why: string }
  | { readonly kind: 'signed'; readonly signer: Signer; readonly payload: CheckedPayload };

/** Why a packet is refused, in one line: its number, the reason and the key (if the reason does not name it). */
export function refusalNote(seq: bigint, err: SignatureError): string {
  const key = err.fingerprint && !err.reason.includes(err.fingerprint) ? ` (key ${err.fingerprint})` : '';
  return `packet ${seq} refused: ${err.reason}${key}`;
}

/** The same refusal as an error to throw (queue-write, stdin-process), with the key's fingerprint. */
export function refusalError(seq: bigint, err: SignatureError): SignatureError {
  return new SignatureError(refusalNote(seq, err), { fingerprint: err.fingerprint });
}

/**
 * Judge a job whose header was read from `fd` (its payload from `offset`): signed by an allowed
 * key, numbered `seq` as it was listed (when listed), its payload the signed one. Only
 * SignatureError is a refusal; other errors (reading) are thrown.
 */
export function judgeSignedFile(
  header: PacketHeader,
  fd: number,
  offset: number,
  signers: AllowedSigners,
  seq?: bigint,
): SignedVerdict {
  try {
    if (seq !== undefined && header.seq !== seq)
      throw new SignatureError(`its header changed since it was listed (number ${header.seq}, listed as ${seq})`);
    const signer = checkHeaderSignature(header, signers);
    return { kind: 'signed', signer, payload: checkPayloadFileSync(fd, offset, header) };
  } catch (err) {
    if (err instanceof SignatureError) return { kind: 'refused', why: refusalNote(seq ?? header.seq, err) };
    throw err;
  }
}

/** Judge a header alone (a scan's): the signer, or why it is refused. */
export function judgeSignedHeader(
  header: PacketHeader,
  signers: AllowedSigners,
): { signer: Signer; why?: undefined } | { why: string; signer?: undefined } {
  try {
    return { signer: checkHeaderSignature(header, signers) };
  } catch (err) {
    if (err instanceof SignatureError) return { why: refusalNote(header.seq, err) };
    throw err;
  }
}
