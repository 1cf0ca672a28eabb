/**
 * The runner: the one event loop of `net run`. File events, timers and finished firings wake it;
 * it rescans the places, asks the scheduler what to start, starts firings, and commits finished
 * ones through the journal, one at a time and synchronously, so a commit is never interleaved
 * with another.
 *
 * A commit (commit.ts) moves a finished firing's tokens through the journal, so that every token
 * moves exactly once, through a crash (recovery.ts) and a power cut.
 *
 * Commits keep order: a finished firing waits until every firing started before it on the same
 * sequence place has committed, and (unless `order: none`) every earlier firing of its own
 * transition. A failed firing is retried on the same tokens, so what waits behind it waits.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';
import { mkdirDurable } from '../../durable.js';
import { LockedError, NetError } from '../../errors.js';
import { FileLock } from '../../lock.js';
import { silentLogger, type Logger } from '../../log.js';
import { checkSeconds, setLongTimeout } from '../../timer.js';
import { JobsWatcher } from '../../watch.js';
import { fire } from './firing.js';
import { Committer, type CommitHooks } from './commit.js';
import type { NetEvent, NetRunOptions, NetRunSummary } from './options.js';
import { resolve, type OutcomeContext } from './outcome.js';
import { LIVE_EVERY_MS, liveState, newTransitionRun, Throttled, transitionStates, type Firing, type TransitionRun } from './state.js';
import { RunPlaces } from './places.js';
import { recover } from './recovery.js';
import { recoverOperations } from '../operate/operator.js';
import { Pauses } from '../operate/pause.js';
import type { NetModel, TransitionSpec } from '../model/model.js';
import type { Token, TokenContent } from '../place/token.js';
import { runAsOf } from './permissions.js';
import { schedule, type Start } from '../plan/scheduler.js';
import { mayCommit } from '../plan/commit-order.js';
import { describeLeftovers, leftover, type Leftover } from '../observe/leftovers.js';
import { writeLiveState } from '../observe/live.js';

/** While a drain waits for other hosts, how often it looks again when nothing wakes it. */
const DRAIN_LOOK_MS = 1000;

export type { NetEvent, NetRunOptions, NetRunSummary };

export class NetRunner {
  readonly net: NetModel;
  private readonly opts: NetRunOptions;
  private readonly log: Logger;
  private readonly places: RunPlaces;
  private readonly claimed = new Set<string>();
  private readonly firings = new Set<Firing>();
  private readonly trans = new Map<string, TransitionRun>();
  private readonly committer: Committer;
  /** What a commit tells this run: names it wrote, outputs to index or count, inputs no longer claimed. */
  private readonly hooks: CommitHooks = {
    own: (name) => this.places.own(name),
    published: (o, header, now) => this.places.published(o, header, now),
    consumed: (tok) => this.claimed.delete(tok.path),
  };
  private runLock?: FileLock;
  private watchers: JobsWatcher[] = [];
  private wake: (() => void) | undefined;
  private dirty = true;
  private rotation = 0;
  private retryTimers = new Set<NodeJS.Timeout>();
  private readonly abort = new AbortController();
  private stopping = false;
  private readonly totals = { fired: 0, failed: 0 };
  private readonly outcomes: OutcomeContext;
  private readonly live = new Throttled(LIVE_EVERY_MS, (now) => this.writeLive(now));
  private readonly startedAt = Date.now();
  /** Transitions an operator paused (operate/pause.ts): they start nothing new. */
  private pauses?: Pauses;

  constructor(net: NetModel, opts: NetRunOptions = {}) {
    this.net = net;
    this.opts = opts;
    this.log = opts.logger ?? silentLogger;
    setMaxListeners(0, this.abort.signal); // one listener per running firing and per watched place
    this.outcomes = this.outcomeContext();
    for (const t of net.transitions.values()) {
      if (opts.only && !opts.only(t)) continue;
      this.trans.set(t.name, newTransitionRun(t));
    }
    this.places = new RunPlaces(net, [...this.trans.values()].map((r) => r.spec), opts);
    this.committer = new Committer(this.places.byName, this.places.consumers, this.places.next);
  }

  private get stagingDir(): string {
    return path.join(this.net.stateDir, 'staging');
  }

  private get logsDir(): string {
    return path.join(this.net.stateDir, 'logs');
  }

  private emit(e: NetEvent): void {
    try {
      this.opts.onEvent?.(e);
    } catch (err) {
      this.log.warn('net', `An event listener failed: ${(err as Error).message}`);
    }
  }

  private poke = (): void => {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  };

  /** Until a file event or a finished firing pokes the loop, or `ms` pass. */
  private waitForWork(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.dirty || this.stopping) return resolve();
      const timer = setTimeout(() => this.poke(), ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Take the locks, create missing places, recover from a crash. */
  private open(): void {
    mkdirDurable(this.net.stateDir); // the journal goes in it: see Journal's constructor
    const lockPath = path.join(this.net.stateDir, 'run.lock');
    try {
      this.runLock = FileLock.acquire(lockPath, { create: true });
    } catch (err) {
      if (err instanceof LockedError) throw new NetError(`The net ${this.net.file ?? this.net.dir} is already running (another fspl net run holds ${lockPath})`);
      throw err;
    }
    // Only now, holding the lock: recovery may move tokens, and the activity file is this run's.
    this.opts.activity?.busy();
    try {
      this.places.open();
      this.recover();
      this.places.countUnindexed();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  private recover(): void {
    recoverOperations(this.net); // first: an operator's recorded move publishes its staged outputs (operate/operator.ts)
    const r = recover(this.committer, this.places.values(), this.places.next, this.net.stateDir, this.stagingDir);
    if (r.commits || r.nops || r.removed) {
      this.log.info('net', `Recovered: ${r.commits} commit(s) completed, ${r.nops} number(s) filled with NOP, ${r.removed} staged file(s) removed`);
      this.emit({ type: 'recovered', ...r });
    }
  }

  /** Commit through the committer, keeping this run's view of the places up to date. */
  private commit(firing: string, t: TransitionSpec, outputs: Array<{ place: string; content: TokenContent }>, inputs: Token[]): Array<{ place: string; seq: bigint }> | false {
    const committed = this.committer.commit(firing, t, outputs, inputs, this.hooks);
    if (committed !== false) this.dirty = true;
    return committed;
  }

  /** The shared pool of workers. */
  private poolSize(): number {
    return this.opts.workers ?? os.availableParallelism();
  }

  private runningCount(): number {
    let n = 0;
    for (const f of this.firings) if (f.running) n++;
    return n;
  }

  private startFirings(): number | undefined {
    if (this.stopping) return undefined;
    const total = this.poolSize();
    const places = this.places.marking(this.claimed, this.firings);
    // A firing that has finished but waits to commit holds no worker.
    const res = schedule({ places, transitions: transitionStates(this.trans.values(), this.firings, this.stopping, this.pauses?.names()), totalWorkers: total, freeWorkers: total - this.runningCount(), now: Date.now(), rotation: this.rotation });
    this.rotation = res.rotation;
    for (const s of res.starts) this.begin(s);
    return res.wakeAt;
  }

  private tokenOf(place: string, filename: string): Token {
    return this.places.get(place)!.tokens.get(filename)!;
  }

  private begin(s: Start): void {
    this.opts.activity?.busy(); // before any token is claimed: others must never see "idle" while it moves
    const run = this.trans.get(s.transition)!;
    const tokens = s.tokens.map(({ place, token }) => this.tokenOf(place, token.filename));
    for (const tok of tokens) this.claimed.add(tok.path);
    const f: Firing = {
      id: uuidv4(),
      transition: run.spec,
      key: tokens[0]!.key,
      tokens,
      attempt: 0,
      started: Date.now(),
      dir: '',
      ordinal: run.nextOrdinal++,
      running: !s.skip,
    };
    this.firings.add(f);
    if (s.skip) {
      // A NOP: nothing to run; it commits (is consumed) in its turn.
      f.outcome = { nop: true };
      return;
    }
    this.launch(f);
  }

  private launch(f: Firing): void {
    const run = this.trans.get(f.transition.name)!;
    f.attempt++;
    f.running = true;
    f.outcome = undefined;
    f.started = Date.now();
    f.dir = path.join(this.stagingDir, `${f.transition.name}-${f.id}-${f.attempt}`);
    if (f.transition.run || f.transition.fn) fs.mkdirSync(f.dir, { recursive: true }); // a move needs no staging
    this.emit({ type: 'start', firing: f.id, transition: f.transition.name, key: f.key, tokens: f.tokens.map((t) => ({ place: t.place, seq: t.seq })), attempt: f.attempt });
    run.running++;
    f.stop = new AbortController();
    const signal = AbortSignal.any([this.abort.signal, f.stop.signal]);
    void fire({ transition: f.transition, firing: f.id, key: f.key, tokens: f.tokens, dir: f.dir, signal, runAs: runAsOf(f.transition) }).then((outcome) => {
      run.running--;
      f.running = false;
      f.outcome = outcome;
      if (!outcome.abandoned) {
        run.service.record(outcome.durationMs);
      }
      this.poke();
    });
  }

  /** Whether f may commit now: nothing started before it on its sequence inputs (or its own transition, when ordered) is still open. */
  private mayCommit(f: Firing): boolean {
    return mayCommit(f, this.firings, (place) => this.places.get(place)!.order === 'sequence');
  }

  /** Commit or resolve every finished firing whose turn it is. */
  private settle(): void {
    for (let progress = true; progress; ) {
      progress = false;
      for (const f of [...this.firings].sort((a, b) => a.ordinal - b.ordinal || a.started - b.started)) {
        if (!f.outcome || !this.mayCommit(f)) continue;
        if (resolve(this.outcomes, f)) progress = true;
      }
    }
  }

  /**
   * With --drain or while stopping: when nothing runs any more and finished firings are left, they
   * wait for room in a bounded place that nothing in this run will empty (its reader stopped, or
   * a put filled it). Their tokens go back (their work is lost, the tokens are not); they are
   * left over if they still cannot fire.
   */
  private dropBlocked(): void {
    if (!this.opts.drain && !this.stopping) return;
    if (this.firings.size === 0 || this.retryTimers.size > 0) return;
    for (const f of this.firings) if (f.running || !f.outcome) return;
    for (const f of [...this.firings]) {
      this.log.warn('net', `${f.transition.name}: a finished firing on key ${f.key} can not commit (a bounded output place stays full); its tokens go back`);
      this.drop(f);
    }
  }

  /** What the failure policy (outcome.ts) may do to this run (built once the constructor has set log and net). */
  private outcomeContext(): OutcomeContext {
    return {
      log: this.log,
      logsDir: this.logsDir,
      totals: this.totals,
      stopping: () => this.stopping,
      transition: (name) => this.trans.get(name)!,
      place: (name) => this.places.get(name)!,
      firings: () => this.firings,
      commit: (firing, t, outputs, inputs) => this.commit(firing, t, outputs, inputs),
      drop: (f, removeDir) => this.drop(f, removeDir),
      retryAfter: (f, ms) => this.retryAfter(f, ms),
      emit: (e) => this.emit(e),
    };
  }

  private retryAfter(f: Firing, ms: number): void {
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (this.stopping) {
        f.running = false;
        f.outcome = { ok: false, abandoned: true, outputs: new Map(), stderrTail: '', stderrPath: '', durationMs: 0 };
        this.poke();
        return;
      }
      this.launch(f);
    }, ms);
    this.retryTimers.add(timer);
  }

  /** Forget a firing: its staging goes, its unconsumed tokens are free again. */
  private drop(f: Firing, removeDir = true): void {
    this.firings.delete(f);
    for (const tok of f.tokens) this.claimed.delete(tok.path);
    if (removeDir && f.dir && (f.transition.run || f.transition.fn)) fs.rmSync(f.dir, { recursive: true, force: true });
    this.dirty = true;
  }

  /** Write the live state (through this.live, at most every LIVE_EVERY_MS). */
  private writeLive(now: number): void {
    const state = liveState(this.trans.values(), this.firings, this.startedAt, now, this.stopping, this.places.counts());
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
    for (const w of this.watchers) w.close();
    this.watchers = [];
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    // Every commit has ended by now (they are synchronous): the journal can start again empty.
    if (this.committer.journal && this.firings.size === 0) this.committer.journal.truncate();
    this.places.close();
    this.committer.journal?.close();
    this.runLock?.release();
    this.runLock = undefined;
  }

  /** Run until stopped (signal) or, with drain, until nothing can fire. */
  async run(): Promise<NetRunSummary> {
    checkSeconds(this.opts.grace, 'Net.run: grace');
    this.open();
    const signal = this.opts.signal;
    let cancelGrace: (() => void) | undefined;
    const onStop = () => {
      if (this.stopping) return;
      this.stopping = true;
      this.log.info('net', 'Stopping: running firings get a moment to finish');
      cancelGrace = setLongTimeout(() => this.abort.abort(), (this.opts.grace ?? 5) * 1000);
      this.poke();
    };
    if (signal?.aborted) onStop();
    signal?.addEventListener('abort', onStop, { once: true });
    let leftovers: Leftover[] = [];
    let stopWatchingPauses: (() => void) | undefined;
    try {
      this.places.watch(this.watchers, this.poke, this.abort.signal, this.log);
      this.pauses = new Pauses(this.net.stateDir);
      stopWatchingPauses = this.pauses.watch(() => {
        // Paused with --kill: its running firings are abandoned, their tokens stay (as on a stop).
        for (const f of this.firings) if (f.running && this.pauses?.current.get(f.transition.name)?.kill) f.stop?.abort();
        this.poke();
      });
      let idleReported = false;
      let yielded = Date.now();
      for (;;) {
        // Moves and JS transitions finish in microtasks: let timers, signals and file events in now and then.
        if (Date.now() - yielded > 20) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          yielded = Date.now();
        }
        let wakeAt: number | undefined;
        if (this.dirty) {
          this.dirty = false;
          await this.places.refresh(false, this.log);
          // Workers freed by finished firings start again before the commits (each some system
          // calls and fsyncs): the next firing's process is under way while they are made.
          if (this.runningCount() < this.poolSize()) this.startFirings();
          this.settle();
          wakeAt = this.startFirings();
          this.settle(); // NOPs commit at once
          this.dropBlocked();
          if (this.dirty) continue;
        }
        this.live.run();
        const busy = this.firings.size > 0 || this.retryTimers.size > 0;
        if (this.stopping && this.firings.size === 0) break;
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
            if (this.firings.size > 0) continue;
            quiet = wakeAt === undefined;
            if (quiet) this.opts.activity?.idle();
          }
          if (this.opts.drain && quiet) {
            if (this.opts.drainGate) {
              if (!(await this.opts.drainGate())) {
                await this.waitForWork(DRAIN_LOOK_MS); // tokens may still come from another host
                continue;
              }
              // The gate took its time: what arrived meanwhile is fired first.
              await this.places.refresh(true, this.log);
              wakeAt = this.startFirings();
              if (this.firings.size > 0) continue;
              quiet = wakeAt === undefined;
            }
            if (quiet) {
              const stopped = new Set([...this.trans.values()].filter((r) => r.stopped).map((r) => r.spec.name));
              const only = this.trans.size === this.net.transitions.size ? undefined : new Set(this.trans.keys());
              // Nothing can start: whatever is left waits forever, for its own reason or none in particular.
              leftovers = describeLeftovers(this.net, this.places.byName, this.places.next, stopped, only, this.pauses?.current).map((l) => (l.reason === undefined ? leftover(l, 'unexplained', 'can not fire') : l));
              break;
            }
          }
        } else idleReported = false;
        await new Promise<void>((resolve) => {
          if (this.dirty) return resolve();
          // A batch's max-wait may be months away: setLongTimeout, not setTimeout, which would fire at once.
          const cancelWake = wakeAt !== undefined ? setLongTimeout(() => this.poke(), Math.max(0, wakeAt - Date.now()) + 5) : undefined;
          this.wake = () => {
            cancelWake?.();
            resolve();
          };
        });
      }
    } finally {
      cancelGrace?.();
      stopWatchingPauses?.();
      signal?.removeEventListener('abort', onStop);
      this.abort.abort();
      this.live.cancel();
      this.live.run(true);
      this.live.cancel();
      this.close();
    }
    return { fired: this.totals.fired, failed: this.totals.failed, leftovers };
  }
}
