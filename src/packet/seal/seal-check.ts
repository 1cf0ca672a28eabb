/**
 * Checking sealed jobs when they are processed (see seal.ts). How depends on where the
 * payload is:
 *
 * - a plain job file, whose descriptor the command inherits (we never see the bytes): its length
 *   is checked from the file size before the command runs, at no cost; with `verify` the payload
 *   is also read once for its CRC-32;
 * - stdin-process on a regular file: likewise, from the file size;
 * - a stream (a decoder's output, stdin-process on a pipe, a function executor's payload): the
 *   bytes are checked as they pass, and a bad payload fails the job after the command ran, never
 *   counting as a success. For a command the stream ends cleanly at the first problem (`soft`),
 *   so that it sees end of file; a function's stream fails with PayloadSealError.
 */
import fs from 'node:fs';
import { pipeline, Readable } from 'node:stream';
import type { Seal } from '../types.js';
import type { SealVerifier } from './seal.js';
import { SealTransform } from './seal-transform.js';
import { checkSealedFileSync, fdOffset } from './sealed-copy.js';

/** What a seal check needs of a job file opened at its payload (queue/types.ts PlainOpenJob is one). */
export interface SealedFile {
  readonly kind: 'plain';
  readonly header: { readonly seal?: Seal };
  readonly payload: number;
  readonly payloadOffset: number;
}

/** What a seal check needs of an opened job: a file, or a decoder's stream (queue/types.ts OpenJob is one). */
export type SealedJob =
  | SealedFile
  | { readonly kind: 'decoded'; readonly header: { readonly seal?: Seal }; readonly payload: Readable };

/**
 * What a seal check says of a job's payload, made once and never changed: the job must not run
 * (`refused`); nothing to check (`none`: no seal, or the payload not given); checked whole
 * before the job runs (`checked`: a file, from its size); or checked as it is read (`watching`:
 * the stream to give the executor instead of the payload, judged once read, judgeSeal).
 */
export type SealGuard =
  | { readonly kind: 'refused'; readonly why: string }
  | { readonly kind: 'none' }
  | { readonly kind: 'checked' }
  | { readonly kind: 'watching'; readonly payload: Readable; readonly verifier: SealVerifier };

/** The guard of a payload that has no seal, or is not given to the job. */
export const NO_SEAL: SealGuard = Object.freeze({ kind: 'none' });
const CHECKED: SealGuard = Object.freeze({ kind: 'checked' });

/** A checked file's verdict: checkSealedFileSync's error, or none. */
function fileVerdict(err: Error | undefined): SealGuard {
  return err ? { kind: 'refused', why: err.message } : CHECKED;
}

/** A stream checked as it passes: `soft` ends it cleanly at the first problem (a command's), else it fails. */
export function watchStream(payload: Readable, seal: Seal | undefined, soft: boolean): SealGuard {
  if (!seal) return NO_SEAL;
  const checked = new SealTransform(seal, { soft });
  pipeline(payload, checked, () => {}); // errors and early destruction reach both ends
  return { kind: 'watching', payload: checked, verifier: checked.verifier };
}

/** stdin-process: check a sealed packet's payload on `fd` (after its header). */
export function checkSealedStdin(fd: number, seal: Seal | undefined): SealGuard {
  if (!seal) return NO_SEAL;
  if (fs.fstatSync(fd).isFile()) {
    const offset = fdOffset(fd);
    if (offset !== undefined) return fileVerdict(checkSealedFileSync(fd, offset, seal, false));
  }
  // A pipe: relay it through us so that it can be counted.
  return watchStream(relayStream(fd), seal, true);
}

/**
 * A queue job, once opened: a plain file's seal is checked from its size (and with `verify`, its
 * CRC-32); a decoded stream is watched as a command reads it (soft).
 */
export function checkSealedJob(opened: SealedJob, verify: boolean): SealGuard {
  if (opened.kind === 'decoded') return watchStream(opened.payload, opened.header.seal, true);
  return checkSealedFile(opened, verify);
}

/** A plain job file's seal, checked from its size (and with `verify`, its CRC-32). */
export function checkSealedFile(opened: SealedFile, verify: boolean): SealGuard {
  const seal = opened.header.seal;
  return seal ? fileVerdict(checkSealedFileSync(opened.payload, opened.payloadOffset, seal, verify)) : NO_SEAL;
}

/** The payload to give the executor: the watched stream, if the guard watches one. */
export function guardedPayload<P extends number | Readable>(guard: SealGuard, payload: P): P | Readable {
  return guard.kind === 'watching' ? guard.payload : payload;
}

/** After the job ran: a payload that failed its seal fails the job, whatever the command said. */
export function judgeSeal<T extends { ok: boolean; why: string }>(
  outcome: T,
  guard: SealGuard,
): T | { ok: false; why: string } {
  const failure = guard.kind === 'watching' ? guard.verifier.failure : undefined;
  if (!failure) return outcome;
  return { ok: false, why: `payload failed its seal: ${failure.message}` };
}

/**
 * A readable over a descriptor we inherited (a pipe, usually). Unlike fs.createReadStream it
 * waits out EAGAIN, since an inherited pipe may be non-blocking. Reads run on libuv's pool, so
 * the event loop (timeouts, the child's pipe) keeps going while it waits for input.
 */
function relayStream(fd: number): Readable {
  return new Readable({
    highWaterMark: 1 << 20,
    read(size) {
      const buf = Buffer.allocUnsafe(Math.max(size, 65536));
      fs.read(fd, buf, 0, buf.length, null, (err, n) => {
        if (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR') {
            setTimeout(() => this._read(size), 2);
            return;
          }
          this.destroy(err);
          return;
        }
        this.push(n === 0 ? null : buf.subarray(0, n));
      });
    },
  });
}
