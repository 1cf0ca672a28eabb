/**
 * `fspl queue-send`: an outbox for plain queues. Packets are written into a local queue, the
 * outbox (`fspl prepare ... | fspl queue-write -q OUTBOX`: writing never waits for the network),
 * and this sender empties it into a queue on another host, over ssh, in sequence order, many
 * packets over one connection (ssh-send.ts), each exactly once: the receiver (receive-script.ts)
 * stores each packet under its own name and drops one numbered below what it already received.
 *
 * The order/acknowledgement/removal protocol is the nets' outboxes' (src/net/hosts/outbox-sender.ts):
 * the outbox's own `nextseq` (under its lock, as `queue-process` holds it) is the first number not
 * yet acknowledged. A packet is removed only once the receiver acknowledged it: `nextseq` moved past
 * it (durable, SeqFile.write), then its file deleted. A crash between the two leaves the file one
 * number below `nextseq`, which the next run deletes; a crash before `nextseq` moved sends it again,
 * and the receiver drops it. So nothing is lost or doubled, whoever is killed when.
 *
 * A failed connection is retried with back-off (with `watch`; a pass stops on one that made no
 * progress and says what waits). Two problems are never retried, since retrying can't help: the
 * remote fspl given to check seals can't (the reference there, say), and the remote queue has
 * received numbers beyond every packet this outbox holds (another sender, or a numbering reset:
 * sending would have them dropped as already received).
 */
import fs from 'node:fs';
import { LockedError, SendError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { waitUnlessAborted } from '../base/timer.js';
import { type JobEntry, Queue } from '../queue/queue.js';
import { JobsWatcher } from '../queue/watch.js';
import type { SeqFile } from '../sys/seqfile.js';
import type { Delivery, OutgoingPacket, SendResult } from './delivery.js';
import { type Destination, describeDestination } from './destination.js';
import { nncpDelivery } from './nncp-send.js';
import { describeVerifierProblem, type VerifierProblem } from './receive-script.js';
import { packetId, sshDelivery } from './ssh-send.js';

export interface QueueSendOptions {
  /** The outbox: a local queue directory (`fspl queue-init`). */
  outbox: string;
  to: Destination;
  /** The ssh command and its options, before the destination (default `['ssh']`). */
  ssh?: string[];
  /** fspl on the remote host (ours): when given, each packet's seal is checked there too. */
  remoteFspl?: string;
  /** Keep running, sending packets as they arrive, until `signal` aborts. */
  watch?: false | { pollInterval?: number };
  signal?: AbortSignal;
  logger?: Logger;
  onEvent?: (e: QueueSendEvent) => void;
  /** Back-off between failed connections (default 500 ms doubling to 10 s). */
  retryMs?: { min: number; max: number };
  /** Packets per connection (default 1000). */
  batch?: number;
}

/** What the sender is doing, for a status line. `waiting`: packets in the outbox. */
export type QueueSendEvent =
  | { type: 'sent'; sent: number; duplicates: number; waiting: number }
  | { type: 'failing'; error: string; attempts: number; retryInMs?: number; waiting: number }
  | { type: 'reachable'; waiting: number }
  | { type: 'idle'; waiting: number; blocked?: string };

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

const BATCH_PACKETS = 1000;
const RETRY = { min: 500, max: 10_000 };

/** The packets that may go now, and if none, why those in the outbox wait. */
interface Due {
  packets: OutgoingPacket[];
  blocked?: string;
}

/** Send an outbox's packets to a remote queue: one pass, or with `watch` until stopped. */
export async function sendQueue(opts: QueueSendOptions): Promise<QueueSendSummary> {
  return new QueueSender(opts).run();
}

class QueueSender {
  private readonly queue: Queue;
  private readonly log: Logger;
  private readonly to: string;
  private readonly signal: AbortSignal;
  private entries = new Map<string, JobEntry>();
  private consumer!: SeqFile;
  private readonly summary: QueueSendSummary;
  private readonly delivery: Delivery;
  private dirty = true;
  private wake?: () => void;

  constructor(private readonly opts: QueueSendOptions) {
    this.queue = Queue.open(opts.outbox);
    this.log = opts.logger ?? silentLogger;
    this.to = describeDestination(opts.to);
    this.signal = opts.signal ?? new AbortController().signal;
    const to = opts.to;
    this.delivery =
      to.kind === 'nncp'
        ? nncpDelivery({ node: to.node, handle: to.handle })
        : sshDelivery([...(opts.ssh ?? ['ssh']), to.host], to.dir, { fspl: opts.remoteFspl, host: to.host });
    this.summary = { to: this.to, sent: 0, duplicates: 0, connections: 0, waiting: 0, next: 1n };
  }

  async run(): Promise<QueueSendSummary> {
    this.queue.assertExists();
    try {
      this.consumer = this.queue.lockSeqfile({ wait: false });
    } catch (err) {
      if (err instanceof LockedError)
        throw new SendError(`The outbox ${this.opts.outbox} is in use by another program (queue-send or queue-process holds its nextseq.lock)`);
      throw err;
    }
    const watch = this.opts.watch;
    const watcher = watch ? new JobsWatcher(this.queue.jobsDir, { pollInterval: watch.pollInterval, safetyInterval: 5, logger: this.log }) : undefined;
    if (watcher)
      void (async () => {
        while (await watcher.wait(this.signal)) this.poke();
      })();
    this.signal.addEventListener('abort', this.poke, { once: true });
    try {
      await this.loop();
      this.summary.next = this.consumer.read();
      this.summary.waiting = (await this.queue.rescan(this.entries)).size;
      return this.summary;
    } finally {
      this.signal.removeEventListener('abort', this.poke);
      watcher?.close();
      this.consumer.release();
    }
  }

  private poke = (): void => {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  /** Connections until the outbox is empty (a pass), a stop, or the signal. */
  private async loop(): Promise<void> {
    let attempts = 0;
    while (!this.signal.aborted) {
      this.dirty = false;
      const due = await this.due();
      this.summary.blocked = due.blocked;
      if (due.packets.length === 0) {
        this.opts.onEvent?.({ type: 'idle', waiting: this.entries.size, blocked: due.blocked });
        if (!this.opts.watch) return;
        await this.sleep();
        continue;
      }
      const r = await this.connect(due.packets);
      if (this.signal.aborted) return;
      if (r.error === undefined) {
        if (attempts > 0) this.reachable();
        attempts = 0;
        continue;
      }
      if (this.summary.stopped) return;
      // A connection that got some packets through is tried again at once: the link works.
      attempts = r.acked > 0 ? 1 : attempts + 1;
      if (!this.opts.watch && r.acked === 0) {
        this.summary.error = r.error;
        this.opts.onEvent?.({ type: 'failing', error: r.error, attempts, waiting: this.entries.size });
        this.log.warn('send', `Cannot deliver to ${this.to} (${r.error}); ${this.entries.size} packet(s) wait in ${this.opts.outbox}`);
        return;
      }
      await this.backOff(r.error, attempts);
    }
  }

  /** One connection: the packets in order, each removed from the outbox once acknowledged. */
  private async connect(packets: OutgoingPacket[]): Promise<SendResult> {
    this.summary.connections++;
    let ahead: string | undefined;
    const before = this.summary.sent;
    const r = await this.delivery.send(packets, {
      signal: this.signal,
      onReady: (remoteNext) => (ahead = aheadOfOutbox(this.to, remoteNext, packets)),
      onAck: (p, dup) => {
        // As queue-process: the number first, then the file. SeqFile.write fsyncs nextseq's temp
        // file before its rename and the outbox's directory after it: that directory fsync makes
        // the new number durable. The unlink is not fsynced: a power cut that brings the file back
        // leaves it one below nextseq, and the next run deletes it (never sends it again).
        this.consumer.write(p.seq + 1n);
        fs.rmSync(p.path, { force: true });
        this.entries.delete(p.path.slice(this.queue.jobsDir.length + 1));
        this.summary.sent++;
        if (dup) this.summary.duplicates++;
      },
    });
    if (r.verifier) this.summary.stopped = verifierStop(r.verifier, this.opts.remoteFspl ?? '', this.opts.to.kind === 'ssh' ? this.opts.to.host : this.to);
    else if (ahead !== undefined) this.summary.stopped = ahead;
    if (this.summary.stopped)
      this.log.error('send', `Stopped sending to ${this.to}: ${this.summary.stopped}; ${this.entries.size} packet(s) stay in ${this.opts.outbox}`);
    const sent = this.summary.sent - before;
    if (sent > 0) {
      const how =
        this.delivery.acknowledges === 'handed'
          ? `Handed ${sent} packet(s) for ${this.to} to NNCP`
          : `Sent ${sent} packet(s) to ${this.to} over one connection`;
      this.log.info('send', `${how}${r.duplicates > 0 ? ` (${r.duplicates} already there)` : ''}; ${this.entries.size} wait`);
      this.opts.onEvent?.({ type: 'sent', sent: this.summary.sent, duplicates: this.summary.duplicates, waiting: this.entries.size });
    }
    return r;
  }

  private reachable(): void {
    this.summary.error = undefined;
    this.log.info('send', `${this.to} is reachable again`);
    this.opts.onEvent?.({ type: 'reachable', waiting: this.entries.size });
  }

  /** After a failed connection: say so (the first time and every tenth), then wait. */
  private async backOff(error: string, attempts: number): Promise<void> {
    const { min, max } = this.opts.retryMs ?? RETRY;
    const ms = Math.min(max, min * 2 ** Math.min(attempts - 1, 20));
    this.summary.error = error;
    this.opts.onEvent?.({ type: 'failing', error, attempts, retryInMs: ms, waiting: this.entries.size });
    if (attempts === 1 || attempts % 10 === 0) this.log.warn('send', `Cannot deliver to ${this.to} (${error}); ${this.entries.size} packet(s) wait, retrying`);
    // New packets don't cut the wait short; stopping does.
    await waitUnlessAborted(ms, this.signal);
  }

  /** The packets to send now: consecutive numbers from the outbox's nextseq. */
  private async due(): Promise<Due> {
    this.entries = await this.queue.rescan(this.entries);
    const next = this.consumer.read();
    const bySeq = new Map<bigint, JobEntry[]>();
    for (const e of [...this.entries.values()]) {
      if (e.header.seq === next - 1n) {
        // Acknowledged (nextseq moved past it), but the sender stopped before deleting it.
        fs.rmSync(this.queue.jobPath(e.filename), { force: true });
        this.entries.delete(e.filename);
      } else bySeq.set(e.header.seq, [...(bySeq.get(e.header.seq) ?? []), e]);
    }
    const packets: OutgoingPacket[] = [];
    const max = this.opts.batch ?? BATCH_PACKETS;
    for (let s = next; packets.length < max; s++) {
      const found = bySeq.get(s);
      if (!found) break;
      // Two packets with one number: sending either could lose the other. The user decides.
      if (found.length > 1)
        return {
          packets,
          blocked: packets.length > 0 ? undefined : `two packets numbered ${s} in the outbox (${found.map((e) => e.filename).join(', ')}): remove one`,
        };
      packets.push({ path: this.queue.jobPath(found[0]!.filename), id: packetId(found[0]!.filename), seq: s });
    }
    return { packets, blocked: packets.length > 0 ? undefined : waitingFor(next, bySeq) };
  }

  /** Until the outbox changes (or the run stops). */
  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      if (this.dirty || this.signal.aborted) return resolve();
      this.wake = resolve;
    });
  }
}

/** The one line said when `--remote-fspl` can't check seals on the host (the nets' words name their `fspl:`). */
function verifierStop(p: VerifierProblem, fspl: string, host: string): string {
  if (p.kind === 'no-seal-check')
    return `fspl at ${fspl} on ${host}: does not check seals (the reference fspl? --remote-fspl must name this implementation's fspl, or leave it out)`;
  return describeVerifierProblem(p, fspl, host);
}

/** Why the packets in an outbox wait when its next number is not among them. */
function waitingFor(next: bigint, bySeq: ReadonlyMap<bigint, unknown>): string | undefined {
  if (bySeq.size === 0) return undefined;
  let above: bigint | undefined;
  let below = 0;
  for (const s of bySeq.keys()) {
    if (s > next && (above === undefined || s < above)) above = s;
    if (s < next) below++;
  }
  const parts: string[] = [];
  if (above !== undefined)
    parts.push(`waiting for packet ${next}, the outbox's next number (its lowest above is ${above}; fspl queue-set-next -q OUTBOX ${above} skips the gap)`);
  if (below > 0) parts.push(`${below} packet(s) numbered below ${next} are never sent (already past)`);
  return parts.join('; ');
}

/**
 * Why nothing may be sent: the remote queue has received numbers that none of the packets on
 * their way explains. After a lost acknowledgement the receiver is ahead of the outbox by packets
 * still in it (sent again, they are dropped); beyond them, the numbers came from elsewhere.
 */
function aheadOfOutbox(to: string, remoteNext: bigint, packets: readonly OutgoingPacket[]): string | undefined {
  const last = packets[packets.length - 1]!.seq;
  if (remoteNext <= last + 1n) return undefined;
  return `the queue at ${to} has received packets up to number ${remoteNext - 1n}, beyond this outbox's (${packets[0]!.seq} to ${last}): another sender writes to it, or the numbering was reset (fspl prepare-set-next). Nothing is sent (it would be dropped as already received)`;
}
