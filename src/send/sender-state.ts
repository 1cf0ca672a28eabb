/**
 * An outbox sender's state file, OUTBOX/sender.json: what the sender of an outbox did and what
 * holds it up, for `fspl queue-send --status` and `fspl net status` (the nets' outboxes). It is
 * replaced whole (a temporary file renamed over it), so that a reader never sees half of one.
 *
 * Not fsynced, on purpose: it is a report, and no packet depends on it (the outbox's nextseq and
 * its files are the truth). A power cut may roll it back, or leave an empty file, which readers
 * take for "no state"; the next sender rewrites it at its first step.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../base/log.js';
import { writeFresh } from '../sys/untrusted.js';

/** What every sender says of itself, beside where it sends (its destination's fields). */
export interface SenderProgress {
  pid: number;
  /** When the file was last written (ms since the epoch). */
  updatedAt: number;
  /** Packets acknowledged (and taken off the outbox) by this sender's run. */
  sent: number;
  /** Of those, how many the receiver already had (sent again after a lost acknowledgement). */
  duplicates: number;
  lastSentAt?: number;
  /** The last packet acknowledged: its number (decimal, a u64) and identity. */
  lastSent?: { seq: string; id: string };
  /** Set while deliveries fail: since when, how many tries in a row, the last error. */
  failing?: { since: number; attempts: number; error: string };
  /** Set when the sender gave up on a problem that retrying can't fix; the packets stay. */
  stopped?: { at: number; error: string };
  /** Why the packets in the outbox wait although the way works (a missing number, two with one). */
  blocked?: string;
}

/** A sender's state: where it sends (`D`: the nets' host and directory, queue-send's `to`), and its progress. */
export type SenderState<D extends object> = D & SenderProgress;

export function senderStatePath(outbox: string): string {
  return path.join(outbox, 'sender.json');
}

/** The state last written, or undefined when there is none (or it is unreadable: a power cut's empty file). */
export function readSenderState<D extends object>(outbox: string): SenderState<D> | undefined {
  try {
    return JSON.parse(fs.readFileSync(senderStatePath(outbox), 'utf8')) as SenderState<D>;
  } catch {
    return undefined;
  }
}

/** Replace the state file (not fsynced: the module's comment says why). A failure is only logged. */
export function writeSenderState(outbox: string, state: SenderState<object>, log?: Logger): void {
  state.updatedAt = Date.now();
  const file = senderStatePath(outbox);
  try {
    writeFresh(`${file}.tmp`, JSON.stringify(state), 0o666);
    fs.renameSync(`${file}.tmp`, file);
  } catch (err) {
    log?.debug('send', () => `Cannot write ${file}: ${(err as Error).message}`);
  }
}
