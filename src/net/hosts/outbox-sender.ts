/**
 * The sender of an outbox: the outbox of a remote place (a local Filespooler queue, written by
 * the runner's ordinary commits, see hosts.ts) is emptied in sequence order into the place's jobs/
 * on its host (ssh-send.ts, receive-script.ts). It removes a packet from its outbox only once the
 * receiver acknowledged it: it moves the outbox's nextseq past it, then deletes the file (as
 * queue-process does), so after a crash here a packet is at worst sent again, and then dropped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeSystemError, LockedError, NetError } from '../../base/errors.js';
import { type Logger, silentLogger } from '../../base/log.js';
import { waitUnlessAborted } from '../../base/timer.js';
import { type JobEntry, Queue } from '../../queue/queue.js';
import { JobsWatcher } from '../../queue/watch.js';
import type { Delivery, OutgoingPacket, SendResult } from '../../send/delivery.js';
import type { VerifierProblem } from '../../send/receive-script.js';
import { packetId } from '../../send/ssh-send.js';
import { mkdirDurable } from '../../sys/durable.js';
import { parseSeqfileText, type SeqFile } from '../../sys/seqfile.js';
import { isIoFault } from '../commit/io-faults.js';
import type { HostConfig, RemotePlace } from '../model/hosts.js';
import { deliveryTo } from './way.js';

/** What `status` shows about an outbox's sender (STATE/outbox/PLACE/sender.json). */
export interface SenderState {
  host: string;
  remoteDir: string;
  pid: number;
  updatedAt: number;
  /** Tokens sent (acknowledged) by this run. */
  sent: number;
  duplicates: number;
  lastSentAt?: number;
  /** Set while deliveries fail. */
  failing?: { since: number; attempts: number; error: string };
  /**
   * Set when this sender gave up until the run is restarted: the host's `fspl:` can't check seals
   * (VerifierProblem). The tokens stay in the outbox.
   */
  stopped?: { at: number; error: string };
}

export function senderStatePath(outbox: string): string {
  return path.join(outbox, 'sender.json');
}

export function readSenderState(outbox: string): SenderState | undefined {
  try {
    return JSON.parse(fs.readFileSync(senderStatePath(outbox), 'utf8')) as SenderState;
  } catch {
    return undefined;
  }
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
  return `the place ${place} on ${host} has received numbers up to ${remoteNext - 1n}, but this outbox has only given numbers below ${mine}: was this host's state directory removed? Nothing is sent (it would be dropped as already received)`;
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
export async function probeOutbox(opts: { place: string; outbox: string; remote: RemotePlace; host: HostConfig; signal?: AbortSignal }): Promise<OutboxProbe> {
  const r = await deliveryTo(opts.host, opts.place, opts.remote).send([], {
    signal: opts.signal,
    onReady: (remoteNext) => aheadOfOutbox(opts.place, opts.remote.host, remoteNext, outboxNext(opts.outbox)),
  });
  const h = opts.host;
  const [via, fspl] = h.kind === 'ssh' ? (['ssh', h.fspl] as const) : [{ nncp: h.nncp.node }, undefined];
  return { place: opts.place, host: opts.remote.host, remoteDir: opts.remote.dir, via, fspl, error: r.error, verifier: r.verifier };
}

const BATCH_PACKETS = 1000;
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
  private readonly queue: Queue;
  private readonly log: Logger;
  private readonly delivery: Delivery;
  private entries = new Map<string, JobEntry>();
  private consumer?: SeqFile;
  private sendseqNext?: () => bigint;
  private state: SenderState;
  private wake?: () => void;
  private dirty = true;

  constructor(opts: OutboxSenderOptions) {
    this.opts = opts;
    this.queue = new Queue(opts.outbox);
    this.log = opts.logger ?? silentLogger;
    this.delivery = deliveryTo(opts.host, opts.place, opts.remote);
    this.state = { host: opts.remote.host, remoteDir: opts.remote.dir, pid: process.pid, updatedAt: Date.now(), sent: 0, duplicates: 0 };
  }

  /** Tokens waiting in the outbox (as last seen). */
  get waiting(): number {
    return this.entries.size;
  }

  get failing(): SenderState['failing'] {
    return this.state.failing;
  }

  get stopped(): SenderState['stopped'] {
    return this.state.stopped;
  }

  private poke = () => {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  private saveState(): void {
    this.state.updatedAt = Date.now();
    const file = senderStatePath(this.opts.outbox);
    try {
      // Not fsynced, on purpose: counters and the last failure, for `net status`; a power cut may
      // roll them back, and the next send rewrites them. No token depends on them.
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(this.state));
      fs.renameSync(`${file}.tmp`, file);
    } catch (err) {
      this.log.debug('net', () => `Cannot write ${file}: ${(err as Error).message}`);
    }
  }

  /** The packets to send now: consecutive numbers from the outbox's nextseq. */
  private async due(): Promise<OutgoingPacket[]> {
    this.entries = await this.queue.rescan(this.entries);
    const next = this.consumer!.read();
    const bySeq = new Map<bigint, JobEntry>();
    for (const e of this.entries.values()) {
      if (e.header.seq < next) {
        // Acknowledged, but this process stopped before deleting it (or its disk failed to). A
        // disk that still fails leaves it for the next look: it is below nextseq, never sent again.
        try {
          fs.rmSync(this.queue.jobPath(e.filename), { force: true });
          this.entries.delete(e.filename);
        } catch (err) {
          if (!isIoFault(err)) throw err;
          this.log.debug('net', () => `Outbox ${this.opts.place}: cannot remove ${e.filename} yet: ${describeSystemError(err)}`);
        }
      } else bySeq.set(e.header.seq, e);
    }
    const out: OutgoingPacket[] = [];
    for (let s = next; out.length < BATCH_PACKETS; s++) {
      const e = bySeq.get(s);
      if (!e) break;
      out.push({ path: this.queue.jobPath(e.filename), id: packetId(e.filename), seq: s });
    }
    return out;
  }

  /** Send until the signal aborts; with `untilEmpty`, return once the outbox is empty or sending keeps failing. */
  async run(signal: AbortSignal, options: { untilEmpty?: boolean } = {}): Promise<void> {
    if (!(await this.open(signal))) return;
    this.sendseqNext = () => outboxNext(this.opts.outbox);
    const watcher = new JobsWatcher(this.queue.jobsDir, { pollInterval: this.opts.pollInterval, safetyInterval: 5, logger: this.log });
    void (async () => {
      while (await watcher.wait(signal)) this.poke();
    })();
    const onAbort = () => this.poke();
    signal.addEventListener('abort', onAbort, { once: true });
    let attempts = 0;
    this.state.stopped = undefined; // each run tries the host's fspl again
    try {
      while (!signal.aborted) {
        this.dirty = false;
        const batch = await this.due();
        if (batch.length === 0) {
          if (options.untilEmpty) return;
          await this.sleep();
          continue;
        }
        const r = await this.send(batch, signal);
        if (signal.aborted) break;
        if (r.error === undefined) {
          if (this.state.failing) this.log.info('net', `Outbox ${this.opts.place}: host ${this.opts.remote.host} reachable again`);
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
            `Outbox ${this.opts.place}: stopped sending to ${this.opts.remote.host}:${this.opts.remote.dir}: ${this.state.stopped.error}; ${this.entries.size} token(s) stay in ${this.opts.outbox}. Fix the fspl: of host ${this.opts.remote.host} (see fspl net check --host), then restart fspl net run`,
          );
          return;
        }
        attempts++;
        this.state.failing = { since: this.state.failing?.since ?? Date.now(), attempts, error: r.error };
        this.saveState();
        if (attempts === 1 || attempts % 10 === 0)
          this.log.warn(
            'net',
            `Outbox ${this.opts.place}: cannot deliver to ${this.opts.remote.host}:${this.opts.remote.dir} (${r.error}); ${this.entries.size} token(s) wait, retrying`,
          );
        // A drain's last pass ends on a delivery that keeps failing (it reports what waits), after
        // a few tries: a passing failure (the receiver's disk full a moment, a dropped connection)
        // is no reason to leave tokens behind (found by test/faults/outbox-workloads). Never on
        // this host's own disk: the run waits that out everywhere else too, and it is over once
        // there is room or the error passes, with nothing for the user to do.
        if (options.untilEmpty && !r.ownDisk && attempts >= LAST_PASS_ATTEMPTS) return;
        // Before trying the host again: new tokens don't cut it short, stopping does.
        await waitUnlessAborted(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(attempts - 1, 10)), signal);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      watcher.close();
      this.saveState();
      this.consumer?.release();
      this.consumer = undefined;
    }
  }

  /**
   * One batch sent. This host's own disk full or failing as the acknowledged packets are taken off
   * the outbox (nextseq, the unlink): a failed attempt like a lost connection, tried again after
   * the backoff; the receiver has the packets, and says `dup` for them when they come again.
   */
  private async send(batch: OutgoingPacket[], signal: AbortSignal): Promise<SendResult & { ownDisk?: true }> {
    try {
      return await this.delivery.send(batch, {
        signal,
        onReady: (remoteNext) => aheadOfOutbox(this.opts.place, this.opts.remote.host, remoteNext, this.sendseqNext!()),
        onAck: (p, dup) => {
          // As queue-process: the number first, then the file.
          this.consumer!.write(p.seq + 1n);
          fs.rmSync(p.path, { force: true });
          this.entries.delete(path.basename(p.path));
          this.state.sent++;
          if (dup) this.state.duplicates++;
          this.state.lastSentAt = Date.now();
        },
      });
    } catch (err) {
      if (!isIoFault(err)) throw err;
      return { acked: 0, duplicates: 0, error: `this host's disk: ${describeSystemError(err)}`, ownDisk: true };
    }
  }

  /**
   * Take the outbox (its jobs/ made durable, its nextseq locked). This host's disk full or failing
   * meanwhile is waited out with the backoff, as a failed delivery is (before, the error ended the
   * sender, and a drain with it: found by test/faults/outbox-workloads). False: stopped first.
   */
  private async open(signal: AbortSignal): Promise<boolean> {
    for (let attempts = 1; !signal.aborted; attempts++) {
      try {
        // Durable like any place (the runner's Place.init made it so already when it committed
        // into this outbox); a sender started alone must not rely on a name a power cut could
        // take back.
        mkdirDurable(this.queue.jobsDir);
        this.consumer = this.queue.lockSeqfile();
        return true;
      } catch (err) {
        if (err instanceof LockedError) throw new NetError(`The outbox ${this.opts.outbox} is being sent by another program (its nextseq.lock is held)`);
        if (!isIoFault(err)) throw err;
        this.state.failing = { since: this.state.failing?.since ?? Date.now(), attempts, error: `this host's disk: ${describeSystemError(err)}` };
        this.saveState();
        if (attempts === 1) this.log.warn('net', `Outbox ${this.opts.place}: cannot open ${this.opts.outbox} (${this.state.failing.error}); retrying`);
        await waitUnlessAborted(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(attempts - 1, 10)), signal);
      }
    }
    return false;
  }

  /** Until new tokens arrive (or the run stops). */
  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      if (this.dirty) return resolve();
      this.wake = resolve;
    });
  }
}
