/**
 * The sender of an outbox: the outbox of a remote place (a local Filespooler queue, written by
 * the runner's ordinary commits, see hosts.ts) is emptied in sequence order into the place's jobs/
 * on its host, over ssh (ssh-send.ts, receive-script.ts) or through NNCP (nncp-send.ts, then
 * receive.ts there), by the host's kind (host-route.ts). A packet leaves the outbox only once
 * acknowledged (src/send/outbox.ts): after a crash it is at worst sent again, and then dropped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeSystemError, LockedError, NetError } from '../../base/errors.js';
import { type Logger, silentLogger } from '../../base/log.js';
import { backoffMs, waitUnlessAborted } from '../../base/timer.js';
import type { Delivery, OutgoingPacket, SendResult } from '../../send/delivery.js';
import { BATCH_PACKETS, OutboxDrain } from '../../send/outbox.js';
import type { VerifierProblem } from '../../send/receive-script.js';
import {
  readSenderState as readState,
  type SenderState as StateOf,
  senderStatePath,
  writeSenderState,
} from '../../send/sender-state.js';
import { mkdirDurable } from '../../sys/durable.js';
import { parseSeqfileText } from '../../sys/seq-text.js';
import { isIoFault } from '../commit/io-faults.js';
import type { HostConfig, RemotePlace } from '../model/hosts.js';
import { deliveryTo, describeWay } from './host-route.js';

/** Where a net's outbox sends, as its state file says it. */
export interface OutboxDestination {
  host: string;
  remoteDir: string;
}

/**
 * What `status` shows about an outbox's sender (STATE/outbox/PLACE/sender.json, the core's
 * sender-state.ts, which `fspl queue-send` writes too). `stopped`: this sender gave up until the
 * run is restarted, the host's `fspl:` can't check seals (VerifierProblem); the tokens stay.
 */
export type SenderState = StateOf<OutboxDestination>;

export { senderStatePath };

export function readSenderState(outbox: string): SenderState | undefined {
  return readState<OutboxDestination>(outbox);
}

/** The number the outbox gives next (its sendseq): the remote place's numbering. */
function outboxNext(outbox: string): bigint {
  try {
    return parseSeqfileText(fs.readFileSync(path.join(outbox, 'sendseq'), 'utf8')) ?? 1n;
  } catch {
    return 1n;
  }
}

/** Why nothing may be sent, when the remote place has numbers this outbox never gave. */
function aheadOfOutbox(place: string, host: string, remoteNext: bigint, mine: bigint): string | undefined {
  if (remoteNext <= mine) return undefined;
  return (
    `the place ${place} on ${host} has received numbers up to ${remoteNext - 1n}, ` +
    `but this outbox has only given numbers below ${mine}: was this host's ` +
    `state directory removed? Nothing is sent (it would be dropped as ` +
    `already received)`
  );
}

/** What `net check --host` found out about one outbox's way to its place. */
export interface OutboxProbe {
  place: string;
  host: string;
  remoteDir: string;
  /** ssh, or NNCP to this node (a probe asks NNCP whether it knows the node). */
  via: 'ssh' | { nncp: string };
  /** The verifier tried there (the host's `fspl:`), if any. */
  fspl?: string;
  /** Why a delivery would fail now; undefined when it would work. */
  error?: string;
  verifier?: VerifierProblem;
}

/**
 * Try the way from an outbox to its place as the sender would (one connection, no packets): ssh,
 * the queue there, its receive lock, the verifier, and the numbering.
 */
export async function probeOutbox(opts: {
  place: string;
  outbox: string;
  remote: RemotePlace;
  host: HostConfig;
  signal?: AbortSignal;
}): Promise<OutboxProbe> {
  const r = await deliveryTo(opts.host, opts.place, opts.remote).send([], {
    signal: opts.signal,
    onReady: (remoteNext) => aheadOfOutbox(opts.place, opts.remote.host, remoteNext, outboxNext(opts.outbox)),
  });
  const h = opts.host;
  const [via, fspl] = h.kind === 'ssh' ? (['ssh', h.fspl] as const) : [{ nncp: h.nncp.node }, undefined];
  return {
    place: opts.place,
    host: opts.remote.host,
    remoteDir: opts.remote.dir,
    via,
    fspl,
    error: r.error,
    verifier: r.verifier,
  };
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;
/** Failed deliveries before a drain's last pass gives up on a host (about 1.5 s of backoff). */
const LAST_PASS_ATTEMPTS = 3;

export interface OutboxSenderOptions {
  place: string;
  /** The outbox directory (a queue). */
  outbox: string;
  remote: RemotePlace;
  host: HostConfig;
  logger?: Logger;
  pollInterval?: number;
}

/**
 * Empties one outbox into its remote place for as long as the run lasts, retrying with back-off
 * while the host can't be reached (the outbox grows meanwhile; status shows it).
 */
export class OutboxSender {
  private readonly opts: OutboxSenderOptions;
  private readonly log: Logger;
  private readonly delivery: Delivery;
  private readonly drain: OutboxDrain;
  private sendseqNext?: () => bigint;
  private state: SenderState;
  /** The place as messages name it: `b:/srv/place` over ssh, `b:/srv/place through NNCP (node bob)`. */
  private readonly where: string;
  /** The number last said to be held by two tokens (said once). */
  private saidTwice?: bigint;

  constructor(opts: OutboxSenderOptions) {
    this.opts = opts;
    this.log = opts.logger ?? silentLogger;
    this.drain = new OutboxDrain(opts.outbox, this.log);
    this.delivery = deliveryTo(opts.host, opts.place, opts.remote);
    const through = opts.host.kind === 'nncp' ? ` through NNCP (node ${opts.host.nncp.node})` : '';
    this.where = `${opts.remote.host}:${opts.remote.dir}${through}`;
    this.state = {
      host: opts.remote.host,
      remoteDir: opts.remote.dir,
      pid: process.pid,
      updatedAt: Date.now(),
      sent: 0,
      duplicates: 0,
    };
  }

  /** Tokens waiting in the outbox (as last seen). */
  get waiting(): number {
    return this.drain.waiting;
  }

  get failing(): SenderState['failing'] {
    return this.state.failing;
  }

  get stopped(): SenderState['stopped'] {
    return this.state.stopped;
  }

  private saveState(): void {
    // Not fsynced, on purpose (sender-state.ts): counters and the last failure, for `net status`.
    writeSenderState(this.opts.outbox, this.state, this.log);
  }

  /**
   * The packets to send now: consecutive numbers from the outbox's nextseq. Those below it were
   * acknowledged, but this process stopped before deleting them (or its disk failed to): deleted
   * now, or, on a disk that still fails, left for the next look (they are never sent again).
   */
  private async due(): Promise<OutgoingPacket[]> {
    const keep = (err: unknown) => {
      if (!isIoFault(err)) return false;
      this.log.debug(
        'net',
        () => `Outbox ${this.opts.place}: cannot remove a sent token yet: ${describeSystemError(err)}`,
      );
      return true;
    };
    const due = await this.drain.look(() => true, BATCH_PACKETS, keep);
    // The runner numbers an outbox's tokens itself: two files with one number are someone else's doing.
    if (due.twice && this.saidTwice !== due.next)
      this.log.error(
        'net',
        `Outbox ${this.opts.place}: two tokens numbered ${due.next} ` +
          `(${due.twice.map((e) => e.filename).join(', ')}): remove ` +
          `the one that does not belong; nothing is sent meanwhile`,
      );
    this.saidTwice = due.twice ? due.next : undefined;
    return due.packets;
  }

  /** Send until the signal aborts; with `untilEmpty`, return once the outbox is empty or sending keeps failing. */
  async run(signal: AbortSignal, options: { untilEmpty?: boolean } = {}): Promise<void> {
    if (!(await this.open(signal))) return;
    this.sendseqNext = () => outboxNext(this.opts.outbox);
    this.drain.watch(signal, this.opts.pollInterval);
    const onAbort = this.drain.poke;
    signal.addEventListener('abort', onAbort, { once: true });
    let attempts = 0;
    this.state.stopped = undefined; // each run tries the host's fspl again
    try {
      while (!signal.aborted) {
        const batch = await this.due();
        if (batch.length === 0) {
          if (options.untilEmpty) return;
          await this.drain.sleep();
          continue;
        }
        const r = await this.send(batch, signal);
        if (signal.aborted) break;
        if (r.error === undefined) {
          if (this.state.failing)
            this.log.info('net', `Outbox ${this.opts.place}: ${describeWay(this.opts.host)} reachable again`);
          this.state.failing = undefined;
          attempts = 0;
          this.saveState();
          continue;
        }
        if (r.verifier) {
          // Retrying can't help: the tokens wait here, whole, until the host's fspl is fixed.
          this.state.failing = undefined;
          this.state.stopped = { at: Date.now(), error: r.error ?? 'the remote fspl cannot check seals' };
          this.saveState();
          this.log.error(
            'net',
            `Outbox ${this.opts.place}: stopped sending to ${this.opts.remote.host}:${this.opts.remote.dir}: ` +
              `${this.state.stopped.error}; ${this.drain.waiting} token(s) stay in ${this.opts.outbox}. ` +
              `Fix the fspl: of host ${this.opts.remote.host} (see fspl net check ` +
              `--host), then restart fspl net run`,
          );
          return;
        }
        attempts++;
        this.state.failing = { since: this.state.failing?.since ?? Date.now(), attempts, error: r.error };
        this.saveState();
        if (attempts === 1 || attempts % 10 === 0)
          this.log.warn(
            'net',
            `Outbox ${this.opts.place}: cannot deliver to ${this.where} (${r.error}); ` +
              `${this.drain.waiting} token(s) wait, retrying`,
          );
        // A drain's last pass ends on a delivery that keeps failing (it reports what waits), after a
        // few tries: a passing failure is no reason to leave tokens behind. Never on this host's own
        // disk: the run waits that out everywhere else too.
        if (options.untilEmpty && !r.ownDisk && attempts >= LAST_PASS_ATTEMPTS) return;
        // Before trying the host again: new tokens don't cut it short, stopping does.
        await waitUnlessAborted(backoffMs(attempts, RETRY_MIN_MS, RETRY_MAX_MS), signal);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.saveState();
      this.drain.release();
    }
  }

  /**
   * One batch sent. This host's own disk full or failing as the acknowledged packets are taken off
   * the outbox (nextseq, the unlink): a failed attempt like a lost connection, tried again after
   * the backoff; the receiver has the packets, and says `dup` for them when they come again.
   */
  private async send(batch: OutgoingPacket[], signal: AbortSignal): Promise<SendResult & { ownDisk?: true }> {
    try {
      const r = await this.delivery.send(batch, {
        signal,
        onReady: (remoteNext) => aheadOfOutbox(this.opts.place, this.opts.remote.host, remoteNext, this.sendseqNext!()),
        // Acknowledged tokens leave the outbox in groups, the number first, then the files (as
        // queue-process): src/send/outbox.ts says which fsync makes what durable.
        onAck: (p, dup) => this.drain.ack(p, dup),
      });
      this.drain.flush();
      return r;
    } catch (err) {
      if (!isIoFault(err)) throw err;
      return { acked: 0, duplicates: 0, error: `this host's disk: ${describeSystemError(err)}`, ownDisk: true };
    } finally {
      Object.assign(this.state, this.drain.progress);
    }
  }

  /**
   * Take the outbox (its jobs/ made durable, its nextseq locked). This host's disk full or failing
   * meanwhile is waited out with the backoff, as a failed delivery is. False: stopped first.
   */
  private async open(signal: AbortSignal): Promise<boolean> {
    for (let attempts = 1; !signal.aborted; attempts++) {
      try {
        // Durable like any place (the runner's Place.init made it so already when it committed
        // into this outbox); a sender started alone must not rely on a name a power cut could
        // take back.
        mkdirDurable(this.drain.queue.jobsDir);
        this.drain.hold(this.drain.queue.lockSeqfile());
        return true;
      } catch (err) {
        if (err instanceof LockedError)
          throw new NetError(
            `The outbox ${this.opts.outbox} is being sent by another program (its nextseq.lock is held)`,
          );
        if (!isIoFault(err)) throw err;
        this.state.failing = {
          since: this.state.failing?.since ?? Date.now(),
          attempts,
          error: `this host's disk: ${describeSystemError(err)}`,
        };
        this.saveState();
        if (attempts === 1)
          this.log.warn(
            'net',
            `Outbox ${this.opts.place}: cannot open ${this.opts.outbox} (${this.state.failing.error}); retrying`,
          );
        await waitUnlessAborted(backoffMs(attempts, RETRY_MIN_MS, RETRY_MAX_MS), signal);
      }
    }
    return false;
  }
}
