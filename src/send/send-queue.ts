/**
 * `fspl queue-send`: an outbox for plain queues. Packets are written into a local queue, the
 * outbox (`fspl prepare ... | fspl queue-write -q OUTBOX`: writing never waits for the network),
 * and this sender empties it into a queue on another host, over ssh, in sequence order, many
 * packets over one connection (ssh-send.ts), each exactly once: the receiver (receive-script.ts)
 * stores each packet under its own name and drops one numbered below what it already received.
 *
 * The acknowledgement and removal protocol is the nets' outboxes' (outbox.ts says what is durable
 * when). A failed connection is retried with back-off, except two problems retrying can't help: a
 * remote fspl that can't check seals, and a remote queue that received numbers beyond every packet
 * here (another sender, or a numbering reset). Its state goes to OUTBOX/sender.json (sender-state.ts).
 */
import { LockedError, SendError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { plural } from '../base/plural.js';
import { backoffMs, waitUnlessAborted } from '../base/timer.js';
import type { Delivery, OutgoingPacket, SendResult } from './delivery.js';
import { type Destination, describeDestination } from './destination.js';
import { nncpDelivery } from './nncp-send.js';
import { BATCH_PACKETS, inLastGroup, OutboxDrain } from './outbox.js';
import { packetsWait, type QueueSendSummary, sentLine } from './queue-send-words.js';
import { describeVerifierProblem, type VerifierProblem } from './receive-script.js';
import { type SenderState, writeSenderState } from './sender-state.js';
import { sshDelivery } from './ssh-send.js';

export interface QueueSendOptions {
  /** The outbox: a local queue directory (`fspl queue-init`). */
  outbox: string;
  /** Where the packets go (named in messages and the state file). */
  to: Destination;
  /** How they go (default: deliveryFor(to), ssh or NNCP); a program may bring its own. */
  delivery?: Delivery;
  /** The ssh command and its options, before the destination (default `['ssh']`). */
  ssh?: string[];
  /** For an nncp: destination, this node's NNCP config (default: NNCP's own, $NNCPCFG or /etc/nncp.hjson). */
  nncpCfg?: string;
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

export type { QueueSendSummary } from './queue-send-words.js';

/**
 * queue-send's state file (OUTBOX/sender.json): where it sends (`ssh:HOST:QUEUE`, `nncp:NODE:HANDLE`), and how it goes.
 */
export type QueueSendState = SenderState<{ to: string }>;

const RETRY = { min: 500, max: 10_000 };

/** The way to `to`: ssh (with `ssh` and `remoteFspl`) or NNCP (with `nncpCfg`). */
export function deliveryFor(opts: Pick<QueueSendOptions, 'to' | 'ssh' | 'remoteFspl' | 'nncpCfg'>): Delivery {
  const to = opts.to;
  if (to.kind === 'nncp') return nncpDelivery({ node: to.node, handle: to.handle, cfg: opts.nncpCfg });
  return sshDelivery([...(opts.ssh ?? ['ssh']), to.host], to.dir, { fspl: opts.remoteFspl, host: to.host });
}

/** Send an outbox's packets to a remote queue: one pass, or with `watch` until stopped. */
export async function sendQueue(opts: QueueSendOptions): Promise<QueueSendSummary> {
  return new QueueSender(opts).run();
}

class QueueSender {
  private readonly log: Logger;
  private readonly to: string;
  private readonly signal: AbortSignal;
  private readonly drain: OutboxDrain;
  private readonly summary: QueueSendSummary;
  private readonly delivery: Delivery;
  private readonly state: QueueSendState;

  constructor(private readonly opts: QueueSendOptions) {
    this.log = opts.logger ?? silentLogger;
    this.drain = new OutboxDrain(opts.outbox, this.log);
    this.to = describeDestination(opts.to);
    this.signal = opts.signal ?? new AbortController().signal;
    this.delivery = opts.delivery ?? deliveryFor(opts);
    this.summary = { to: this.to, sent: 0, duplicates: 0, connections: 0, waiting: 0, next: 1n };
    this.state = { to: this.to, pid: process.pid, updatedAt: Date.now(), sent: 0, duplicates: 0 };
  }

  /** The state file rewritten: the drain's counters, and the summary's failure, stop and block. */
  private save(): void {
    const s = this.summary;
    Object.assign(this.state, this.drain.progress, { blocked: s.blocked });
    if (s.error === undefined || s.stopped !== undefined) this.state.failing = undefined;
    if (s.stopped !== undefined) this.state.stopped ??= { at: Date.now(), error: s.stopped };
    writeSenderState(this.opts.outbox, this.state, this.log);
  }

  /** A failed connection, for the state file: since when they fail, and how often in a row. */
  private failing(error: string, attempts: number): void {
    this.summary.error = error;
    this.state.failing = { since: this.state.failing?.since ?? Date.now(), attempts, error };
    this.save();
  }

  async run(): Promise<QueueSendSummary> {
    const queue = this.drain.queue;
    queue.assertExists();
    try {
      this.drain.hold(queue.lockSeqfile({ wait: false }));
    } catch (err) {
      if (err instanceof LockedError)
        throw new SendError(
          `The outbox ${this.opts.outbox} is in use by another program ` +
            `(queue-send or queue-process holds its nextseq.lock)`,
        );
      throw err;
    }
    if (this.opts.watch) this.drain.watch(this.signal, this.opts.watch.pollInterval);
    this.signal.addEventListener('abort', this.drain.poke, { once: true });
    this.save(); // its pid, while it holds the lock: `--status` says it runs
    try {
      await this.loop();
      this.summary.next = this.drain.next;
      this.summary.waiting = await this.drain.recount();
      return this.summary;
    } finally {
      this.signal.removeEventListener('abort', this.drain.poke);
      this.save();
      this.drain.release();
    }
  }

  /** Connections until the outbox is empty (a pass), a stop, or the signal. */
  private async loop(): Promise<void> {
    let attempts = 0;
    while (!this.signal.aborted) {
      const due = await this.due();
      if (this.summary.blocked !== due.blocked) {
        this.summary.blocked = due.blocked;
        this.save();
      }
      if (due.packets.length === 0) {
        this.opts.onEvent?.({ type: 'idle', waiting: this.drain.waiting, blocked: due.blocked });
        if (!this.opts.watch) return;
        await this.drain.sleep();
        continue;
      }
      const r = await this.connect(due.packets);
      if (this.signal.aborted) return;
      if (r.error === undefined) {
        attempts = 0;
        continue;
      }
      if (this.summary.stopped) return;
      // A connection that got some packets through is tried again at once: the link works.
      attempts = r.acked > 0 ? 1 : attempts + 1;
      if (!this.opts.watch && r.acked === 0) {
        this.failing(r.error, attempts);
        this.opts.onEvent?.({ type: 'failing', error: r.error, attempts, waiting: this.drain.waiting });
        // The pass ends on it: its summary (summary.error) says it, once.
        this.log.debug(
          'send',
          `Cannot deliver to ${this.to} (${r.error}); ${packetsWait(this.drain.waiting)} in ${this.opts.outbox}`,
        );
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
      // Acknowledged packets leave the outbox in groups: outbox.ts says which fsync makes what durable.
      onAck: (p, dup) => this.drain.ack(p, dup),
    });
    this.drain.flush();
    // Back after failures: said before what this connection sent, as it happened in that order.
    if (this.summary.error !== undefined && (r.acked > 0 || r.error === undefined)) this.reachable();
    this.summary.sent = this.drain.sent;
    this.summary.duplicates = this.drain.duplicates;
    if (r.verifier)
      this.summary.stopped = verifierStop(
        r.verifier,
        this.opts.remoteFspl ?? '',
        this.opts.to.kind === 'ssh' ? this.opts.to.host : this.to,
      );
    else if (ahead !== undefined) this.summary.stopped = ahead;
    this.save();
    // A stop ends the run: its summary (summary.stopped) says it, once.
    if (this.summary.stopped)
      this.log.debug(
        'send',
        `Stopped sending to ${this.to}: ${this.summary.stopped}; ` +
          `${packetsWait(this.drain.waiting)} in ${this.opts.outbox}`,
      );
    const sent = this.summary.sent - before;
    if (sent > 0) {
      // Under --watch each connection is an outcome of its own; a pass's summary counts them all.
      const level = this.opts.watch ? 'info' : 'debug';
      this.log.log(
        level,
        'send',
        sentLine(this.to, sent, r.duplicates, this.delivery.acknowledges === 'handed', this.drain.waiting),
      );
      this.opts.onEvent?.({
        type: 'sent',
        sent: this.summary.sent,
        duplicates: this.summary.duplicates,
        waiting: this.drain.waiting,
      });
    }
    return r;
  }

  private reachable(): void {
    this.summary.error = undefined;
    this.save();
    this.log.info('send', `${this.to} is reachable again`);
    this.opts.onEvent?.({ type: 'reachable', waiting: this.drain.waiting });
  }

  /** After a failed connection: say so (the first time and every tenth), then wait. */
  private async backOff(error: string, attempts: number): Promise<void> {
    const { min, max } = this.opts.retryMs ?? RETRY;
    const ms = backoffMs(attempts, min, max);
    this.failing(error, attempts);
    this.opts.onEvent?.({ type: 'failing', error, attempts, retryInMs: ms, waiting: this.drain.waiting });
    if (attempts === 1 || attempts % 10 === 0)
      this.log.warn('send', `Cannot deliver to ${this.to} (${error}); ${packetsWait(this.drain.waiting)}, retrying`);
    // New packets don't cut the wait short; stopping does.
    await waitUnlessAborted(ms, this.signal);
  }

  /**
   * The packets to send now: consecutive numbers from the outbox's nextseq, or why those in the
   * outbox wait. Only the last group's numbers below nextseq are taken for spent (acknowledged,
   * not yet deleted: inLastGroup); others below it were put there by hand, and are reported, never
   * deleted.
   */
  private async due(): Promise<{ packets: OutgoingPacket[]; blocked?: string }> {
    const due = await this.drain.look(inLastGroup, this.opts.batch ?? BATCH_PACKETS);
    if (due.twice)
      return {
        packets: [],
        blocked:
          `two packets numbered ${due.next} in the outbox ` +
          `(${due.twice.map((e) => e.filename).join(', ')}): remove one`,
      };
    return {
      packets: due.packets,
      blocked: due.packets.length > 0 ? undefined : waitingFor(due.next, due.bySeq, due.below),
    };
  }
}

/** The one line said when `--remote-fspl` can't check seals on the host (the nets' words name their `fspl:`). */
function verifierStop(p: VerifierProblem, fspl: string, host: string): string {
  if (p.kind === 'no-seal-check')
    return (
      `fspl at ${fspl} on ${host}: does not check seals (the reference fspl? ` +
      `--remote-fspl must name this implementation's fspl, or leave it out)`
    );
  return describeVerifierProblem(p, fspl, host);
}

/** Why the packets in an outbox wait when its next number is not among them. */
function waitingFor(next: bigint, bySeq: ReadonlyMap<bigint, unknown>, below: number): string | undefined {
  if (bySeq.size === 0 && below === 0) return undefined;
  let above: bigint | undefined;
  for (const s of bySeq.keys()) if (s > next && (above === undefined || s < above)) above = s;
  const parts: string[] = [];
  if (above !== undefined)
    parts.push(
      `waiting for packet ${next}, the outbox's next number (its lowest above ` +
        `is ${above}; fspl queue-set-next -q OUTBOX ${above} skips the gap)`,
    );
  if (below > 0)
    parts.push(
      `${plural(below, 'packet')} numbered below ${next} ${below === 1 ? 'is' : 'are'} never sent (already past)`,
    );
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
  return (
    `the queue at ${to} has received packets up to number ${remoteNext - 1n}, ` +
    `beyond this outbox's (${packets[0]!.seq} to ${last}): another sender ` +
    `writes to it, or the numbering was reset (fspl prepare-set-next). ` +
    `Nothing is sent (it would be dropped as already received)`
  );
}
