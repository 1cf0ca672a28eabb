/**
 * The runner: the one event loop of `net run`. File events, timers, finished firings and ended
 * commits wake it; it rescans the places, asks the scheduler what to start, starts firings
 * (open-firings.ts), and hands finished ones, in commit order, to the committer.
 *
 * The committer (commit.ts) moves finished firings' tokens through the journal in groups, off the
 * event loop, so that every token moves exactly once, through a crash (recovery.ts) and a power
 * cut, while the loop goes on starting firings.
 */
import { setMaxListeners } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { describeSystemError, LockedError, NetError } from '../../base/errors.js';
import { type Logger, silentLogger } from '../../base/log.js';
import { checkSeconds, setLongTimeout, waitUnlessAborted } from '../../base/timer.js';
import { mkdirDurable } from '../../sys/durable.js';
import { FileLock } from '../../sys/lock.js';
import { Committer } from '../commit/commit.js';
import { CommitPostponed } from '../commit/commit-faults.js';
import { backoffMs, IoFaults, isIoFault, placeOfPath } from '../commit/io-faults.js';
import { recover } from '../commit/recovery.js';
import type { NetModel } from '../model/model.js';
import { recoverOperations } from '../operate/operator.js';
import { Pauses } from '../operate/pause.js';
import { RunDecisions } from './decisions.js';
import { describeLeftovers, type Leftover, leftover } from './leftovers.js';
import { writeLiveState } from './live.js';
import { OpenFirings } from './open-firings.js';
import type { NetEvent, NetRunOptions, NetRunSummary } from './options.js';
import { RunPlaces } from './places.js';
import { LIVE_EVERY_MS, LIVE_SHARE, liveState, newTransitionRun, Throttled, type TransitionRun } from './state.js';
import { LoopWake, type WakeLook } from './wake.js';

/** While a drain waits for other hosts, how often it looks again when nothing wakes it. */
const DRAIN_LOOK_MS = 1000;
/** A held run.lock's wait: a command a killed runner was starting holds its descriptors until its exec. */
const RUN_LOCK_WAIT_MS = 2000;
/** Why running firings are abandoned when the run stops: what a function's `signal.reason` says. */
const runStopping = () => new Error('the run is stopping');

export type { NetEvent, NetRunOptions, NetRunSummary };

export class NetRunner {
  readonly net: NetModel;
  private readonly opts: NetRunOptions;
  private readonly log: Logger;
  private readonly places: RunPlaces;
  private readonly trans = new Map<string, TransitionRun>();
  private readonly committer: Committer;
  private readonly firings: OpenFirings;
  private readonly decisions: RunDecisions;
  private runLock?: FileLock;
  /** Stops watching the places (set while the run watches them). */
  private stopWatching: (() => void) | undefined;
  private readonly loop = new LoopWake(() => this.wake('all'));
  private readonly abort = new AbortController();
  private stopping = false;
  /** A group's commit failed: the run stops with this error (recovery finishes the group). */
  private failure: { err: unknown } | undefined;
  /** Full disks and I/O errors met, by place (io-faults.ts): the run waits them out, and says so. */
  private readonly faults = new IoFaults(() => this.live.run(true));
  /** Transitions an operator paused (operate/pause.ts): they start nothing new. */
  private pauses?: Pauses;
  private readonly totals = { fired: 0, failed: 0 };
  private readonly live = new Throttled(LIVE_EVERY_MS, (now) => this.writeLive(now), LIVE_SHARE);
  private readonly startedAt = Date.now();
  private workers: number | undefined;

  constructor(net: NetModel, opts: NetRunOptions = {}) {
    this.net = net;
    this.opts = opts;
    this.log = opts.logger ?? silentLogger;
    setMaxListeners(0, this.abort.signal); // the run's parts may each listen on it
    for (const t of net.transitions.values()) {
      if (opts.only && !opts.only(t)) continue;
      this.trans.set(t.name, newTransitionRun(t));
    }
    this.places = new RunPlaces(
      net,
      [...this.trans.values()].map((r) => r.spec),
      { ...opts, changed: (place) => this.decisions.placeChanged(place) },
    );
    this.decisions = new RunDecisions(
      {
        net,
        trans: this.trans,
        places: this.places,
        tally: () => this.firings.tally,
        stopping: () => this.stopping,
        paused: () => this.pauses?.current,
        mergeView: (t) => this.places.mergeView(t),
      },
      { check: opts.checkDecisions, probe: opts.decisionProbe },
    );
    this.committer = new Committer(this.places.byName, this.places.consumers, this.places.next, {
      own: (place, name) => this.places.own(place, name),
      failed: (err) => {
        this.failure = { err };
        this.wake('all');
      },
      fault: (place, err) => this.fault(place, err),
      committed: (places) => {
        this.faults.cleared(places);
        this.wake('all');
      },
      carryOn: true,
      recorded: opts.commitProbe,
    });
    this.firings = new OpenFirings({
      log: this.log,
      stateDir: net.stateDir,
      places: this.places,
      committer: this.committer,
      trans: this.trans,
      signal: this.abort.signal,
      totals: this.totals,
      stopping: () => this.stopping,
      emit: (e) => this.emit(e),
      wake: (look) => this.wake(look),
      scheduler: this.decisions.listener,
      fault: (place, err) => this.fault(place, err),
    });
  }

  /** A full disk or an I/O error met in a place: said in the log (once a fault), the live state and the events. */
  private fault(place: string, err: NodeJS.ErrnoException): void {
    const known = this.faults.list().some((f) => f.place === place && f.code === err.code);
    this.faults.report(place, err);
    if (!known) this.log.warn('net', `${place}: ${describeSystemError(err)}; what needs it waits and tries again`);
    this.emit({ type: 'io-error', place, code: err.code ?? 'EIO', message: describeSystemError(err) });
  }

  private emit(e: NetEvent): void {
    try {
      this.opts.onEvent?.(e);
    } catch (err) {
      this.log.warn('net', `An event listener failed: ${(err as Error).message}`);
    }
  }

  /** The one way to wake the run's loop, saying what it looks at again (WakeLook). */
  private wake = (look: WakeLook = 'all'): void => {
    if (look !== 'loop') this.loop.dirty = true;
    if (look === 'all') this.firings.askRefusedAgain();
    this.loop.wake();
  };

  /** Take the locks, create missing places, recover from a crash. */
  private async open(): Promise<void> {
    mkdirDurable(this.net.stateDir); // the journal goes in it: see Journal's constructor
    const lockPath = path.join(this.net.stateDir, 'run.lock');
    try {
      this.runLock = FileLock.acquire(lockPath, { create: true, waitMs: RUN_LOCK_WAIT_MS });
    } catch (err) {
      if (err instanceof LockedError)
        throw new NetError(
          `The net ${this.net.file ?? this.net.dir} is already running (another fspl net run holds ${lockPath})`,
        );
      throw err;
    }
    // Only now, holding the lock: recovery may move tokens, and the activity file is this run's.
    this.opts.activity?.busy();
    try {
      this.places.open();
      await this.recoverThroughFaults();
      this.places.countUnindexed();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Recovery, tried again after a backoff while it meets a full disk or an I/O error (it is
   * idempotent), until it succeeds or the run is stopped: a run started on a full disk waits for
   * room rather than exiting (and being restarted into the same disk).
   */
  private async recoverThroughFaults(): Promise<void> {
    for (let n = 1; ; n++) {
      try {
        await this.recover();
        this.faults.cleared([]);
        return;
      } catch (err) {
        if (!isIoFault(err) || this.opts.signal?.aborted) throw err;
        this.fault(
          placeOfPath(
            err.path,
            [...this.places.values()].map((p) => ({ name: p.name, dir: p.spec.dir })),
          ),
          err,
        );
        await waitUnlessAborted(backoffMs(n), this.opts.signal);
      }
    }
  }

  private async recover(): Promise<void> {
    // first: an operator's recorded move publishes its staged outputs (operate/operator.ts)
    await recoverOperations(this.net);
    const r = await recover(
      this.committer,
      this.places.values(),
      this.places.next,
      this.net.stateDir,
      path.join(this.net.stateDir, 'staging'),
    );
    if (r.commits || r.nops || r.removed) {
      this.log.info(
        'net',
        `Recovered: ${r.commits} commit(s) completed, ${r.nops} number(s) ` +
          `filled with NOP, ${r.removed} staged file(s) removed`,
      );
      this.emit({ type: 'recovered', ...r });
    }
  }

  private poolSize(): number {
    // Asked once: the call costs microseconds (sched_getaffinity), and the loop asks per turn.
    return (this.workers ??= this.opts.workers ?? os.availableParallelism());
  }

  private startFirings(): number | undefined {
    if (this.stopping) return undefined;
    const total = this.poolSize();
    const f = this.firings;
    // A firing that has finished but waits to commit holds no worker.
    const res = this.decisions.decide({ totalWorkers: total, freeWorkers: total - f.running(), now: Date.now() });
    for (const s of res.starts) {
      this.opts.activity?.busy(); // before any token is claimed: others must never see "idle" while it moves
      f.begin(s);
    }
    return res.wakeAt;
  }

  /** Write the live state (through this.live, at most every LIVE_EVERY_MS). */
  private writeLive(now: number): void {
    const { trans, firings, startedAt, stopping, places, faults } = this;
    const state = liveState(trans.values(), firings.set, startedAt, now, stopping, places.counts(), faults);
    try {
      writeLiveState(this.net.stateDir, state);
    } catch (err) {
      this.log.debug('net', () => `Cannot write the live state: ${(err as Error).message}`);
    }
    try {
      this.opts.onLive?.(state);
    } catch (err) {
      this.log.warn('net', `A live state listener failed: ${(err as Error).message}`);
    }
  }

  private close(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
    this.firings.clearTimers();
    // With no firing open, every commit has ended: the journal can start again empty.
    const unemptied =
      this.committer.journal && this.firings.set.size === 0 && !this.failure
        ? this.committer.journal.emptyAtEnd()
        : undefined;
    if (unemptied)
      this.log.warn(
        'net',
        `The journal could not be emptied (${describeSystemError(unemptied)}); ` +
          `its commits are complete, the next run finds nothing to redo`,
      );
    this.places.close();
    this.committer.journal?.close();
    this.runLock?.release();
    this.runLock = undefined;
  }

  /** Follow the operators' pauses (operate/pause.ts); returns how to stop following them. */
  private watchPauses(): () => void {
    this.pauses = new Pauses(this.net.stateDir);
    return this.pauses.watch(() => {
      // Paused with --kill: its running firings are abandoned, their tokens stay (as on a stop).
      for (const f of this.firings.set)
        if (f.running && this.pauses?.current.get(f.transition.name)?.kill)
          f.stop?.abort(new Error(`${f.transition.name} is paused with --kill`));
      this.decisions.everythingChanged(); // pauses are rare: every transition is looked at again
      this.wake('all');
    });
  }

  /** Nothing can start: whatever is left waits forever, for its own reason or none in particular. */
  private leftovers(): Leftover[] {
    const stopped = new Set([...this.trans.values()].filter((r) => r.stopped).map((r) => r.spec.name));
    const only = this.trans.size === this.net.transitions.size ? undefined : new Set(this.trans.keys());
    return describeLeftovers(this.net, this.places.byName, this.places.next, stopped, only, this.pauses?.current).map(
      (l) => (l.reason === undefined ? leftover(l, 'unexplained', 'can not fire') : l),
    );
  }

  /**
   * Run until stopped (signal) or, with drain, until nothing can fire. One function on
   * purpose: the loop's state (the stop handler and its grace timer, idleReported, the
   * last yield, wakeAt) is shared by its steps and by the finally block that ends the run.
   */
  async run(): Promise<NetRunSummary> {
    checkSeconds(this.opts.grace, 'Net.run: grace');
    await this.open();
    const signal = this.opts.signal;
    let cancelGrace: (() => void) | undefined;
    const onStop = () => {
      if (this.stopping) return;
      this.stopping = true;
      this.committer.stop(); // a recorded group waiting for the disk is left to the next run's recovery
      this.decisions.everythingChanged();
      this.log.info('net', 'Stopping: running firings get a moment to finish');
      cancelGrace = setLongTimeout(() => this.abort.abort(runStopping()), (this.opts.grace ?? 5) * 1000);
      this.wake('all');
    };
    if (signal?.aborted) onStop();
    signal?.addEventListener('abort', onStop, { once: true });
    let leftovers: Leftover[] = [];
    let stopWatchingPauses: (() => void) | undefined;
    try {
      this.stopWatching = this.places.watch(() => this.wake('all'), this.log);
      stopWatchingPauses = this.watchPauses();
      let idleReported = false;
      let yielded = Date.now();
      for (;;) {
        if (this.failure) {
          if (this.failure.err instanceof CommitPostponed) break; // stopping: the journal keeps it
          throw this.failure.err;
        }
        // Moves and JS transitions finish in microtasks: let timers, signals and file events in now and then.
        if (Date.now() - yielded > 20) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          yielded = Date.now();
        }
        let wakeAt: number | undefined;
        if (this.loop.dirty) {
          this.loop.dirty = false;
          await this.places.refresh(false, this.log);
          this.firings.applyCommits(); // between two scans, never during one
          // Workers freed by finished firings start again before the commits are asked for.
          if (this.firings.running() < this.poolSize()) this.startFirings();
          this.firings.settle();
          wakeAt = this.startFirings();
          this.firings.settle(); // NOPs commit at once
          if (this.loop.dirty) continue;
        }
        this.firings.dropBlocked(!!this.opts.drain);
        this.live.run();
        // Numbers of undone groups waiting for room to be filled: a drain waits for them too.
        const busy = this.firings.set.size > 0 || this.firings.retryTimers.size > 0 || this.committer.undoneWaiting > 0;
        if (this.stopping && this.firings.set.size === 0) break;
        if (!busy && wakeAt === undefined) {
          if (!idleReported) this.emit({ type: 'idle' });
          idleReported = true;
          let quiet = true;
          if (this.opts.drain || this.opts.activity) {
            // One more look, in case something arrived since the last scan. Other hosts take this
            // run as idle with the tokens it counted before this look (drain.ts).
            this.opts.activity?.beforeIdleCheck();
            await this.places.refresh(true, this.log);
            wakeAt = this.startFirings();
            if (this.firings.set.size > 0) continue;
            quiet = wakeAt === undefined;
            if (quiet) this.opts.activity?.idle();
          }
          if (this.opts.drain && quiet) {
            if (this.opts.drainGate) {
              if (!(await this.opts.drainGate())) {
                await this.loop.forWork(DRAIN_LOOK_MS, this.stopping); // tokens may still come from another host
                continue;
              }
              // The gate took its time: what arrived meanwhile is fired first.
              await this.places.refresh(true, this.log);
              wakeAt = this.startFirings();
              if (this.firings.set.size > 0) continue;
              quiet = wakeAt === undefined;
            }
            if (quiet) {
              leftovers = this.leftovers();
              break;
            }
          }
        } else idleReported = false;
        await this.loop.until(wakeAt);
      }
    } finally {
      cancelGrace?.();
      stopWatchingPauses?.();
      signal?.removeEventListener('abort', onStop);
      this.abort.abort(runStopping());
      await this.committer.idle(); // a group under way ends before the journal closes
      await this.firings.removed();
      this.live.cancel();
      this.live.run(true);
      this.live.cancel();
      this.close();
    }
    return { fired: this.totals.fired, failed: this.totals.failed, leftovers };
  }
}
