/**
 * A run's open firings, from their start to their commit: started on the tokens the scheduler
 * chose, launched (and launched again on a retry), and, once finished, resolved in commit order
 * by the failure policy (apply-outcome.ts), whose commits go to the committer in groups (commit.ts).
 *
 * Commits keep order: a finished firing waits until every firing started before it on the same
 * sequence place has committed or is committing, and (unless `order: none`) every earlier firing
 * of its own transition. A failed firing is retried on the same tokens, so what waits behind it
 * waits. A group's results come back while the run does other things; the run applies them
 * (applyCommits) between two scans of the places, never during one.
 */
import path from 'node:path';
import { v4 as uuidv4 } from 'uuid';
import type { Logger } from '../../base/log.js';
import type { Committer } from '../commit/commit.js';
import { backoffMs, STATE_PLACE, stagingFull } from '../commit/io-faults.js';
import type { CommitResult } from '../commit/request.js';
import type { TokenContent } from '../place/token.js';
import type { Start } from '../plan/scheduler.js';
import { type OutcomeContext, resolve } from './apply-outcome.js';
import { fire } from './fire-transition.js';
import { FiringTally, type TallyListener } from './firing-tally.js';
import type { SignedInput } from './inputs.js';
import type { NetEvent } from './options.js';
import { runAsOf } from './permissions.js';
import type { RunPlaces } from './places.js';
import { StagingSweeper } from './staging.js';
import type { Firing, TransitionRun } from './state.js';
import type { WakeLook } from './wake.js';

type Committed = Extract<CommitResult, { committed: true }>;

/** What the open firings need of their run. */
export interface FiringsContext {
  readonly log: Logger;
  readonly stateDir: string;
  readonly places: RunPlaces;
  readonly committer: Committer;
  readonly trans: Map<string, TransitionRun>;
  readonly signal: AbortSignal;
  /** Firings committed and failed for good, over the run. */
  readonly totals: { fired: number; failed: number };
  stopping(): boolean;
  emit(e: NetEvent): void;
  /** Wake the run's loop (WakeLook says what it looks at again). */
  wake(look: WakeLook): void;
  /** Told what each change of the open firings means for the scheduler's view. */
  readonly scheduler: TallyListener;
  /** A full disk or an I/O error met in a place (or the state's: io-faults.ts STATE_PLACE). */
  fault(place: string, err: NodeJS.ErrnoException): void;
}

export class OpenFirings {
  /** The open firings, in the order they began (only this class adds and deletes). */
  readonly set = new Set<Firing>();
  /** What they amount to (running, committing, tokens held), kept up to date as they change. */
  readonly tally: FiringTally;
  /** Firings begun so far: the commit order's last tie-break (the order they began). */
  private begun = 0;
  /** Firings whose commit was refused (a bounded place full): not asked again until something changes. */
  private readonly refused = new Set<Firing>();
  readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Removes staging files off the event loop, many firings' at once: the run waits for it as it ends. */
  private readonly sweeper = new StagingSweeper();
  /** Groups' results not yet applied to the run's view. */
  private readonly results: Array<{
    f: Firing;
    r: Committed;
    then: (committed: Array<{ place: string; seq: bigint }>) => void;
  }> = [];
  /** Firings whose group met a full disk or an I/O error (commit.ts): each commits again once its timer fires. */
  private readonly diskWaits = new Map<Firing, NodeJS.Timeout>();
  /** A refused commit may go through now: something changed since it was refused. */
  private retryRefused = false;
  private readonly outcomes: OutcomeContext;
  /** Where firings stage their files (joined once: a path per firing is garbage enough). */
  private readonly stagingDir: string;
  /** The signed places' queues and signers, for firings to judge their tokens again (one closure for the run). */
  private readonly signed: ((place: string) => SignedInput | undefined) | undefined;

  constructor(private readonly ctx: FiringsContext) {
    this.stagingDir = path.join(ctx.stateDir, 'staging');
    this.signed = ctx.places.anySigned ? (place) => ctx.places.signedInput(place) : undefined;
    this.tally = new FiringTally((place) => ctx.places.get(place)!.order === 'sequence', ctx.scheduler);
    // The run's stop reaches each running firing through its own controller: one listener for the
    // run, not AbortSignal.any per firing (garbage per firing).
    ctx.signal.addEventListener(
      'abort',
      () => {
        for (const f of this.set) f.stop?.abort(ctx.signal.reason);
      },
      { once: true },
    );
    this.outcomes = {
      log: ctx.log,
      logsDir: path.join(ctx.stateDir, 'logs'),
      totals: ctx.totals,
      stopping: () => ctx.stopping(),
      transition: (name) => ctx.trans.get(name)!,
      place: (name) => ctx.places.get(name)!,
      firings: () => this.set,
      commit: (f, outputs, then) => this.commit(f, outputs, then),
      drop: (f, removeDir) => this.drop(f, removeDir),
      unstage: (f, made) => this.sweeper.remove(f.transition, f.dir, runAsOf(f.transition), made),
      retryAfter: (f, ms) => this.retryAfter(f, ms),
      emit: (e) => ctx.emit(e),
      fault: (err) => ctx.fault(STATE_PLACE, err),
      refuse: (r) => ctx.places.refuse(r, ctx.log),
    };
  }

  /** Workers held: firings running, or waiting to be retried. */
  running(): number {
    return this.tally.running;
  }

  /** f.running, counted (a firing already dropped is no longer counted). */
  private setRunning(f: Firing, running: boolean): void {
    if (this.set.has(f)) this.tally.setRunning(f, running);
    else f.running = running;
  }

  /** f.committing, counted (a firing already dropped is no longer counted). */
  private setCommitting(f: Firing, committing: boolean): void {
    if (this.set.has(f)) this.tally.setCommitting(f, committing);
    else f.committing = committing;
  }

  /** Anything a file event or a finished firing may change: refused commits are asked again. */
  askRefusedAgain(): void {
    this.retryRefused = true;
  }

  begin(s: Start): void {
    const run = this.ctx.trans.get(s.transition)!;
    const tokens = s.tokens.map(({ place, token }) => this.ctx.places.get(place)!.tokens.get(token.filename)!);
    this.ctx.places.claim(tokens);
    const f: Firing = {
      id: uuidv4(),
      transition: run.spec,
      key: tokens[0]!.key,
      tokens,
      attempt: 0,
      started: Date.now(),
      dir: '',
      ordinal: run.nextOrdinal++,
      begun: this.begun++,
      running: !s.skip,
    };
    if (s.skip) f.outcome = { nop: true };
    this.set.add(f);
    this.tally.opened(f);
    if (!s.skip) this.launch(f);
  }

  private launch(f: Firing): void {
    const run = this.ctx.trans.get(f.transition.name)!;
    f.attempt++;
    this.setRunning(f, true);
    f.outcome = undefined;
    f.started = Date.now();
    f.dir = path.join(this.stagingDir, `${f.transition.name}-${f.id}-${f.attempt}`); // a prefix: see stagingOf
    this.ctx.emit({
      type: 'start',
      firing: f.id,
      transition: f.transition.name,
      key: f.key,
      tokens: f.tokens.map((t) => ({ place: t.place, seq: t.seq })),
      attempt: f.attempt,
    });
    run.running++;
    // Stops this firing alone (`net pause --kill`), or the run's stop; a move ends in a microtask
    // and needs none.
    const moves = !f.transition.run && !f.transition.fn;
    f.stop = moves ? undefined : new AbortController();
    if (this.ctx.signal.aborted) f.stop?.abort(this.ctx.signal.reason);
    void fire({
      transition: f.transition,
      firing: f.id,
      key: f.key,
      tokens: f.tokens,
      dir: f.dir,
      signal: f.stop?.signal ?? this.ctx.signal,
      runAs: runAsOf(f.transition),
      signed: this.signed,
    }).then((outcome) => {
      run.running--;
      f.outcome = outcome;
      // A failure while the staging files' disk is full is most likely the disk's (apply-outcome.ts):
      // looked at now, before other firings' staging files come and go.
      f.stagingFull = !outcome.ok && !outcome.abandoned && f.transition.run ? stagingFull(this.stagingDir) : undefined;
      this.setRunning(f, false);
      if (!outcome.abandoned) {
        run.service.record(outcome.durationMs);
        this.ctx.scheduler.transition(f.transition.name); // its weight in the allocation
      }
      this.ctx.wake('all');
    });
  }

  /**
   * Commit or resolve every finished firing whose turn it is: the finished ones not committing,
   * in the order they began per transition (ordinal), then by start time, then the order they
   * began in the run. Those committing block nothing: their group commits before any later one.
   */
  settle(): void {
    if (this.retryRefused) this.refused.clear();
    this.retryRefused = false;
    for (let progress = true; progress; ) {
      progress = false;
      const due = this.tally.finished;
      if (due.size === 0) break;
      const order =
        due.size === 1
          ? [...due]
          : [...due].sort((a, b) => a.ordinal - b.ordinal || a.started - b.started || a.begun - b.begun);
      for (const f of order) {
        if (
          !f.outcome ||
          this.refused.has(f) ||
          this.diskWaits.has(f) ||
          f.committing ||
          !this.set.has(f) ||
          !this.tally.mayCommit(f)
        )
          continue;
        if (resolve(this.outcomes, f)) progress = true;
      }
    }
  }

  /** Ask the committer for f's commit; its result waits for applyCommits. */
  private commit(
    f: Firing,
    outputs: Array<{ place: string; content: TokenContent }>,
    then: (committed: Array<{ place: string; seq: bigint }>) => void,
  ): void {
    this.setCommitting(f, true);
    this.ctx.committer.submit({ firing: f.id, transition: f.transition.name, outputs, inputs: f.tokens }, (r) => {
      if (r.committed) this.results.push({ f, then, r });
      else if (r.fault && this.set.has(f)) {
        this.setCommitting(f, false);
        this.waitForDisk(f); // what waits behind it in commit order waits too
      } else {
        this.setCommitting(f, false); // resolved again in its turn
        // Refused itself: it waits for a change (a reader's commit, a file event).
        if (r.behind || !this.set.has(f)) this.refused.delete(f);
        else this.refused.add(f);
      }
      // Not wake('all'): that would ask the refused ones again at once, and a firing refused behind
      // one of them would be refused with it, again and again. A commit applied asks them again.
      this.ctx.wake(r.committed || r.behind ? 'schedule' : 'loop');
    });
  }

  /** Apply the groups' results to the run's view: outputs indexed, inputs forgotten, then the policy's `then`. */
  applyCommits(): void {
    const now = Date.now();
    for (const { f, r, then } of this.results.splice(0)) {
      this.setCommitting(f, false);
      for (const p of r.published) this.ctx.places.published(p.output, p.header, now);
      for (const tok of f.tokens) {
        this.ctx.places.get(tok.place)!.forget(tok.filename);
        this.ctx.places.consumed(tok);
      }
      this.retryRefused = true;
      this.ctx.wake('schedule');
      then(r.outputs);
    }
  }

  /**
   * f's group was undone for a full disk or an I/O error: it commits again after a backoff (200 ms,
   * doubling with each fault of the firing, at most 5 s), unless the run stops meanwhile.
   */
  private waitForDisk(f: Firing): void {
    f.diskWaits = (f.diskWaits ?? 0) + 1;
    clearTimeout(this.diskWaits.get(f));
    this.diskWaits.set(
      f,
      setTimeout(() => {
        this.diskWaits.delete(f);
        this.ctx.wake('all');
      }, backoffMs(f.diskWaits)),
    );
  }

  get waitingForDisk(): number {
    return this.diskWaits.size;
  }

  /**
   * With --drain or while stopping: when nothing runs any more and finished firings are left, they
   * wait for room in a bounded place that nothing in this run will empty (its reader stopped, or
   * a put filled it). Their tokens go back (their work is lost, the tokens are not); they are
   * left over if they still cannot fire.
   */
  dropBlocked(drain: boolean): void {
    if (!drain && !this.ctx.stopping()) return;
    // Stopping, a firing waiting for the disk gives its tokens back (the next run fires them again).
    if (this.ctx.stopping()) for (const f of [...this.diskWaits.keys()]) this.drop(f);
    if (this.set.size === 0 || this.retryTimers.size > 0 || this.diskWaits.size > 0) return;
    for (const f of this.set) if (f.running || !f.outcome || f.committing) return;
    for (const f of [...this.set]) {
      this.ctx.log.warn(
        'net',
        `${f.transition.name}: a finished firing on key ${f.key} can not commit ` +
          `(a bounded output place stays full); its tokens go back`,
      );
      this.drop(f);
    }
  }

  /** f holds its worker while it waits to be retried. */
  private retryAfter(f: Firing, ms: number): void {
    this.setRunning(f, true);
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (this.ctx.stopping()) {
        f.outcome = { ok: false, abandoned: true, outputs: new Map(), stderrTail: '', stderrPath: '', durationMs: 0 };
        this.setRunning(f, false);
        this.ctx.wake('all');
        return;
      }
      this.launch(f);
    }, ms);
    this.retryTimers.add(timer);
  }

  /** Resolves once every staging file dropped so far is removed. */
  removed(): Promise<void> {
    return this.sweeper.idle();
  }

  /** Forget a firing: its staging goes, its unconsumed tokens are free again. */
  drop(f: Firing, removeDir = true): void {
    clearTimeout(this.diskWaits.get(f));
    this.diskWaits.delete(f);
    if (this.set.has(f)) this.tally.closed(f);
    this.set.delete(f);
    this.refused.delete(f);
    for (const tok of f.tokens) this.ctx.places.release(tok);
    if (removeDir && f.dir) {
      const made = f.outcome && !('nop' in f.outcome) ? f.outcome.made : undefined;
      this.sweeper.remove(f.transition, f.dir, runAsOf(f.transition), made);
    }
    this.ctx.wake('schedule');
  }

  clearTimers(): void {
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    for (const t of this.diskWaits.values()) clearTimeout(t);
    this.diskWaits.clear();
  }
}
