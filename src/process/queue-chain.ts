/**
 * A queue's jobs chained (sys/exec-chain.ts): while a job runs and the next is opened ahead
 * (job-ahead.ts), the run arms the running child with the job's record (Finisher.planJob) and
 * the next job's start. At an exit with status 0 the addon makes the record and starts the next
 * job before any JavaScript runs; the run then takes the record's results as if it had made it
 * (Finisher.adoptJob), and the next job's turn waits for the child already started.
 *
 * Only `queue-process` of one queue chains, and only when the job's turn would do nothing but
 * start it and its end nothing but record it: a command, no timeout, no finish hook, no output
 * file, no decoder or signatures, not after a retried job (ready-job.ts's canOpenAhead and
 * chainedStart, queue-run.ts's chainTo). The run says when it may go on (`allowed`: not
 * stopping, below its limit of jobs) and disarms the chain when it must stop.
 */
import type { Logger } from '../base/log.js';
import type { JobEntry } from '../queue/jobs.js';
import type { ChainedStart } from '../sys/exec-chain.js';
import { ChainLink } from '../sys/exec-chain.js';
import { type NativeBatch, nativeBatch } from '../sys/fs-batch.js';
import type { JobFileAt, SpawnIo } from '../sys/native-spawn.js';
import type { PlannedFinish } from './finish.js';
import type { Stopping } from './run-stop.js';

/** A chain armed on the running job: its record and the job started after it. */
interface Armed {
  entry: JobEntry;
  plan: PlannedFinish;
  batch: NativeBatch;
  next: JobEntry;
}

/** The job the addon started, waiting for its turn in the run. */
export interface StartedJob {
  entry: JobEntry;
  child: ChainedStart;
}

export class QueueChain {
  /** The running job's link, when it may be chained. */
  private link: ChainLink | undefined;
  private armed: Armed | undefined;
  private started: StartedJob | undefined;

  /** Listening to the run's stop (once armed): it disarms the chain. */
  private listening = false;
  private readonly onStop = () => this.disarm();

  /** `allowed`: whether the run may start another job after the running one; `stopping`: the run's stops. */
  constructor(
    private readonly allowed: () => boolean,
    private readonly stopping: Pick<Stopping, 'stop'>,
    private readonly log: Logger,
  ) {}

  /** The run is over: no listener left. */
  close(): void {
    this.disarm();
    if (this.listening) this.stopping.stop?.removeEventListener('abort', this.onStop);
    this.listening = false;
  }

  /** A new job starts: its link (its start and exit go to it). */
  begin(): ChainLink | undefined {
    this.link = this.allowed() ? new ChainLink() : undefined;
    this.armed = undefined;
    return this.link;
  }

  /**
   * Arm the running job `entry` (begin), still running: at its exit with status 0, `plan` made and
   * `next` started (`io`, from what was opened ahead for it, while `file` still holds it). Nothing
   * happens when it can't be.
   */
  arm(entry: JobEntry, plan: () => PlannedFinish, next: JobEntry, io: SpawnIo, file: JobFileAt): void {
    if (!this.link?.armable || !this.allowed()) return;
    const p = plan();
    const batch = nativeBatch(p.ops);
    if (!batch || !this.link.arm(batch.encoded, io, file)) return;
    this.armed = { entry, plan: p, batch, next };
    // Listened to from the first arming on: a run that never chains makes no AbortSignal.any (run-stop.ts).
    if (!this.listening) this.stopping.stop?.addEventListener('abort', this.onStop);
    this.listening = true;
  }

  /** The run must not go on after the running job: nothing is started at its exit. */
  disarm(): void {
    this.link?.disarm();
  }

  /**
   * `entry`'s job has ended: its record as the addon made it (its plan and results), if the chain
   * fired; the job it started is kept for its turn (takeStarted).
   */
  fired(entry: JobEntry): { plan: PlannedFinish; results: Int32Array } | undefined {
    const { link, armed } = this;
    this.link = undefined;
    this.armed = undefined;
    const fired = link?.fired;
    if (!fired || !armed) return undefined;
    if (armed.entry !== entry) throw new Error('QueueChain: a chain fired for another job than the one ended');
    if (fired.next) {
      this.started = { entry: armed.next, child: fired.next };
      const [seq, next] = [entry.header.seq, armed.next.header.seq];
      this.log.debug('process', () => `Job ${next} started as job ${seq} ended, once job ${seq} was recorded`);
    }
    return { plan: armed.plan, results: armed.batch.results(fired.results) };
  }

  /** Whether a job was started by the addon and waits for its turn. */
  get hasStarted(): boolean {
    return this.started !== undefined;
  }

  /**
   * The job the addon started, now the caller's to run: its turn, taken from the pass with `take`
   * (the pass's next job: the one it was opened ahead as).
   */
  takeStarted(take: () => JobEntry | undefined): StartedJob | undefined {
    const s = this.started;
    this.started = undefined;
    if (s && take() !== s.entry) throw new Error('QueueChain: a chained job out of its turn');
    return s;
  }
}
