/**
 * `fspl net simulate`: the net run in virtual time with no command run. Every decision is the
 * real scheduler's (schedule() in scheduler.ts) and every commit waits its turn by the real rule
 * (commit-order.ts); only the firings are replaced by a clock: a firing of transition T takes a
 * service time drawn uniformly from MEAN x (1 +/- JITTER). Sources (places no transition writes
 * and some transition reads) get `tokens` tokens each, put as `put()` would: all at once, or as
 * room frees up in a bounded place. A one-of output picks a place at random (seeded), any-of and
 * and-branches write all; nothing fails.
 *
 * The report: the makespan, each place's peak (tokens in it, claimed or not, as capacity counts
 * them), each transition's firings and busy time, and a lower bound on the makespan.
 */
import { NetError } from '../../base/errors.js';
import { effectiveOrder, isRead, type NetModel, readersOf, type TransitionSpec, writersOf } from '../model/model.js';
import { mayCommit } from './commit-order.js';
import { MergeJoins } from './key-join.js';
import { heldBy, lookaheadOf, transitionState } from './marking.js';
import { DEFAULT_SERVICE_MS, type PlaceState, schedule, type TokenRef, type TransitionState } from './scheduler.js';
import { SERVICE_WINDOW, ServiceTimeEstimator } from './service-time.js';

/** A transition's service time: uniform in mean x [1 - jitter, 1 + jitter]. */
export interface ServiceTime {
  /** ms */
  mean: number;
  /** A fraction: 0.5 for +/-50%. */
  jitter: number;
}

export interface SimulateOptions {
  /** Tokens put into each source place. */
  tokens: number;
  /** The shared pool, as `net run --workers`. */
  workers: number;
  /** Service time per transition; a transition not named gets `defaultService`. */
  service?: Record<string, ServiceTime>;
  /** Default { mean: 100, jitter: 0 } (the scheduler's own start value). */
  defaultService?: ServiceTime;
  /** Seed of the random draws (jitter, one-of); default 1. */
  seed?: number;
  /** Give up after this many firings (a guard against nets that loop forever); default 10 million. */
  maxFirings?: number;
}

export interface SimulationReport {
  tokens: number;
  workers: number;
  /** ms of virtual time until nothing more can fire. */
  makespan: number;
  /** A lower bound on the makespan (ms): see lowerBound(). */
  lowerBound: number;
  places: Record<string, { peak: number; final: number; capacity?: number }>;
  transitions: Record<
    string,
    { firings: number; busyMs: number; meanMs: number; service: ServiceTime; assumed: boolean; share: number }
  >;
  /** Tokens left in read places that can never fire (e.g. an and-merge missing partners). */
  leftover: number;
}

/** Parse `T=MEAN[±JITTER%]` (MEAN with a unit: 40ms, 1.5s; ± may be written +-). */
export function parseService(text: string): { transition: string; service: ServiceTime } {
  const m = /^([A-Za-z][A-Za-z0-9_]*)=([0-9]*\.?[0-9]+)(ms|s|m)?(?:(?:±|\+-|\+\/-)([0-9]*\.?[0-9]+)%)?$/.exec(
    text.trim(),
  );
  if (!m) throw new NetError(`invalid --service '${text}': give TRANSITION=MEAN[±JITTER%], e.g. slow=40ms±50%`);
  if (!m[3]) throw new NetError(`invalid --service '${text}': the mean needs a unit (ms, s or m)`);
  const mean = Number(m[2]) * (m[3] === 'ms' ? 1 : m[3] === 's' ? 1000 : 60_000);
  const jitter = m[4] === undefined ? 0 : Number(m[4]) / 100;
  if (jitter > 1) throw new NetError(`invalid --service '${text}': the jitter is at most 100%`);
  return { transition: m[1]!, service: { mean, jitter } };
}

/** mulberry32: a small seeded generator, so that a simulation is repeatable. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface SimPlace {
  name: string;
  order: 'sequence' | 'arrival';
  capacity?: number;
  /** Consumer's next number (moved at commit). */
  next: bigint;
  /** Writers' next number. */
  sendseq: bigint;
  /** Unclaimed tokens, by number. */
  tokens: TokenRef[];
  count: number;
  peak: number;
  /** Tokens still to put (sources). */
  toPut: number;
}

interface SimFiring {
  transition: TransitionSpec;
  ordinal: number;
  tokens: Array<{ place: string; seq: bigint; key: string }>;
  finish: number;
  /** Its service time (ms). */
  ms: number;
  running: boolean;
  /** The output places chosen (one-of: drawn once). */
  outs?: string[];
}

/**
 * A lower bound on the makespan, from the mean service times: the larger of the total work over
 * the pool, and, for each transition, the work of its own firings over the workers it may use
 * (its cap, at most the pool) plus the time one token needs to reach it and to leave the net
 * after it (the longest paths of mean service times before and after it: pipeline fill and drain).
 */
export function lowerBound(
  net: NetModel,
  firings: Map<string, number>,
  service: (t: string) => number,
  workers: number,
): number {
  const names = [...net.transitions.keys()];
  const memoBefore = new Map<string, number>();
  const memoAfter = new Map<string, number>();
  const before = (t: string, seen: Set<string>): number => {
    if (memoBefore.has(t)) return memoBefore.get(t)!;
    let best = 0;
    for (const a of net.transitions.get(t)!.inputs) {
      for (const w of writersOf(net, a.place)) {
        if (seen.has(w.name) || net.transitions.get(w.name)!.error === a.place) continue;
        best = Math.max(best, service(w.name) + before(w.name, new Set([...seen, w.name])));
      }
    }
    memoBefore.set(t, best);
    return best;
  };
  const after = (t: string, seen: Set<string>): number => {
    if (memoAfter.has(t)) return memoAfter.get(t)!;
    let best = 0;
    for (const o of net.transitions.get(t)!.outputs) {
      for (const r of readersOf(net, o).map((x) => x.name)) {
        if (seen.has(r)) continue;
        best = Math.max(best, service(r) + after(r, new Set([...seen, r])));
      }
    }
    memoAfter.set(t, best);
    return best;
  };
  let work = 0;
  let bound = 0;
  for (const t of names) {
    const n = firings.get(t) ?? 0;
    if (n === 0) continue;
    work += n * service(t);
    const cap = Math.min(net.transitions.get(t)!.workers, workers);
    bound = Math.max(bound, before(t, new Set([t])) + (n * service(t)) / cap + after(t, new Set([t])));
  }
  return Math.max(bound, work / workers);
}

/**
 * Run the net in virtual time; see the module comment. One function on purpose:
 * the simulated places, the open firings and the virtual clock are shared by the loop and its
 * helpers (putSources, commitReady), closures over them; a class would be the same code behind
 * `this.`, and the loop reads best beside what it drives.
 */
export function simulate(net: NetModel, opts: SimulateOptions): SimulationReport {
  if (!Number.isSafeInteger(opts.tokens) || opts.tokens < 0)
    throw new NetError(`tokens must be a whole number >= 0, got ${String(opts.tokens)}`);
  if (!Number.isSafeInteger(opts.workers) || opts.workers < 1)
    throw new NetError(`workers must be a whole number >= 1, got ${String(opts.workers)}`);
  for (const name of Object.keys(opts.service ?? {})) {
    if (!net.transitions.has(name))
      throw new NetError(
        `--service names ${JSON.stringify(name)}, which is not a transition ` +
          `(transitions: ${[...net.transitions.keys()].join(', ')})`,
      );
  }
  const defaultService = opts.defaultService ?? { mean: DEFAULT_SERVICE_MS, jitter: 0 };
  const serviceOf = (t: string) => opts.service?.[t] ?? defaultService;
  const rand = random(opts.seed ?? 1);
  const maxFirings = opts.maxFirings ?? 10_000_000;

  const places = new Map<string, SimPlace>();
  for (const spec of net.places.values()) {
    const isSource = writersOf(net, spec.name).length === 0 && isRead(net, spec.name);
    places.set(spec.name, {
      name: spec.name,
      order: effectiveOrder(net, spec.name),
      capacity: spec.capacity,
      next: 1n,
      sendseq: 1n,
      tokens: [],
      count: 0,
      peak: 0,
      toPut: isSource ? opts.tokens : 0,
    });
  }
  // As the runner: the scheduler sees as many tokens of a place as its readers could take at once.
  const lookahead = new Map<string, number>();
  for (const p of net.places.keys()) {
    lookahead.set(p, lookaheadOf(readersOf(net, p)));
  }
  // As the runner: each and-merge's complete sets kept up to date as tokens come and go.
  const joins = new MergeJoins<TokenRef>(net.transitions.values());
  const stats = new Map(
    [...net.transitions.keys()].map((t) => [
      t,
      { firings: 0, busy: 0, service: new ServiceTimeEstimator(SERVICE_WINDOW, defaultService.mean), nextOrdinal: 0 },
    ]),
  );
  const open = new Set<SimFiring>();
  let now = 0;
  let rotation = 0;
  let started = 0;
  let lastEvent = 0;

  const add = (p: SimPlace, key: string) => {
    const tok: TokenRef = { filename: `${p.name}-${p.sendseq}`, seq: p.sendseq, key, seen: now, nop: false };
    p.tokens.push(tok);
    joins.add(p.name, tok);
    p.sendseq++;
    p.count++;
    if (p.count > p.peak) p.peak = p.count;
  };
  const putSources = () => {
    for (const p of places.values()) {
      while (p.toPut > 0 && (p.capacity === undefined || p.count < p.capacity)) {
        add(p, `k${opts.tokens - p.toPut}`);
        p.toPut--;
      }
    }
  };
  const commitReady = (): boolean => {
    let any = false;
    for (let progress = true; progress; ) {
      progress = false;
      const sorted = [...open].sort((a, b) => a.ordinal - b.ordinal);
      for (const f of sorted) {
        if (f.running || f.finish > now || !mayCommit(f, open, (p) => places.get(p)!.order === 'sequence')) continue;
        let outs = f.outs;
        if (!outs) {
          outs = f.transition.outputs;
          if (f.transition.outMode === 'one-of') outs = [outs[Math.floor(rand() * outs.length)]!];
          f.outs = outs;
        }
        // As the runner: a bounded place must have room on disk (claimed tokens still count).
        if (
          outs.some((o) => {
            const p = places.get(o)!;
            return p.capacity !== undefined && p.count + 1 > p.capacity;
          })
        )
          continue;
        for (const o of outs) add(places.get(o)!, f.tokens[0]!.key);
        for (const tok of f.tokens) {
          const p = places.get(tok.place)!;
          p.count--;
          if (p.order === 'sequence' && tok.seq + 1n > p.next) p.next = tok.seq + 1n;
        }
        open.delete(f);
        lastEvent = now;
        progress = true;
        any = true;
      }
    }
    return any;
  };

  for (;;) {
    putSources();
    commitReady();
    putSources();
    const marking = new Map<string, PlaceState>();
    for (const p of places.values()) {
      const { next, claimed, incoming } = heldBy(p.name, p.next, open);
      marking.set(p.name, {
        name: p.name,
        order: p.order,
        next,
        tokens: p.tokens.length > lookahead.get(p.name)! ? p.tokens.slice(0, lookahead.get(p.name)) : p.tokens,
        count: p.count,
        claimed,
        incoming,
        capacity: p.capacity,
      });
    }
    const tstates = new Map<string, TransitionState>();
    for (const t of net.transitions.values()) {
      let running = 0;
      for (const f of open) if (f.transition === t) running++;
      tstates.set(t.name, transitionState(t, running, false, stats.get(t.name)!.service.samples(), joins.view(t)));
    }
    let busy = 0;
    for (const f of open) if (f.running) busy++;
    const res = schedule({
      places: marking,
      transitions: tstates,
      totalWorkers: opts.workers,
      freeWorkers: opts.workers - busy,
      now,
      rotation,
      defaultServiceTime: defaultService.mean,
    });
    rotation = res.rotation;
    for (const s of res.starts) {
      const t = net.transitions.get(s.transition)!;
      const st = stats.get(t.name)!;
      for (const { place, token } of s.tokens) {
        const p = places.get(place)!;
        p.tokens = p.tokens.filter((x) => x !== token);
        joins.remove(place, token);
      }
      const sv = serviceOf(t.name);
      const ms = s.skip ? 0 : Math.max(0, sv.mean * (1 + sv.jitter * (2 * rand() - 1)));
      open.add({
        transition: t,
        ordinal: st.nextOrdinal++,
        tokens: s.tokens.map(({ place, token }) => ({ place, seq: token.seq, key: token.key })),
        finish: now + ms,
        ms,
        running: !s.skip,
      });
      if (!s.skip) {
        st.firings++;
        st.busy += ms;
        started++;
      }
    }
    if (started > maxFirings)
      throw new NetError(`The simulation stopped after ${maxFirings} firings: does the net loop forever?`);
    if (res.starts.length > 0) continue;
    // Nothing to start: advance the clock to the next finish (or batch deadline).
    let next = res.wakeAt;
    for (const f of open) if (f.running && (next === undefined || f.finish < next)) next = f.finish;
    if (next === undefined) {
      if (open.size > 0 && commitReady()) continue; // finished firings that may commit now
      break;
    }
    now = Math.max(now, next);
    for (const f of open) {
      if (f.running && f.finish <= now) {
        f.running = false;
        const st = stats.get(f.transition.name)!;
        if (f.ms > 0 || f.tokens.length > 0) st.service.record(f.ms);
      }
    }
    lastEvent = Math.max(lastEvent, now);
  }

  const firings = new Map([...stats].map(([t, s]) => [t, s.firings]));
  const makespan = lastEvent;
  const report: SimulationReport = {
    tokens: opts.tokens,
    workers: opts.workers,
    makespan,
    lowerBound: lowerBound(net, firings, (t) => serviceOf(t).mean, opts.workers),
    places: Object.fromEntries(
      [...places.values()].map((p) => [p.name, { peak: p.peak, final: p.count, capacity: p.capacity }]),
    ),
    transitions: Object.fromEntries(
      [...stats].map(([t, s]) => [
        t,
        {
          firings: s.firings,
          busyMs: s.busy,
          meanMs: s.firings ? s.busy / s.firings : 0,
          service: serviceOf(t),
          assumed: !opts.service?.[t],
          share: makespan > 0 ? s.busy / (makespan * opts.workers) : 0,
        },
      ]),
    ),
    leftover: [...places.values()].filter((p) => isRead(net, p.name)).reduce((n, p) => n + p.count, 0),
  };
  return report;
}
