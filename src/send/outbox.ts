/**
 * An outbox being emptied: the part that the nets' senders (src/net/hosts/outbox-sender.ts) and
 * `fspl queue-send` (send-queue.ts) share. An outbox is a local Filespooler queue; its own
 * `nextseq`, held under its lock as `queue-process` holds it, is the first number not yet
 * acknowledged by the delivery (delivery.ts). Each sender keeps its own loop and words (what it
 * retries, when it stops); this holds the packets, the watcher, and the acknowledgement protocol.
 *
 * Acknowledged packets leave the outbox in groups (up to ACK_GROUP, and whenever a delivery
 * ends), durable in this order:
 *
 *   | step                                        | durable once                              |
 *   | ------------------------------------------- | ----------------------------------------- |
 *   | nextseq past the group's last packet        | SeqFile.write: its temp file's fsync, the |
 *   |                                             | rename, then the outbox directory's fsync |
 *   | the group's files deleted                   | never fsynced (see below)                 |
 *
 * A crash (or power cut) before nextseq is durable leaves the group's packets at or above
 * nextseq: they go again, and the far side drops them (ssh: `dup`; NNCP: its received ranges). A
 * crash after it leaves files below nextseq, which the next look deletes and never sends: an
 * unlink a power cut takes back does no harm. So nothing is lost or doubled, and a group costs
 * one nextseq write (two fsyncs) instead of one per packet.
 */
import fs from 'node:fs';
import type { Logger } from '../base/log.js';
import { type JobEntry, Queue } from '../queue/queue.js';
import { JobsWatcher } from '../queue/watch.js';
import type { SeqFile } from '../sys/seqfile.js';
import type { OutgoingPacket } from './delivery.js';
import { packetId } from './frames.js';
import type { SenderProgress } from './sender-state.js';

/** Acknowledged packets taken off the outbox together (one nextseq write). */
export const ACK_GROUP = 64;

/** Packets given to one delivery at most. */
export const BATCH_PACKETS = 1000;

/** What a look at the outbox found. */
export interface Due {
  /** The packets that may go now: consecutive numbers from nextseq. */
  packets: OutgoingPacket[];
  /** The outbox's nextseq at the look. */
  next: bigint;
  /** The packets at or above nextseq, by number (two files may hold one number). */
  bySeq: ReadonlyMap<bigint, readonly JobEntry[]>;
  /** Packets kept below nextseq (never sent: already past). */
  below: number;
  /** Set when two files hold the next number to send: sending either could lose the other. */
  twice?: readonly JobEntry[];
}

export class OutboxDrain {
  readonly queue: Queue;
  private entries = new Map<string, JobEntry>();
  private consumer?: SeqFile;
  private acked: OutgoingPacket[] = [];
  private dirty = true;
  private wake?: () => void;
  private watcher?: JobsWatcher;
  /** Packets acknowledged (and of those, already there) since this drain was made. */
  sent = 0;
  duplicates = 0;
  lastSentAt?: number;
  /** The last packet acknowledged. */
  lastSent?: OutgoingPacket;

  constructor(
    dir: string,
    private readonly log: Logger,
  ) {
    this.queue = new Queue(dir);
  }

  /** Packets in the outbox, as last seen. */
  get waiting(): number {
    return this.entries.size;
  }

  /** The counters as a sender's state file says them (sender-state.ts). */
  get progress(): Pick<SenderProgress, 'sent' | 'duplicates' | 'lastSentAt' | 'lastSent'> {
    const p = this.lastSent;
    return {
      sent: this.sent,
      duplicates: this.duplicates,
      lastSentAt: this.lastSentAt,
      lastSent: p && { seq: p.seq.toString(), id: p.id },
    };
  }

  /** Look at the outbox again (only new files are read) and count every packet in it. */
  async recount(): Promise<number> {
    this.entries = await this.queue.rescan(this.entries);
    return this.entries.size;
  }

  /** Take the outbox: its nextseq is held under `consumer`'s lock until release(). */
  hold(consumer: SeqFile): void {
    this.consumer = consumer;
  }

  /** The outbox's nextseq (1 before it is held). */
  get next(): bigint {
    return this.consumer?.read() ?? 1n;
  }

  /** Wake sleep() whenever a packet arrives, until `signal` aborts. */
  watch(signal: AbortSignal, pollInterval?: number): void {
    const watcher = new JobsWatcher(this.queue.jobsDir, { pollInterval, safetyInterval: 5, logger: this.log });
    this.watcher = watcher;
    void (async () => {
      while (await watcher.wait(signal)) this.poke();
    })();
  }

  /** Let sleep() return (new packets, or a stop). */
  readonly poke = (): void => {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  /** Until the outbox changes, or poke() (a stop). */
  sleep(): Promise<void> {
    return new Promise((resolve) => {
      if (this.dirty) return resolve();
      this.wake = resolve;
    });
  }

  /**
   * Look at the outbox: the packets that may go now. A packet below nextseq for which `spent` says
   * true is deleted (acknowledged, but its sender stopped before deleting it); when deleting fails
   * and `keep(err)` says so (a failing disk), it stays for the next look: it is below nextseq, and
   * never sent again.
   */
  async look(
    spent: (seq: bigint, next: bigint) => boolean,
    max = BATCH_PACKETS,
    keep: (err: unknown) => boolean = () => false,
  ): Promise<Due> {
    this.dirty = false;
    this.entries = await this.queue.rescan(this.entries);
    const next = this.next;
    const bySeq = new Map<bigint, JobEntry[]>();
    let below = 0;
    for (const e of [...this.entries.values()]) {
      if (e.header.seq >= next) bySeq.set(e.header.seq, [...(bySeq.get(e.header.seq) ?? []), e]);
      else if (spent(e.header.seq, next)) {
        try {
          fs.rmSync(this.queue.jobPath(e.filename), { force: true });
          this.entries.delete(e.filename);
        } catch (err) {
          if (!keep(err)) throw err;
        }
      } else below++;
    }
    const packets: OutgoingPacket[] = [];
    for (let s = next; packets.length < max; s++) {
      const found = bySeq.get(s);
      if (!found) break;
      if (found.length > 1) return { packets, next, bySeq, below, twice: packets.length > 0 ? undefined : found };
      packets.push({ path: this.queue.jobPath(found[0]!.filename), id: packetId(found[0]!.filename), seq: s });
    }
    return { packets, next, bySeq, below };
  }

  /** A packet acknowledged by the delivery (in order): it leaves with its group (see above). */
  ack(p: OutgoingPacket, duplicate: boolean): void {
    this.acked.push(p);
    this.sent++;
    if (duplicate) this.duplicates++;
    this.lastSentAt = Date.now();
    this.lastSent = p;
    if (this.acked.length >= ACK_GROUP) this.flush();
  }

  /**
   * The acknowledged packets off the outbox: nextseq past them (durable), then their files. Call
   * it when a delivery ends, before anything else looks at the outbox. A disk that fails here
   * throws, and leaves the group to be sent again.
   */
  flush(): void {
    const group = this.acked;
    if (group.length === 0) return;
    this.acked = []; // written or not, they are done with: a group not written goes again
    this.consumer!.write(group[group.length - 1]!.seq + 1n);
    for (const p of group) {
      fs.rmSync(p.path, { force: true });
      this.entries.delete(p.path.slice(this.queue.jobsDir.length + 1));
    }
  }

  /** Forget acknowledgements not flushed (their packets go again), stop watching, let the outbox go. */
  release(): void {
    this.acked = [];
    this.watcher?.close();
    this.watcher = undefined;
    this.consumer?.release();
    this.consumer = undefined;
  }
}

/**
 * Whether a packet below nextseq may be a leftover of the last group taken off the outbox (its
 * number moved past, the sender stopped before every file was deleted). A group is consecutive
 * numbers ending just below nextseq, at most ACK_GROUP of them, and it is cleared before another
 * is sent: older numbers below nextseq were never sent from here (put there by hand, or numbered
 * twice).
 */
export function inLastGroup(seq: bigint, next: bigint): boolean {
  return seq < next && next - seq <= BigInt(ACK_GROUP);
}
