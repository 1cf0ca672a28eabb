/**
 * What `fspl queue-send` says: the sender's lines as things happen (send-queue.ts) and the run's
 * one-line summary at its end (the CLI), in the same words, each outcome once, counts with their
 * plurals right. A run that delivered nothing says why, not "sent 0 packets".
 */
import { plural } from '../base/plural.js';

/** What a run did and what it left (also `--json`'s document). */
export interface QueueSendSummary {
  to: string;
  /** Packets acknowledged by the receiver (including duplicates). */
  sent: number;
  /** Of those, how many it already had (sent again after a lost acknowledgement). */
  duplicates: number;
  connections: number;
  /** Packets left in the outbox. */
  waiting: number;
  /** The outbox's next number: the first packet not yet acknowledged. */
  next: bigint;
  /** Why packets wait although the host is reachable (the next number is missing, say). */
  blocked?: string;
  /** The last connection's failure, when the run ended on one (packets wait). */
  error?: string;
  /** Set when sending stopped for a problem that retrying can't fix. */
  stopped?: string;
}

/** `3 packets wait`, `1 packet waits`. */
export function packetsWait(n: number): string {
  return `${plural(n, 'packet')} ${n === 1 ? 'waits' : 'wait'}`;
}

/**
 * The packets acknowledged as duplicates, in words: the receiver had them already (their first
 * acknowledgement was lost), so it read the copies sent now and dropped them (receive-script.ts).
 */
export function duplicatesText(duplicates: number): string {
  if (duplicates === 0) return '';
  return (
    ` (${duplicates} of them sent again and dropped by the receiver, ` +
    `which had ${duplicates === 1 ? 'it' : 'them'} already)`
  );
}

/** One connection's outcome: `Sent 25 packets to ssh:b:/q over one connection; 0 packets wait`. */
export function sentLine(to: string, sent: number, duplicates: number, handed: boolean, waiting: number): string {
  const how = handed
    ? `Handed ${plural(sent, 'packet')} for ${to} to NNCP`
    : `Sent ${plural(sent, 'packet')}${duplicatesText(duplicates)} to ${to} over one connection`;
  return `${how}; ${packetsWait(waiting)}`;
}

/**
 * A run's summary in one line: what it delivered (or why nothing), what waits and the outbox's
 * next number. `handed`: through NNCP (packets handed over, not yet delivered); `watch`: the run
 * went on until stopped, so the counts are its totals.
 */
export function describeQueueSendSummary(s: QueueSendSummary, how: { handed: boolean; watch?: boolean }): string {
  const total = how.watch ? 'in all, ' : '';
  const head =
    s.sent === 0
      ? undefined
      : how.handed
        ? `${total}handed ${plural(s.sent, 'packet')} for ${s.to} ` +
          `to NNCP in ${plural(s.connections, 'batch', 'batches')}`
        : `${total}sent ${plural(s.sent, 'packet')}${duplicatesText(s.duplicates)} ` +
          `to ${s.to} over ${plural(s.connections, 'connection')}`;
  let what: string;
  if (s.stopped !== undefined)
    what = head ? `${head}, then stopped: ${s.stopped}` : `stopped sending to ${s.to}: ${s.stopped}`;
  else if (s.error !== undefined)
    what = head ? `${head}, then could not deliver: ${s.error}` : `cannot deliver to ${s.to}: ${s.error}`;
  else what = head ?? `nothing sent to ${s.to}`;
  const blocked = s.stopped === undefined && s.error === undefined && s.blocked ? `; ${s.blocked}` : '';
  return `${what}; ${packetsWait(s.waiting)}, next ${s.next}${blocked}`;
}
