/**
 * Checking sealed jobs when they are processed (see packet/seal.ts). How depends on where the
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
import { Readable, pipeline } from 'node:stream';
import type { SealVerifier } from './packet/seal.js';
import { SealTransform } from './packet/seal-transform.js';
import { checkSealedFileSync, fdOffset } from './packet/sealed-copy.js';
import type { Seal } from './packet/types.js';
import type { OpenJob } from './queue.js';

export interface SealCheck {
  /** Why the job must not run: its payload already fails the seal. */
  refused?: string;
  /** The checked stream to give the command instead of the payload. */
  payload?: Readable;
  /** Judges the payload once it has been read (judgeSeal). */
  verifier?: SealVerifier;
}

function checkStream(payload: Readable, seal: Seal, soft: boolean): SealCheck {
  const checked = new SealTransform(seal, { soft });
  pipeline(payload, checked, () => {}); // errors and early destruction reach both ends
  return { payload: checked, verifier: checked.verifier };
}

/** stdin-process: check a sealed packet's payload on `fd` (after its header). */
export function checkSealedStdin(fd: number, seal: Seal | undefined): SealCheck | undefined {
  if (!seal) return undefined;
  if (fs.fstatSync(fd).isFile()) {
    const offset = fdOffset(fd);
    if (offset !== undefined) {
      const err = checkSealedFileSync(fd, offset, seal, false);
      return err ? { refused: err.message } : {};
    }
  }
  // A pipe: relay it through us so that it can be counted.
  return checkStream(relayStream(fd), seal, true);
}

/**
 * A queue job, once opened: a plain file's seal is checked from its size (and with `verify`,
 * its CRC-32); a decoded stream is wrapped when `wrapStream` (a command's, soft).
 */
export function checkSealedJob(opened: OpenJob, verify: boolean, wrapStream = true): SealCheck | undefined {
  const seal = opened.header.seal;
  if (!seal) return undefined;
  if (typeof opened.payload === 'number') {
    const err = checkSealedFileSync(opened.payload, opened.payloadOffset ?? 0, seal, verify);
    return err ? { refused: err.message } : {};
  }
  return wrapStream ? checkStream(opened.payload, seal, true) : {};
}

/** A function executor's payload stream, checked (failing with PayloadSealError) when sealed. */
export function sealChecked(payload: Readable, seal: Seal | undefined, check: SealCheck | undefined): Readable {
  if (!seal || !check) return payload;
  const c = checkStream(payload, seal, false);
  check.verifier = c.verifier;
  return c.payload!;
}

/** After the job ran: a payload that failed its seal fails the job, whatever the command said. */
export function judgeSeal<T extends { ok: boolean; why: string }>(outcome: T, check: SealCheck | undefined): T | { ok: false; why: string } {
  const failure = check?.verifier?.failure;
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

