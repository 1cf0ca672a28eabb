/**
 * Retries and failed jobs in the header (an extension): two more metadata keys after the
 * reference's, which it reads by name and ignores the rest of (as it does the seal's, seal.ts):
 *
 *   retries    unsigned integer: how many more times its sender lets a failing job be tried
 *              (`prepare --retries N`); queue-process --retries caps it, and without that option
 *              it means nothing
 *   failed     map, on a packet queue-process --failed-to moved to a failed-jobs queue: the
 *              facts of its failure, `queue` (str, the directory it failed in), `seq` (uint, its
 *              number there), `attempts` (uint), `outcome` (str: failure or timeout), `why`
 *              (str, the last try's end in words), `at` (str, RFC 3339 UTC), and with
 *              --output-to SaveBoth `tail` (str, the last lines of the job's output)
 *
 * A key of the wrong shape makes the packet a bad packet, as a bad seal does.
 */
import { BadPacketError } from '../base/errors.js';
import type { MsgpackWriter } from './msgpack.js';
import type { FailureFacts, PacketHeader } from './types.js';

export const RETRIES_KEY = 'retries';
export const FAILED_KEY = 'failed';

/** The largest retries a header may ask for (a 32-bit count: no one retries more). */
const RETRIES_MAX = 0xffff_ffffn;

function bad(what: string): never {
  throw new BadPacketError(`Invalid packet metadata: ${what}`);
}

function int(v: unknown): bigint | undefined {
  return typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined;
}

/** How many of these keys a header has (for its map's length). */
export function retryKeyCount(header: PacketHeader): number {
  return (header.retries === undefined ? 0 : 1) + (header.failure ? 1 : 0);
}

/** Write the keys a header has, after the others. */
export function writeRetryKeys(w: MsgpackWriter, header: PacketHeader): void {
  const { retries, failure } = header;
  if (retries !== undefined) {
    if (retries < 0n || retries > RETRIES_MAX) throw new RangeError('retries must be an unsigned 32-bit integer');
    w.str(RETRIES_KEY);
    w.uint(retries);
  }
  if (failure) {
    w.str(FAILED_KEY);
    w.mapHeader(failure.tail === undefined ? 6 : 7);
    w.str('queue');
    w.str(failure.queue);
    w.str('seq');
    w.uint(failure.seq);
    w.str('attempts');
    w.uint(failure.attempts);
    w.str('outcome');
    w.str(failure.outcome);
    w.str('why');
    w.str(failure.why);
    w.str('at');
    w.str(failure.at);
    if (failure.tail !== undefined) {
      w.str('tail');
      w.str(failure.tail);
    }
  }
}

/** Read the keys from a decoded metadata object into the header. */
export function interpretRetryKeys(o: Record<string, unknown>, header: PacketHeader): void {
  if (Object.hasOwn(o, RETRIES_KEY)) {
    const n = int(o[RETRIES_KEY]);
    if (n === undefined || n < 0n || n > RETRIES_MAX) bad(`${RETRIES_KEY} is not an unsigned 32-bit integer`);
    header.retries = n;
  }
  if (Object.hasOwn(o, FAILED_KEY)) header.failure = interpretFailure(o[FAILED_KEY]);
}

function interpretFailure(v: unknown): FailureFacts {
  const m = v instanceof Map ? Object.fromEntries(v) : v;
  if (!m || typeof m !== 'object' || Array.isArray(m) || m instanceof Uint8Array)
    return bad(`${FAILED_KEY} is not a map`);
  const o = m as Record<string, unknown>;
  const text = (k: string): string =>
    typeof o[k] === 'string' ? (o[k] as string) : bad(`${FAILED_KEY}.${k} is not a string`);
  const seq = int(o.seq);
  const attempts = int(o.attempts);
  if (seq === undefined || seq < 0n || seq > 0xffff_ffff_ffff_ffffn)
    bad(`${FAILED_KEY}.seq is not an unsigned 64-bit integer`);
  if (attempts === undefined || attempts < 0n || attempts > RETRIES_MAX + 1n)
    bad(`${FAILED_KEY}.attempts is not a count`);
  const outcome = text('outcome');
  if (outcome !== 'failure' && outcome !== 'timeout') bad(`${FAILED_KEY}.outcome is neither failure nor timeout`);
  const facts: FailureFacts = {
    queue: text('queue'),
    seq: seq!,
    attempts: Number(attempts),
    outcome,
    why: text('why'),
    at: text('at'),
  };
  if (Object.hasOwn(o, 'tail')) facts.tail = text('tail');
  return facts;
}
