/**
 * processQueues: many queues served by one process (`queue-process -q A -q B ...`, `--queues-in
 * PARENT`), each as a `queue-process` of it alone would serve it: its own order, nextseq lock and
 * --on-error outcome; a failing job stops its own queue only.
 * - At most `jobs` commands run at once; jobs of one queue never overlap; queues with work take
 *   turns (round-robin.ts), one turn per round whatever their backlog.
 * - A queue is locked only while it has work (peeked first, QueueRun.peek; released when idle, or
 *   while it waits its turn behind many: LOCK_BUDGET); one locked by another processor is skipped.
 * - One pass returns when no queue has more to run (or after maxJobs, or on the signal). With
 *   `watch`, one DirWatchSet watches every jobs/, the parents of --queues-in and the directories
 *   under them; a change marks only its own queue. A queue stopped by a failed job is tried again
 *   when its jobs/ or nextseq changes; one stopped by its disk, or by another's lock, also after
 *   1 s, doubling up to a minute.
 */
import { describeSystemError, JobFailedError } from '../base/errors.js';
import { type Logger, silentLogger } from '../base/log.js';
import { Queue } from '../queue/queue.js';
import { queueDirKind, queueIdentity } from '../queue/queue-dirs.js';
import { type Parent, QueueParents } from '../queue/queues-in.js';
import { DirWatchSet } from '../queue/watch-set.js';
import { atDue } from './due.js';
import type { ProcessQueuesOptions, ProcessQueuesSummary, QueueResult, QueuesEvent } from './options.js';
import { type ProcessSummary, runContext } from './process.js';
import {
  isDiskError,
  lockMember,
  type Member,
  nextLookDelay,
  resumed,
  SKIP_WHY,
  type Watched,
} from './queue-member.js';
import { QueueRun, type RunContext } from './queue-run.js';
import { Turns } from './round-robin.js';

/** Queues waiting for their turn may keep their locks while no more than this many do. */
const LOCK_BUDGET = 64;
/** Looks at queues under way at once (more wait in toLook), so that 10,000 looks never hold up a job or the heap. */
const LOOKS_AT_ONCE = 64;
/** Through a decoder a look runs processes (a scan runs up to 4 decoders at once): fewer looks at once. */
const DECODED_LOOKS_AT_ONCE = 2;
export class ManyQueues {
  private readonly opts: ProcessQueuesOptions;
  private readonly ctx: RunContext;
  private readonly log: Logger;
  private readonly jobs: number;
  private readonly maxJobs: number;
  private readonly watching: boolean;
  /** The queues of the run, by identity (queueIdentity): a queue given twice joins once. */
  private readonly members = new Map<string, Member>();
  /** Every queue that joined, in order, forgotten ones too: the summary's list. */
  private readonly joined: Member[] = [];
  /** Members with a job to run, waiting for their turn. */
  private readonly turns = new Turns<Member>();
  /** What a change (or the start) marked for a look. */
  private readonly toLook = new Set<Watched>();
  private readonly watch: DirWatchSet<Watched> | undefined;
  private readonly parents: QueueParents<Member>;
  private running = 0;
  private looking = 0;
  private started = 0;
  private wakeUp: (() => void) | undefined;
  private idleReported = false;
  private readonly looksAtOnce: number;
  /** Looks due after a disk error or a skip (lookLater), or when a job is due (due); cleared as the run ends. */
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly given: Iterable<string | Queue>,
    opts: ProcessQueuesOptions,
  ) {
    this.opts = opts;
    const jobs = opts.jobs ?? 1;
    if (!Number.isSafeInteger(jobs) || jobs < 1)
      throw new RangeError(`processQueues: jobs must be a whole number >= 1, got ${String(opts.jobs)}`);
    this.jobs = jobs;
    this.ctx = runContext(opts, silentLogger);
    this.log = this.ctx.log;
    this.maxJobs = opts.maxJobs ?? Infinity;
    this.looksAtOnce = opts.decoder === undefined ? LOOKS_AT_ONCE : DECODED_LOOKS_AT_ONCE;
    this.watching = Boolean(opts.watch);
    const mode = typeof opts.watch === 'object' ? opts.watch : {};
    const watch = this.watching
      ? new DirWatchSet<Watched>((w) => this.changed(w), { pollInterval: mode.pollInterval, logger: this.log })
      : undefined;
    this.watch = watch;
    this.parents = new QueueParents<Member>({
      join: (dir, parent, identity) => this.join(this.queueAt(dir), parent, identity),
      forget: (m) => this.forget(m),
      watch: watch && { add: (w, dir) => watch.add(w, dir, { names: 'all' }), remove: (w) => watch.remove(w) },
      log: this.log,
    });
  }

  async run(): Promise<ProcessQueuesSummary> {
    const signal = this.ctx.stopping.stop;
    const onAbort = () => this.poke();
    signal?.addEventListener('abort', onAbort);
    try {
      this.discover();
      for (;;) {
        this.lookAtMarked();
        this.fill();
        if (this.finished()) break;
        await this.sleep();
      }
      // Stopping (a signal, or the limit): the running jobs finish first (or, interrupted, end now).
      while (this.running > 0) await this.sleep();
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.watch?.close();
      for (const t of this.timers) clearTimeout(t);
      for (const m of this.members.values()) m.run.release();
      this.ctx.stopping.close();
    }
    const total: ProcessSummary = { processed: 0, succeeded: 0, failed: 0 };
    const queues = this.joined.map((m): QueueResult => {
      const { processed, succeeded, failed } = m.run.summary;
      total.processed += processed;
      total.succeeded += succeeded;
      total.failed += failed;
      return { queue: m.run.queue.dir, state: m.outcome, error: m.error, processed, succeeded, failed };
    });
    return { ...total, queues };
  }

  private get stopping(): boolean {
    return Boolean(this.ctx.stopping.stop?.aborted) || this.started >= this.maxJobs;
  }

  /** Whether the run is over: nothing runs, and nothing will (one pass), or it is stopping. */
  private finished(): boolean {
    if (this.stopping) return true;
    const busy = this.running > 0 || this.looking > 0 || this.toLook.size > 0 || this.turns.length > 0;
    if (busy) {
      this.idleReported = false;
      return false;
    }
    if (!this.watching) return true;
    if (!this.idleReported) this.emit({ type: 'idle' });
    this.idleReported = true;
    return false;
  }

  /** The queues given and those under the parents, each marked for a first look; watched first, with watch. */
  private discover(): void {
    for (const q of this.given) this.join(typeof q === 'string' ? this.queueAt(q) : q);
    const parents =
      this.opts.queuesIn === undefined
        ? []
        : typeof this.opts.queuesIn === 'string'
          ? [this.opts.queuesIn]
          : this.opts.queuesIn;
    for (const dir of parents) this.parents.add(dir);
  }

  private queueAt(dir: string): Queue {
    const { decoder, decoderTimeout, verifyDecoder, maxHeaderSize, allowedSigners } = this.opts;
    return new Queue(dir, { decoder, decoderTimeout, verifyDecoder, maxHeaderSize, allowedSigners, logger: this.log });
  }

  /**
   * A queue joins the run (unless it is in it already, under another path) and is marked for a
   * look. `known`: its identity, when its parent's listing told it.
   */
  private join(queue: Queue, parent?: Parent<Member>, known?: string): Member | undefined {
    const identity = known ?? queueIdentity(queue.dir);
    if (this.members.has(identity)) return undefined;
    const run = new QueueRun(queue, this.ctx, (e) => this.emit({ ...e, queue: queue.dir }));
    const m: Member = {
      kind: 'queue',
      run,
      outcome: 'done',
      state: 'idle',
      dirty: true,
      looking: false,
      skipNoted: false,
      retries: 0,
      identity,
      parent,
    };
    this.members.set(identity, m);
    this.joined.push(m);
    // Before the first scan: nothing arriving in between is missed. In sequence order nextseq
    // too: queue-set-next past a failed or missing job lets the queue run, with no change in jobs/.
    this.watch?.add(
      m,
      queue.jobsDir,
      this.ctx.timestampOrder ? {} : { file: queue.seqfilePath, fileChanged: () => run.seqMoved() },
    );
    this.emit({ type: 'added', queue: queue.dir });
    this.toLook.add(m);
    return m;
  }

  /** A watched directory changed: mark it for a look, and wake the loop. */
  private changed(w: Watched): void {
    if (w.kind === 'queue') w.dirty = true;
    this.toLook.add(w);
    this.poke();
  }

  /** Look at what was marked, up to looksAtOnce queues at a time (the rest wait for them to end). */
  private lookAtMarked(): void {
    for (const w of this.toLook) {
      if (this.stopping || this.looking >= this.looksAtOnce) return;
      this.toLook.delete(w);
      if (w.kind === 'queue') this.lookAtQueue(w);
      else this.parents.look(w);
    }
  }

  /** Has the queue something to run? Then it waits for its turn. Runs alongside the loop. */
  private lookAtQueue(m: Member): void {
    // a running queue looks again when its pass ends
    if (m.looking || m.state === 'running' || m.state === 'ready' || m.state === 'gone') return;
    m.dirty = false;
    m.looking = true;
    this.looking++;
    m.run
      .peek()
      .then(
        (work) => {
          if (m.state === 'gone' || (m.state === 'stopped' && m.failedAt === m.run.shape())) return;
          if (work) this.ready(m);
          else if (m.state !== 'stopped' && m.state !== 'skipped') m.state = 'idle';
          if (!work && m.state === 'idle' && m.run.dueMs !== undefined) this.due(m);
        },
        (err) => this.failed(m, err),
      )
      .finally(() => {
        m.looking = false;
        this.looking--;
        this.poke();
      });
  }

  private ready(m: Member): void {
    m.state = 'ready';
    this.turns.push(m);
  }

  /** Start jobs while workers are free and queues wait for their turn. */
  private fill(): void {
    while (this.running < this.jobs && !this.stopping) {
      const m = this.turns.next((x) => x.state === 'ready');
      if (!m) return;
      this.running++;
      this.started++;
      m.state = 'running';
      void this.turn(m).finally(() => {
        this.running--;
        this.poke();
      });
    }
  }

  /**
   * One turn of a queue: lock it if needed, run its next job (or a run of NOP jobs), then decide
   * where it goes: back in line, or at rest with its records durable and its lock released.
   */
  private async turn(m: Member): Promise<void> {
    const run = m.run;
    const before = run.summary.processed; // jobs count against maxJobs, failed ones too
    try {
      if (!run.locked && !(await this.lock(m))) return;
      if (!run.planned) await run.scan();
      // This turn was counted against maxJobs when it began; a run of NOPs may take the rest.
      await run.runNext(this.maxJobs - this.started + 1);
      if (m.outcome === 'stopped') resumed(m, this.log);
      if (!run.hasNext() && m.dirty && this.watching && m.state === 'running') {
        m.dirty = false;
        await run.scan(); // what arrived while it ran
      }
      if (m.state === 'gone' || !run.hasNext() || this.stopping) run.rest(); // a failure stops the queue
    } catch (err) {
      this.failed(m, err);
      return;
    } finally {
      this.started += run.summary.processed - before - 1;
    }
    if (m.state === 'gone') {
      run.release(); // forgotten while its job ran
    } else if (run.hasNext() && !this.stopping) {
      this.ready(m);
      // Waiting for its turn behind many others: the lock goes back, lock() takes it again.
      if (this.turns.length > LOCK_BUDGET) run.release();
    } else {
      m.state = 'idle';
      run.release();
      if (run.dueMs !== undefined && !this.stopping) this.due(m);
    }
  }

  /**
   * Its next job is not due yet: watching, looked at again then (one timer per queue); in one pass, stopped as by a
   * failed job when it waits for its next try (--retries), left idle for its not-before time (as at a missing job).
   */
  private due(m: Member): void {
    const err = this.watching ? undefined : m.run.dueError();
    if (err) this.failed(m, err);
    if (!this.watching) return;
    m.dueTimer = atDue(this.timers, m.run.dueMs, () => m.state === 'idle' && this.changed(m), m.dueTimer);
  }

  /** Take m's lock (queue-member.ts lockMember); false, and m skipped, when another processor keeps holding it. */
  private async lock(m: Member): Promise<boolean> {
    if (await lockMember(m, this.log)) return true;
    this.emit({ type: 'skipped', queue: m.run.queue.dir, why: SKIP_WHY });
    // Its holder's last change (a `queue-process -n 1` past a failed job) may have come while it held the lock.
    if (this.watching) this.lookLater(m);
    return false;
  }

  /**
   * A queue's job failed under 'retry', or the queue could not be processed: it stops, the
   * others go on. With watch, a change in its jobs/ tries it again; a queue whose directory is
   * gone is not looked at again (its parent, if any, forgets it).
   */
  private failed(m: Member, err: unknown): void {
    if (m.state === 'gone') {
      m.run.release();
      return;
    }
    m.run.release();
    const gone = queueDirKind(m.run.queue.dir) !== 'queue';
    if (gone && m.parent) {
      m.state = 'idle';
      this.toLook.add(m.parent);
      return;
    }
    const error = err instanceof Error ? err : new Error(String(err));
    m.state = 'stopped';
    m.outcome = 'stopped';
    m.error = error;
    m.failedAt = err instanceof JobFailedError ? m.run.shape() : undefined;
    if (gone) this.watch?.remove(m); // no error loop on a queue that is not there
    this.log.debug('process', () => `Queue ${JSON.stringify(m.run.queue.dir)} stopped: ${describeSystemError(err)}`);
    this.emit({ type: 'stopped', queue: m.run.queue.dir, error });
    if (this.watching && isDiskError(err)) this.lookLater(m);
  }

  /** Watching, after a disk error or a skip: look at the queue again in a while (DISK_RETRY_MS, doubling). */
  private lookLater(m: Member): void {
    const delay = nextLookDelay(m);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (m.state === 'stopped' || m.state === 'skipped') this.changed(m);
    }, delay);
    this.timers.add(timer);
  }

  /** A queue gone from its parent: no more looks, no error loop. A running job ends first (turn). */
  private forget(m: Member): void {
    if (m.state === 'gone') return;
    const running = m.state === 'running';
    m.state = 'gone';
    if (!running) m.run.release();
    this.watch?.remove(m);
    this.members.delete(m.identity);
    if (m.outcome === 'done' || m.outcome === 'skipped') m.outcome = 'removed';
    this.log.debug('process', () => `Queue ${JSON.stringify(m.run.queue.dir)} is gone: forgotten`);
    this.emit({ type: 'removed', queue: m.run.queue.dir });
  }

  private emit(event: QueuesEvent): void {
    try {
      this.opts.onEvent?.(event);
    } catch (err) {
      this.log.warn('process', `onEvent listener failed: ${describeSystemError(err)}`);
    }
  }

  private poke(): void {
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  /** Until a job ends, a look ends, a directory changes or the signal aborts. */
  private sleep(): Promise<void> {
    if (this.toLook.size > 0 && this.looking < this.looksAtOnce && !this.stopping) return Promise.resolve();
    return new Promise<void>((resolve) => (this.wakeUp = resolve));
  }
}

/**
 * Process many queues in one process: `queues` are directories or Queue objects (their decoder
 * and logger kept), opts.queuesIn adds every queue under each parent. Resolves when the pass (or,
 * watching, the run) ends; a queue's failure is in its result, not thrown.
 */
export async function processQueues(
  queues: Iterable<string | Queue>,
  opts: ProcessQueuesOptions,
): Promise<ProcessQueuesSummary> {
  if (!opts.listen) return new ManyQueues(queues, opts).run();
  return (await import('./listen.js')).withQueuesPage(opts, (o) => new ManyQueues(queues, o).run());
}
