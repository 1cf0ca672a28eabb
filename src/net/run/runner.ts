/**
 * The runner: the one event loop of `net run`. File events, timers and finished firings wake it;
 * it rescans the places, asks the scheduler what to start, starts firings, and commits finished
 * ones through the journal, one at a time and synchronously, so a commit is never interleaved
 * with another.
 *
 * A commit: lock the writers of every output place; stage each output packet under a temporary
 * name with its number (place.ts); record the commit in the journal (fsync); rename the outputs
 * into their places; consume the inputs (a sequence place's nextseq moved past them, then the
 * files deleted); record its end. After a crash, recovery redoes every recorded commit with no
 * end (each step is idempotent) and turns the numbers of staged-but-unrecorded outputs into NOP
 * tokens or drops them (place.ts), so every token has moved exactly once.
 *
 * Through a power cut too (docs/reliability.md, "Power cuts"): each step is durable before the
 * next depends on it.
 *   | step                                  | made durable by                                     |
 *   | ------------------------------------- | --------------------------------------------------- |
 *   | 1. outputs staged (net-*.part)        | fsync of each file, then of its jobs/ (Place.stage) |
 *   | 2. their numbers taken (sendseq)      | SeqFile.write: fsync, rename, fsync of the place    |
 *   | 3. the commit recorded                | fsync of the journal (its name: at open)            |
 *   | 4. outputs published (renamed)        | fsync of each output jobs/ (finishCommit)           |
 *   | 5. inputs consumed (nextseq, unlink)  | SeqFile.write; fsync of each input jobs/            |
 *   | 6. the end recorded                   | none needed: 1-5 are durable, and redoing is safe   |
 * Recovery redoes 4 and 5 for every commit without an end, makes them durable, and only then
 * empties the journal.
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
import { fsyncDirs, mkdirDurable } from '../../durable.js';
import { LockedError, NetError } from '../../errors.js';
import { FileLock } from '../../lock.js';
import { silentLogger, type Logger } from '../../log.js';
import { SeqFile } from '../../seqfile.js';
import { checkSeconds, setLongTimeout } from '../../timer.js';
import { JobsWatcher } from '../../watch.js';
import { fire, type FiringOutcome, type OutputSource } from './firing.js';
import { Journal, type CommitRecord, type ConsumedInput, type StagedOutput } from './journal.js';
import { effectiveOrder, type NetModel, type TransitionSpec } from '../model/model.js';
import { INDEX_WINDOW, Place, publish, isNop, KEY_VAR, type Token, type TokenContent } from '../place/place.js';
import type { PacketHeader } from '../../packet/index.js';
import { runAsOf } from './permissions.js';
import { DEFAULT_SERVICE_MS, schedule, type PlaceState, type Start, type TransitionState } from '../plan/scheduler.js';
import { SERVICE_WINDOW, ServiceTimeEstimator } from '../plan/service-time.js';
import { mayCommit } from '../plan/commit-order.js';
import { describeLeftovers, type Leftover } from '../leftovers.js';
import { writeLiveState, type LiveState } from '../observe/live.js';
import { TransitionMonitor } from '../observe/metrics.js';

export interface NetRunOptions {
  /** Exit once nothing runs and nothing can fire. */
  drain?: boolean;
  signal?: AbortSignal;
  /** Poll every this many seconds instead of using file system events. */
  pollInterval?: number;
  /** The shared pool of workers (default: the number of CPUs). */
  workers?: number;
  /** Seconds that running firings get to finish once the run is asked to stop (default 5). */
  grace?: number;
  /** Run only these transitions (default: all). */
  only?: (t: TransitionSpec) => boolean;
  onEvent?: (e: NetEvent) => void;
  /** Called with each live state the run writes (about twice a second while anything happens). */
  onLive?: (state: LiveState) => void;
  logger?: Logger;
  /**
   * How many tokens of a place the run reads (and-merge inputs aside) are indexed at once, at
   * least (default INDEX_WINDOW): memory against directory scans. Tests set it low to exercise
   * refills.
   */
  indexWindow?: number;
}

export type NetEvent =
  | { type: 'start'; firing: string; transition: string; key: string; tokens: Array<{ place: string; seq: bigint }>; attempt: number }
  | { type: 'commit'; firing: string; transition: string; key: string; inputs: Array<{ place: string; seq: bigint }>; outputs: Array<{ place: string; seq: bigint }>; ms: number }
  | { type: 'fail'; firing: string; transition: string; key: string; reason: string; attempt: number; willRetry: boolean }
  | { type: 'error-token'; firing: string; transition: string; key: string; place: string; log: string }
  | { type: 'stopped'; transition: string; reason: string; log: string }
  | { type: 'recovered'; commits: number; nops: number; removed: number }
  | { type: 'idle' };

export interface NetRunSummary {
  fired: number;
  failed: number;
  /** Tokens left that can never fire (with --drain), with why. */
  leftovers: Leftover[];
}

/** A firing from its start to its commit. */
interface Firing {
  id: string;
  transition: TransitionSpec;
  key: string;
  tokens: Token[];
  attempt: number;
  started: number;
  dir: string;
  outcome?: FiringOutcome;
  /** Ordinal among the transition's firings, for commit order. */
  ordinal: number;
  running: boolean;
}

interface TransitionRun {
  spec: TransitionSpec;
  running: number;
  stopped?: { reason: string; log: string; at: number };
  /** Recent service times (ms), for the allocation. */
  service: ServiceTimeEstimator;
  fired: number;
  failed: number;
  retried: number;
  lastFired?: number;
  nextOrdinal: number;
  history: Array<{ firing: string; key: string; at: number; ms: number; ok: boolean; reason?: string }>;
  monitor: TransitionMonitor;
}

const HISTORY = 20;
const RETRY_DELAY_MS = 200;
const LIVE_EVERY_MS = 500;

export class NetRunner {
  readonly net: NetModel;
  private readonly opts: NetRunOptions;
  private readonly log: Logger;
  private readonly places = new Map<string, Place>();
  /** Consumer seqfiles of the places this run reads, held for the whole run. */
  private readonly consumers = new Map<string, SeqFile>();
  private readonly next = new Map<string, bigint>();
  private readonly claimed = new Set<string>();
  private readonly firings = new Set<Firing>();
  private readonly trans = new Map<string, TransitionRun>();
  private journal!: Journal;
  private runLock?: FileLock;
  private watchers: JobsWatcher[] = [];
  private wake: (() => void) | undefined;
  private dirty = true;
  private rotation = 0;
  private retryTimers = new Set<NodeJS.Timeout>();
  private readonly abort = new AbortController();
  private stopping = false;
  private fired = 0;
  private failed = 0;
  private lastLive = 0;
  private liveTimer: NodeJS.Timeout | undefined;
  private readonly startedAt = Date.now();
  /**
   * How many of a place's tokens the scheduler is shown: all of them for a place an and-merge
   * reads (it looks for keys), else as many as its readers could take at once, plus NOPs ahead.
   */
  private readonly lookahead = new Map<string, number>();
  /**
   * Places whose tokens this run must know: the ones it reads, bounded ones and inhibiting ones.
   * The others (sinks, error places) are written, never scanned: memory stays flat however many
   * tokens pile up there.
   */
  private readonly indexed = new Set<string>();
  /** Tokens in the places not indexed: counted at the start, plus what this run wrote there (for the live state). */
  private readonly written = new Map<string, number>();
  /** Names this runner itself just wrote or deleted in jobs/: their events are not news. */
  private readonly ownNames = new Set<string>();

  constructor(net: NetModel, opts: NetRunOptions = {}) {
    this.net = net;
    this.opts = opts;
    this.log = opts.logger ?? silentLogger;
    setMaxListeners(0, this.abort.signal); // one listener per running firing and per watched place
    for (const spec of net.places.values()) this.places.set(spec.name, new Place(spec, effectiveOrder(net, spec.name)));
    for (const t of net.transitions.values()) {
      if (opts.only && !opts.only(t)) continue;
      this.trans.set(t.name, { spec: t, running: 0, service: new ServiceTimeEstimator(SERVICE_WINDOW, DEFAULT_SERVICE_MS), fired: 0, failed: 0, retried: 0, nextOrdinal: 0, history: [], monitor: new TransitionMonitor() });
    }
    for (const t of this.trans.values()) {
      for (const a of t.spec.inputs) this.indexed.add(a.place);
      for (const p of t.spec.inhibit) this.indexed.add(p);
    }
    for (const p of net.places.values()) if (p.capacity !== undefined) this.indexed.add(p.name);
    for (const p of net.places.keys()) {
      const readers = [...this.trans.values()].filter((r) => r.spec.inputs.some((a) => a.place === p)).map((r) => r.spec);
      const keyed = readers.some((t) => t.inputs.length > 1);
      this.lookahead.set(p, keyed ? Infinity : readers.reduce((n, t) => n + t.workers * t.inputs[0]!.take, 0) + 64);
      const place = this.places.get(p)!;
      place.keepHeaders = 2 * this.lookahead.get(p)!;
      // A bounded index, so that memory does not grow with the tokens waiting; and-merge inputs are indexed whole (looked up by key).
      if (!keyed) place.window = Math.max(opts.indexWindow ?? INDEX_WINDOW, 4 * this.lookahead.get(p)!);
    }
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

  /** Places this run consumes from (the inputs of its transitions). */
  private readPlaces(): Place[] {
    const names = new Set<string>();
    for (const t of this.trans.values()) for (const a of t.spec.inputs) names.add(a.place);
    return [...names].map((n) => this.places.get(n)!);
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
    try {
      for (const p of this.places.values()) p.init();
      for (const p of this.readPlaces()) {
        try {
          const sf = p.queue.lockSeqfile();
          this.consumers.set(p.name, sf);
          this.next.set(p.name, sf.read());
        } catch (err) {
          if (err instanceof LockedError) throw new NetError(`Place ${p.name} (${p.spec.dir}) is being processed by another program (its nextseq.lock is held)`);
          throw err;
        }
      }
      this.recover();
      for (const p of this.places.values()) {
        if (this.indexed.has(p.name)) continue;
        try {
          this.written.set(p.name, p.occupancy());
        } catch {
          // a place gone: status reports it
        }
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  private recover(): void {
    const journalPath = path.join(this.net.stateDir, 'journal');
    const pending = Journal.pending(journalPath);
    this.journal = new Journal(journalPath);
    for (const c of pending) this.carryOut(c);
    let nops = 0;
    let removed = 0;
    for (const p of this.places.values()) {
      const parts = p.partFiles();
      if (parts.length === 0) continue;
      const writers = this.lockWritersWaiting([p])!;
      try {
        for (const part of parts) {
          if (p.repairPart(writers[0]!, part, this.next.get(p.name) ?? safeReadNext(p)) === 'nop') nops++;
          else removed++;
        }
      } finally {
        writers.forEach((w) => w.release());
      }
    }
    this.journal.truncate();
    fs.rmSync(this.stagingDir, { recursive: true, force: true });
    fs.mkdirSync(this.stagingDir, { recursive: true });
    if (pending.length || nops || removed) {
      this.log.info('net', `Recovered: ${pending.length} commit(s) completed, ${nops} number(s) filled with NOP, ${removed} staged file(s) removed`);
      this.emit({ type: 'recovered', commits: pending.length, nops, removed });
    }
  }

  /** Lock the writers of these places (sorted, so two committers never deadlock); retries while busy. */
  private lockWritersWaiting(places: Place[]): SeqFile[] | undefined {
    const sorted = [...new Set(places)].sort((a, b) => (a.spec.dir < b.spec.dir ? -1 : 1));
    for (let tries = 0; ; tries++) {
      const held: SeqFile[] = [];
      try {
        for (const p of sorted) held.push(p.lockWriters());
        return held;
      } catch (err) {
        held.forEach((h) => h.release());
        if (!(err instanceof LockedError) || tries >= 50) throw err;
      }
    }
  }

  /** Carry out a recorded commit: every step may already have been done. */
  private carryOut(c: CommitRecord): void {
    this.finishCommit(c);
    for (const i of c.inputs) this.places.get(i.place)?.forget(path.basename(i.file));
    this.journal.done(c.firing, true);
  }

  /**
   * Steps 4 and 5 of a recorded commit (see the table at the top), each durable before the next:
   * the outputs renamed into their places and their jobs/ fsynced, so that no consume is durable
   * while an output it led to could still vanish; then the inputs consumed and their jobs/
   * fsynced, so that the end record, once written, never stands for a consume a power cut undoes.
   * Idempotent: recovery calls it again for commits that may have done any part of it.
   */
  private finishCommit(c: CommitRecord, published?: (o: StagedOutput) => void): void {
    for (const o of c.outputs) {
      // 'gone' only in recovery: renamed, made durable and consumed downstream before the cut.
      if (publish(o.temp, o.final) !== 'gone') published?.(o);
    }
    fsyncDirs(c.outputs.map((o) => path.dirname(o.final)));
    for (const i of c.inputs) this.consume(i);
    fsyncDirs(c.inputs.map((i) => path.dirname(i.file)));
  }

  private consume(i: ConsumedInput): void {
    if (i.sequence) {
      const sf = this.consumers.get(i.place);
      const cur = this.next.get(i.place) ?? 0n;
      if (sf && i.seq + 1n > cur) {
        sf.write(i.seq + 1n); // durable before the unlink: a place never waits for a number whose file is gone
        this.next.set(i.place, i.seq + 1n);
      }
    }
    try {
      fs.unlinkSync(i.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** Commit outputs and consume inputs, through the journal. False: a writer's lock was busy, try later. */
  private commit(firing: string, t: TransitionSpec, outputs: Array<{ place: string; content: TokenContent }>, inputs: Token[]): Array<{ place: string; seq: bigint }> | false {
    const outPlaces = outputs.map((o) => this.places.get(o.place)!);
    let writers: SeqFile[];
    try {
      writers = this.lockWritersWaiting(outPlaces) ?? [];
    } catch (err) {
      if (err instanceof LockedError) return false;
      throw err;
    }
    if (!this.roomFor(outPlaces)) {
      // A bounded place is full: its reader has not yet committed the tokens it took, or a put
      // filled it since this firing started. Commit later (the reader's commit wakes the loop).
      writers.forEach((w) => w.release());
      return false;
    }
    const byPlace = new Map(writers.map((w) => [path.dirname(w.path), w]));
    const staged: CommitRecord['outputs'] = [];
    const headers: PacketHeader[] = [];
    try {
      const tag = firing.slice(0, 8);
      try {
        for (const o of outputs) {
          const p = this.places.get(o.place)!;
          const s = p.stage(byPlace.get(p.spec.dir)!, o.content, tag);
          staged.push({ place: o.place, seq: s.seq, temp: s.temp, final: s.final });
          headers.push(s.header);
        }
      } catch (err) {
        // Nothing is recorded: the staged files go; their numbers, if stored, become NOPs at the next recovery.
        for (const s of staged) fs.rmSync(s.temp, { force: true });
        throw err;
      }
      const record: CommitRecord = {
        firing,
        transition: t.name,
        outputs: staged,
        inputs: inputs.map((tok) => ({ place: tok.place, seq: tok.seq, file: tok.path, sequence: this.places.get(tok.place)!.order === 'sequence' })),
      };
      this.journal.commit(record);
      const now = Date.now();
      const headerOf = new Map(record.outputs.map((o, i) => [o, headers[i]!]));
      for (const o of record.outputs) this.noteOwn(path.basename(o.final));
      for (const tok of inputs) this.noteOwn(tok.filename);
      this.finishCommit(record, (o) => {
        const name = path.basename(o.final);
        if (this.indexed.has(o.place)) this.places.get(o.place)!.adopt(name, headerOf.get(o)!, now);
        else this.written.set(o.place, (this.written.get(o.place) ?? 0) + 1);
      });
    } finally {
      writers.forEach((w) => w.release());
    }
    for (const tok of inputs) {
      this.places.get(tok.place)!.forget(tok.filename);
      this.claimed.delete(tok.path);
    }
    this.journal.done(firing, true);
    this.dirty = true;
    return staged.map((s) => ({ place: s.place, seq: s.seq }));
  }

  /** Whether bounded places have room for these outputs (writers' locks held): capacity is never exceeded. */
  private roomFor(outPlaces: Place[]): boolean {
    for (const p of new Set(outPlaces)) {
      const cap = p.spec.capacity;
      if (cap !== undefined && p.occupancy() + outPlaces.filter((x) => x === p).length > cap) return false;
    }
    return true;
  }

  private noteOwn(name: string): void {
    if (this.opts.pollInterval !== undefined) return; // no events to filter
    if (this.ownNames.size > 10_000) this.ownNames.clear(); // events lost: a spurious rescan at worst
    this.ownNames.add(name);
  }

  /** The variables an output token carries: the inputs' FSPL_SET_* (first input first), KEY set. */
  private inherited(tokens: Token[], key: string, extra: Array<[string, string]> = []): Array<[Uint8Array, Uint8Array]> {
    const out = new Map<string, Uint8Array>();
    for (const tok of tokens) {
      if (tok.header.cmd.kind !== 'Command') continue;
      for (const [k, v] of tok.header.cmd.env) {
        const name = Buffer.from(k).toString();
        if (!out.has(name)) out.set(name, v);
      }
    }
    out.set(KEY_VAR, Buffer.from(key));
    for (const [k, v] of extra) out.set(k, Buffer.from(v));
    return [...out].map(([k, v]) => [Buffer.from(k), v]);
  }

  private marking(): Map<string, PlaceState> {
    const m = new Map<string, PlaceState>();
    const isClaimed = (t: Token) => this.claimed.has(t.path);
    for (const p of this.places.values()) {
      const tokens = p.inOrder(this.lookahead.get(p.name) ?? 0, isClaimed).map((t) => ({ filename: t.filename, seq: t.seq, key: t.key, seen: t.seen, nop: isNop(t) }));
      let next = this.next.get(p.name) ?? 0n;
      let incoming = 0;
      let claimed = 0;
      for (const f of this.firings) {
        for (const tok of f.tokens) {
          if (tok.place !== p.name) continue;
          claimed++;
          if (tok.seq >= next) next = tok.seq + 1n;
        }
        if (f.transition.outputs.includes(p.name)) incoming++;
      }
      m.set(p.name, { name: p.name, order: p.order, next, tokens, count: p.count, claimed: Math.min(claimed, p.count), incoming, capacity: p.spec.capacity });
    }
    return m;
  }

  private transitionStates(): Map<string, TransitionState> {
    const m = new Map<string, TransitionState>();
    for (const r of this.trans.values()) {
      m.set(r.spec.name, {
        name: r.spec.name,
        inputs: r.spec.inputs,
        outputs: r.spec.outputs,
        inhibit: r.spec.inhibit,
        workers: r.spec.workers,
        running: [...this.firings].filter((f) => f.transition === r.spec).length,
        stopped: !!r.stopped || this.stopping,
        serviceTimes: r.service.samples(),
      });
    }
    return m;
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
    const places = this.marking();
    // A firing that has finished but waits to commit holds no worker.
    const res = schedule({ places, transitions: this.transitionStates(), totalWorkers: total, freeWorkers: total - this.runningCount(), now: Date.now(), rotation: this.rotation });
    this.rotation = res.rotation;
    for (const s of res.starts) this.begin(s);
    return res.wakeAt;
  }

  private tokenOf(place: string, filename: string): Token {
    return this.places.get(place)!.tokens.get(filename)!;
  }

  private begin(s: Start): void {
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
      f.outcome = { ok: true, outputs: new Map(), stderrTail: '', stderrPath: '', durationMs: 0, abandoned: false, skip: true } as FiringOutcome & { skip: boolean };
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
    void fire({ transition: f.transition, firing: f.id, key: f.key, tokens: f.tokens, dir: f.dir, signal: this.abort.signal, runAs: runAsOf(f.transition) }).then((outcome) => {
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
        if (this.resolve(f)) progress = true;
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

  /** Resolve a finished firing; true when it is gone from the set. */
  private resolve(f: Firing): boolean {
    const o = f.outcome!;
    const run = this.trans.get(f.transition.name)!;
    // A token removed or replaced from outside meanwhile (a synced folder): the firing is void.
    const vanished = f.tokens.find((t) => !fs.existsSync(t.path));
    if (vanished) {
      this.log.warn('net', `${f.transition.name}: token ${vanished.filename} of place ${vanished.place} vanished while it fired; its firing is dropped`);
      this.places.get(vanished.place)!.dirty = true;
      this.drop(f);
      return true;
    }
    if (o.abandoned) {
      this.drop(f);
      return true;
    }
    if ((o as FiringOutcome & { skip?: boolean }).skip) {
      if (this.commit(f.id, f.transition, [], f.tokens) === false) return false;
      this.drop(f, false);
      return true;
    }
    if (o.ok) {
      const outputs = [...o.outputs].map(([place, src]) => ({ place, content: this.content(f, src) }));
      const committed = this.commit(f.id, f.transition, outputs, f.tokens);
      if (committed === false) return false;
      run.fired++;
      this.fired++;
      run.lastFired = Date.now();
      run.monitor.fired(run.lastFired, o.durationMs);
      this.remember(run, f, o);
      this.emit({ type: 'commit', firing: f.id, transition: f.transition.name, key: f.key, inputs: f.tokens.map((t) => ({ place: t.place, seq: t.seq })), outputs: committed, ms: o.durationMs });
      this.drop(f);
      return true;
    }
    // Failed. While the run stops, a failure may be the stop itself: the token stays, untouched.
    if (this.stopping) {
      this.drop(f);
      return true;
    }
    const willRetry = f.attempt <= f.transition.retries && !this.stopping;
    run.monitor.failed(Date.now(), { key: f.key, reason: o.reason ?? 'failed', stderrTail: o.stderrTail });
    this.emit({ type: 'fail', firing: f.id, transition: f.transition.name, key: f.key, reason: o.reason ?? 'failed', attempt: f.attempt, willRetry });
    this.log.warn('net', `${f.transition.name}: firing on key ${f.key} ${o.reason}${willRetry ? `; retrying (${f.attempt}/${f.transition.retries})` : ''}`);
    if (willRetry) {
      run.retried++;
      f.outcome = undefined;
      f.running = true; // holds its worker while it waits to be retried
      fs.rmSync(f.dir, { recursive: true, force: true });
      const timer = setTimeout(() => {
        this.retryTimers.delete(timer);
        if (this.stopping) {
          f.running = false;
          f.outcome = { ok: false, abandoned: true, outputs: new Map(), stderrTail: '', stderrPath: '', durationMs: 0 };
          this.poke();
          return;
        }
        this.launch(f);
      }, RETRY_DELAY_MS * f.attempt);
      this.retryTimers.add(timer);
      return false;
    }
    run.failed++;
    this.failed++;
    this.remember(run, f, o);
    const log = this.keepLog(f, o);
    if (run.monitor.lastFailure) run.monitor.lastFailure.log = log;
    const errorPlace = f.transition.error;
    if (errorPlace) {
      const extra: Array<[string, string]> = [
        ['ERROR_TRANSITION', f.transition.name],
        ['ERROR_REASON', o.reason ?? 'failed'],
        ['ERROR_STATUS', o.status === undefined ? '' : String(o.status)],
        ['ERROR_STDERR', o.stderrTail],
        ['ERROR_LOG', log],
      ];
      const outputs = f.tokens.map((tok) => ({
        place: errorPlace,
        content: { env: this.inherited([tok], tok.key, extra), params: tok.header.cmd.kind === 'Command' ? tok.header.cmd.params : [], payload: { tokens: [tok.path] } } satisfies TokenContent,
      }));
      if (this.commit(f.id, f.transition, outputs, f.tokens) === false) return false;
      this.emit({ type: 'error-token', firing: f.id, transition: f.transition.name, key: f.key, place: errorPlace, log });
      this.drop(f);
      return true;
    }
    // No error place: the token stays, and this transition stops; the others go on.
    run.stopped = { reason: `${o.reason ?? 'failed'} (key ${f.key})`, log, at: Date.now() };
    this.log.error('net', `${f.transition.name} stopped: firing on key ${f.key} ${o.reason}; its stderr is in ${log}. The token stays in its place; restart the run to try again.`);
    this.emit({ type: 'stopped', transition: f.transition.name, reason: run.stopped.reason, log });
    this.drop(f);
    // Firings of this transition after it give their tokens back.
    for (const g of [...this.firings]) if (g.transition === f.transition && !g.running) this.drop(g);
    return true;
  }

  private remember(run: TransitionRun, f: Firing, o: FiringOutcome): void {
    run.history.push({ firing: f.id, key: f.key, at: Date.now(), ms: o.durationMs, ok: o.ok, reason: o.reason });
    if (run.history.length > HISTORY) run.history.shift();
  }

  private content(f: Firing, src: OutputSource): TokenContent {
    return { env: this.inherited(f.tokens, f.key), payload: src };
  }

  /** Keep a failed firing's stderr in the logs; returns the log's path. */
  private keepLog(f: Firing, o: FiringOutcome): string {
    const dir = path.join(this.logsDir, f.transition.name);
    fs.mkdirSync(dir, { recursive: true });
    const log = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${f.key.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64)}-${f.id.slice(0, 8)}.stderr`);
    try {
      if (o.stderrPath && fs.existsSync(o.stderrPath)) fs.copyFileSync(o.stderrPath, log);
      else fs.writeFileSync(log, `${o.reason ?? ''}\n`);
    } catch (err) {
      this.log.warn('net', `Cannot keep the log of a failed firing: ${(err as Error).message}`);
    }
    return log;
  }

  /** Forget a firing: its staging goes, its unconsumed tokens are free again. */
  private drop(f: Firing, removeDir = true): void {
    this.firings.delete(f);
    for (const tok of f.tokens) this.claimed.delete(tok.path);
    if (removeDir && f.dir && (f.transition.run || f.transition.fn)) fs.rmSync(f.dir, { recursive: true, force: true });
    this.dirty = true;
  }

  private async refresh(all = false): Promise<void> {
    const now = Date.now();
    for (const p of this.places.values()) {
      if (!this.indexed.has(p.name) || (!all && !p.dirty)) continue;
      try {
        if (p.order === 'sequence') p.floor = this.next.get(p.name);
        const fresh = await p.refresh(now);
        for (const t of fresh) this.log.debug('net', () => `Read the header of job ${t.filename} in place ${p.name} (#${t.seq})`);
      } catch (err) {
        // A place gone (unmounted, deleted) is reported by status; its tokens are unknown meanwhile.
        this.log.debug('net', () => `Cannot scan ${p.name}: ${(err as Error).message}`);
        p.clear();
      }
    }
  }

  private writeLive(force = false): void {
    const now = Date.now();
    if (!force && now - this.lastLive < LIVE_EVERY_MS) {
      // Written later all the same, so the last change shows even if the run then goes quiet.
      this.liveTimer ??= setTimeout(() => {
        this.liveTimer = undefined;
        this.writeLive(true);
      }, LIVE_EVERY_MS - (now - this.lastLive)).unref();
      return;
    }
    clearTimeout(this.liveTimer);
    this.liveTimer = undefined;
    this.lastLive = now;
    const state: LiveState = {
      pid: process.pid,
      startedAt: this.startedAt,
      updatedAt: now,
      stopping: this.stopping,
      transitions: Object.fromEntries(
        [...this.trans.values()].map((r) => [
          r.spec.name,
          {
            running: r.running,
            waiting: [...this.firings].filter((f) => f.transition === r.spec && !f.running).length,
            fired: r.fired,
            failed: r.failed,
            retried: r.retried,
            lastFired: r.lastFired,
            stopped: r.stopped,
            serviceTimes: r.service.count ? r.service.samples() : [],
            history: r.history,
            rates: r.monitor.snapshot(now),
            lastFailure: r.monitor.lastFailure,
          },
        ]),
      ),
      places: Object.fromEntries([...this.places.values()].map((p) => [p.name, this.indexed.has(p.name) ? p.count : (this.written.get(p.name) ?? 0)])),
    };
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

  private startWatching(): void {
    for (const p of this.places.values()) {
      const w = new JobsWatcher(p.queue.jobsDir, {
        pollInterval: this.opts.pollInterval,
        logger: this.log,
        // A place filled by a synchronisation tool is looked at more often: events may not come.
        safetyInterval: p.spec.extra.sync === true ? 2 : 5,
        filter: (name) => !this.ownNames.delete(name),
      });
      this.watchers.push(w);
      void (async () => {
        while (await w.wait(this.abort.signal)) {
          p.dirty = true;
          this.poke();
        }
      })();
    }
  }

  private close(): void {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    // Every commit has ended by now (they are synchronous): the journal can start again empty.
    if (this.journal && this.firings.size === 0) this.journal.truncate();
    for (const sf of this.consumers.values()) sf.release();
    this.consumers.clear();
    this.journal?.close();
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
    try {
      this.startWatching();
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
          await this.refresh();
          // Workers freed by finished firings start again before the commits (each some system
          // calls and fsyncs): the next firing's process is under way while they are made.
          if (this.runningCount() < this.poolSize()) this.startFirings();
          this.settle();
          wakeAt = this.startFirings();
          this.settle(); // NOPs commit at once
          this.dropBlocked();
          if (this.dirty) continue;
        }
        this.writeLive();
        const busy = this.firings.size > 0 || this.retryTimers.size > 0;
        if (this.stopping && this.firings.size === 0) break;
        if (!busy && wakeAt === undefined) {
          if (!idleReported) this.emit({ type: 'idle' });
          idleReported = true;
          if (this.opts.drain) {
            // One more look, in case something arrived since the last scan.
            await this.refresh(true);
            if (this.startFirings() === undefined && this.firings.size === 0) {
              const stopped = new Set([...this.trans.values()].filter((r) => r.stopped).map((r) => r.spec.name));
              const only = this.trans.size === this.net.transitions.size ? undefined : new Set(this.trans.keys());
              // Nothing can start: whatever is left waits forever, for its own reason or none in particular.
              leftovers = describeLeftovers(this.net, this.places, this.next, stopped, only).map((l) => ({ ...l, reason: l.reason ?? 'can not fire' }));
              break;
            }
            continue;
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
      signal?.removeEventListener('abort', onStop);
      this.abort.abort();
      clearTimeout(this.liveTimer);
      this.writeLive(true);
      clearTimeout(this.liveTimer);
      this.liveTimer = undefined;
      this.close();
    }
    return { fired: this.fired, failed: this.failed, leftovers };
  }
}

function safeReadNext(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch {
    return undefined;
  }
}

