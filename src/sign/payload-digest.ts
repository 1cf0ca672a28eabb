/**
 * A signed payload checked whole before its job runs (packet/signature.ts): its length against
 * the seal and its SHA-512 against the signed header. The command must not see a byte that was
 * not signed, so the check comes first, and the bytes checked are the bytes it gets: a job file
 * that someone else could still write to (its owner another user, or writable by group or
 * others) is copied as it is hashed into a nameless spool file of ours (spool.ts), and the
 * command reads the copy.
 */
import fs from 'node:fs';
import { SignatureError } from '../base/errors.js';
import type { PacketHeader } from '../packet/types.js';
import { readSomeSync, writeAllSync } from '../sys/io.js';
import { openSpoolSync } from '../sys/spool.js';
import { crypto } from './node-crypto.js';

const CHUNK = 1 << 20;
/** SHA-512 of no bytes. */
const EMPTY_SHA512 = Buffer.from(
  'cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce' +
    '47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e',
  'hex',
);
let shared: Buffer | undefined;

/** Where a checked payload is: the descriptor to give the job, from `offset`; close() frees a spool. */
export interface CheckedPayload {
  fd: number;
  offset: number;
  /** Whether it is our copy (close it when done; the job file's descriptor stays its owner's business). */
  spooled: boolean;
}

/** Whether only we (or root) can change this file's bytes from now on. */
function onlyOurs(st: fs.Stats): boolean {
  const uid = process.geteuid?.() ?? -1;
  return st.uid === uid && (st.mode & 0o022) === 0;
}

/**
 * Check the payload of a signed header held in `fd` from `offset` to its end (a job file, or a
 * stdin-process file): SignatureError unless it is exactly the signed bytes. Returns where the
 * job reads it (the file itself, or a copy: see above).
 */
export function checkPayloadFileSync(fd: number, offset: number, header: PacketHeader): CheckedPayload {
  const { seal, signature } = header;
  if (!seal || !signature) throw new SignatureError('not signed');
  const st = fs.fstatSync(fd);
  const size = st.size - offset;
  if (BigInt(size) !== seal.length) throw new SignatureError(`payload is ${size} bytes, signed as ${seal.length}`);
  // Nothing to copy or hash (prepare without -i, NOP and Fail packets): the digest of no bytes.
  if (size === 0) {
    if (!EMPTY_SHA512.equals(signature.sha512)) throw new SignatureError('payload does not match its signature');
    return { fd, offset, spooled: false };
  }
  const copy = onlyOurs(st) ? undefined : openSpoolSync();
  try {
    const hash = crypto().createHash('sha512');
    const buf = (shared ??= Buffer.allocUnsafe(CHUNK));
    let done = 0;
    while (done < size) {
      const r = readSomeSync(fd, buf, 0, Math.min(buf.length, size - done), offset + done);
      if (r === 0) break;
      hash.update(buf.subarray(0, r));
      // Positional writes: the copy's own offset stays at 0, where its reader starts.
      if (copy !== undefined) writeAllSync(copy, buf, 0, r, done);
      done += r;
    }
    if (done !== size) throw new SignatureError(`payload ended after ${done} of ${size} bytes while being checked`);
    if (!hash.digest().equals(signature.sha512)) throw new SignatureError('payload does not match its signature');
    return copy === undefined ? { fd, offset, spooled: false } : { fd: copy, offset: 0, spooled: true };
  } catch (err) {
    if (copy !== undefined) fs.closeSync(copy);
    throw err;
  }
}

/**
 * Check the payload of a signed header that is the rest of what `fd` gives (stdin-process): a
 * regular file from its offset (checkPayloadFileSync), anything else (a pipe) read whole into a
 * spool of ours as it is hashed; the job then reads the copy.
 */
export function checkPayloadRestSync(fd: number, offset: number | undefined, header: PacketHeader): CheckedPayload {
  if (offset !== undefined && fs.fstatSync(fd).isFile()) return checkPayloadFileSync(fd, offset, header);
  const { seal, signature } = header;
  if (!seal || !signature) throw new SignatureError('not signed');
  const copy = openSpoolSync();
  try {
    const digest = new PayloadDigest(header);
    const buf = (shared ??= Buffer.allocUnsafe(CHUNK));
    for (let done = 0; ; ) {
      const r = readSomeSync(fd, buf, 0, buf.length);
      if (r === 0) break;
      digest.update(buf.subarray(0, r));
      if (digest.seen > seal.length) throw new SignatureError(`payload runs past the ${seal.length} bytes signed`);
      writeAllSync(copy, buf, 0, r, done);
      done += r;
    }
    digest.finish();
    return { fd: copy, offset: 0, spooled: true };
  } catch (err) {
    fs.closeSync(copy);
    throw err;
  }
}

/** SHA-512 of a payload read as a stream, to compare with the signed one once it ends. */
export class PayloadDigest {
  private readonly hash = crypto().createHash('sha512');
  /** Bytes seen so far. */
  seen = 0n;
  constructor(private readonly header: PacketHeader) {}

  update(chunk: Uint8Array): void {
    this.seen += BigInt(chunk.length);
    this.hash.update(chunk);
  }

  /** SignatureError unless what passed is exactly the signed payload. */
  finish(): void {
    const { seal, signature } = this.header;
    if (!seal || !signature) throw new SignatureError('not signed');
    if (this.seen !== seal.length) throw new SignatureError(`payload is ${this.seen} bytes, signed as ${seal.length}`);
    if (!this.hash.digest().equals(signature.sha512)) throw new SignatureError('payload does not match its signature');
  }
}
