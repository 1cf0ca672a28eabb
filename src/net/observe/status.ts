/**
 * Where the tokens are and what is stuck: read from the places' directories and, when a run is
 * going, from its live state (live.ts). Works with no run, and with places that have vanished.
 */
import fs from 'node:fs';
import path from 'node:path';
import { LockedError } from '../../errors.js';
import { parseSeqfileText } from '../../seqfile.js';
import { describeLeftovers, type Leftover } from './leftovers.js';
import { readLiveState, type LiveState } from './live.js';
import { isFailing, type LastFailure } from './metrics.js';
import { effectiveOrder, isRead, readersOf, writersOf, type NetModel } from '../model/model.js';
import type { FeedStatus, OutboxStatus } from '../hosts/outbox-status.js';
import { Place } from '../place/place.js';
import { pauseText, readPauses, type PauseRecord } from '../operate/pause.js';
import { RETRIED_VAR, retriedCount } from '../operate/error-tokens.js';
import { mean, oldestAge, p95, timeSince } from './stats.js';

export type NetState = 'running' | 'idle' | 'stuck' | 'drained';

export interface PlaceStatus {
  name: string;
  dir: string;
  /**
   * source (no writer), sink (no reader), error (an error place), inner; with --host, outbox (a
   * place on another host, written here) and inbox (a place of this host written from another
   * host and read here; one read by nothing here is a sink): outbox-status.ts.
   */
  role: 'source' | 'sink' | 'error' | 'inner' | 'outbox' | 'inbox';
  exists: boolean;
  /** Why the directory can't be read, when it can't. */
  problem?: string;
  tokens: number;
  /** Age of the oldest token in the place (by its file's time), ms. */
  oldestAgeMs?: number;
  capacity?: number;
  /** tokens / capacity. */
  fill?: number;
  /** The consumer's next number, for a sequence place that is read. */
  next?: bigint;
  /** Tokens in this place that can't fire (listed in the report's `stuck`). */
  stuck: number;
  /** For a place on another host: its outbox here (net status --host). */
  outbox?: OutboxStatus;
  /** For a place of this host written from another host: that host (net status --host). */
  fedBy?: FeedStatus;
  /** What the NOTE column says of an outbox or a fed place (net status --host). */
  note?: string;
}

export interface TransitionStatus {
  name: string;
  running: number;
  /** Finished firings waiting for their turn to commit, or to be retried. */
  waiting: number;
  fired: number;
  failed: number;
  retried: number;
  /** Keys waiting for a partner (and-merges only). */
  waitingMerges: number;
  stopped?: { reason: string; log: string; at: number };
  /** Paused by an operator (`net pause`), with the pause as status says it ("paused since T by USER: reason"). */
  paused?: PauseRecord & { text: string };
  lastFiredAt?: number;
  /** Time since it last fired, ms. */
  sinceLastFiredMs?: number;
  /** Firings per minute over the last 1 and 15 minutes (0 when no run is going). */
  perMinute1: number;
  perMinute15: number;
  /** Failed attempts per minute over the last 15 minutes (0 when no run is going). */
  failedPerMinute15: number;
  /** Mean and nearest-rank 95th percentile of recent service times, ms. */
  meanServiceMs?: number;
  p95ServiceMs?: number;
  /** Stopped, or an attempt failed in the last 5 minutes. */
  failing: boolean;
  lastFailure?: LastFailure;
  serviceTimes: number[];
  history: LiveState['transitions'][string]['history'];
}

export interface NetStatusReport {
  net: string;
  state: NetState;
  /** A `net run` holds the net now. */
  live: boolean;
  pid?: number;
  /** When the live figures were written (ms since the epoch). */
  updatedAt?: number;
  /** When the run that wrote them started. */
  startedAt?: number;
  /** When this report was made. */
  at: number;
  places: PlaceStatus[];
  transitions: TransitionStatus[];
  /** Tokens that can't fire, and why. */
  stuck: Leftover[];
}

export async function netStatus(net: NetModel, now = Date.now()): Promise<NetStatusReport> {
  const { state: live, running } = readLiveState(net.stateDir);
  const places = new Map<string, Place>();
  const next = new Map<string, bigint>();
  const placeStatus: PlaceStatus[] = [];
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  for (const spec of net.places.values()) {
    const p = new Place(spec, effectiveOrder(net, spec.name));
    places.set(spec.name, p);
    const role = errorPlaces.has(spec.name) ? 'error' : writersOf(net, spec.name).length === 0 ? 'source' : readersOf(net, spec.name).length === 0 ? 'sink' : 'inner';
    const st: PlaceStatus = { name: spec.name, dir: spec.dir, role, exists: p.exists(), tokens: 0, capacity: spec.capacity, stuck: 0 };
    if (st.exists) {
      try {
        await p.refresh(now);
        st.tokens = p.count;
        st.oldestAgeMs = oldestAge(now, arrivals(p));
        if (p.order === 'sequence' && isRead(net, spec.name)) {
          st.next = peekNext(p);
          if (st.next !== undefined) next.set(spec.name, st.next);
        }
      } catch (err) {
        st.problem = (err as Error).message;
      }
    } else st.problem = `no queue at ${spec.dir} (run fspl net init)`;
    if (spec.capacity !== undefined) st.fill = st.tokens / spec.capacity;
    placeStatus.push(st);
  }
  const stoppedNames = new Set(Object.entries(live?.transitions ?? {}).filter(([, t]) => running && t.stopped).map(([n]) => n));
  const pauses = readPauses(net.stateDir);
  const all = describeLeftovers(net, places, next, stoppedNames, undefined, pauses);
  const stuck = all.filter((l) => l.reason !== undefined);
  for (const l of stuck) {
    const st = placeStatus.find((p) => p.name === l.place);
    if (st) st.stuck++;
  }
  const transitions: TransitionStatus[] = [...net.transitions.values()].map((t) => {
    const lt = live?.transitions[t.name];
    const merges = t.inputs.length > 1 ? stuck.filter((l) => l.place === t.inputs[0]!.place && l.code === 'no-partner').length : 0;
    const serviceTimes = lt?.serviceTimes ?? [];
    const stopped = running ? lt?.stopped : undefined;
    const pause = pauses.get(t.name);
    return {
      name: t.name,
      running: running ? (lt?.running ?? 0) : 0,
      waiting: running ? (lt?.waiting ?? 0) : 0,
      fired: lt?.fired ?? 0,
      failed: lt?.failed ?? 0,
      retried: lt?.retried ?? 0,
      waitingMerges: merges,
      stopped,
      paused: pause && { ...pause, text: pauseText(pause) },
      lastFiredAt: lt?.lastFired,
      sinceLastFiredMs: timeSince(now, lt?.lastFired),
      perMinute1: running ? (lt?.rates?.perMinute1 ?? 0) : 0,
      perMinute15: running ? (lt?.rates?.perMinute15 ?? 0) : 0,
      failedPerMinute15: running ? (lt?.rates?.failedPerMinute15 ?? 0) : 0,
      meanServiceMs: lt?.rates ? lt.rates.meanServiceMs : mean(serviceTimes),
      p95ServiceMs: lt?.rates ? lt.rates.p95ServiceMs : p95(serviceTimes),
      failing: isFailing({ stopped, lastFailure: lt?.lastFailure }, now),
      lastFailure: lt?.lastFailure,
      serviceTimes,
      history: lt?.history ?? [],
    };
  });
  const busy = transitions.some((t) => t.running > 0 || t.waiting > 0);
  const pending = all.length;
  let state: NetState;
  if (stuck.length > 0 || transitions.some((t) => t.stopped)) state = busy ? 'running' : 'stuck';
  else if (busy) state = 'running';
  else if (pending > 0) state = running ? 'running' : 'idle';
  else state = 'drained';
  // Stuck is stuck even while other parts run: tokens that can never fire make the net stuck.
  if (stuck.length > 0 && !busy) state = 'stuck';
  return { net: net.file ?? net.dir, state, live: running, pid: running ? live?.pid : undefined, updatedAt: live?.updatedAt, startedAt: live?.startedAt, at: now, places: placeStatus, transitions, stuck };
}

/**
 * The consumer's next number. A running net holds every read place's nextseq lock for the whole
 * run, so then the file is read without the lock (it is rewritten whole; a torn read gives none).
 */
function peekNext(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch (err) {
    if (!(err instanceof LockedError)) throw err;
    try {
      return parseSeqfileText(fs.readFileSync(p.queue.seqfilePath, 'utf8'));
    } catch {
      return undefined;
    }
  }
}

/** When each token of a scanned place arrived, by its file's time (tokens consumed meanwhile are left out). */
function* arrivals(p: Place): Generator<number> {
  for (const t of p.tokens.values()) {
    try {
      yield fs.statSync(t.path).mtimeMs;
    } catch {
      // consumed meanwhile
    }
  }
}

/** One token of a place, as `net serve` lists it. */
export interface TokenInfo {
  seq: bigint;
  key: string;
  /** Age by its file's time, ms. */
  ageMs?: number;
  nop: boolean;
  /** Params as text (invalid UTF-8 replaced). */
  params: string[];
  filename: string;
  /** RETRIED: how often `net retry` put it back (0 when never). */
  retried: number;
  /** For an error token: the transition it failed in, and why. */
  error?: { transition: string; reason: string };
}

/** The first `limit` tokens of a place in its order, and how many it holds; an empty list when its directory can't be read. */
export async function placeTokens(net: NetModel, name: string, options: { limit?: number; now?: number } = {}): Promise<{ total: number; tokens: TokenInfo[]; problem?: string }> {
  const spec = net.places.get(name);
  if (!spec) throw new RangeError(`no place named ${name}`);
  const now = options.now ?? Date.now();
  const p = new Place(spec, effectiveOrder(net, name));
  // Only the first `limit` are listed: only they are indexed.
  p.window = Math.max(1, options.limit ?? 200);
  if (!p.exists()) return { total: 0, tokens: [], problem: `no queue at ${spec.dir}` };
  try {
    await p.refresh(now);
  } catch (err) {
    return { total: 0, tokens: [], problem: (err as Error).message };
  }
  const all = [...p.tokens.values()].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
  const tokens = all.slice(0, options.limit ?? 200).map((t) => {
    let ageMs: number | undefined;
    try {
      ageMs = timeSince(now, fs.statSync(t.path).mtimeMs);
    } catch {
      // consumed meanwhile
    }
    const cmd = t.header.cmd;
    const vars = new Map(cmd.kind === 'Command' ? cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]) : []);
    const failedIn = vars.get('ERROR_TRANSITION');
    return {
      seq: t.seq,
      key: t.key,
      ageMs,
      nop: cmd.kind === 'NOP',
      params: cmd.kind === 'Command' ? cmd.params.map((x) => Buffer.from(x).toString('utf8')) : [],
      filename: t.filename,
      retried: retriedCount(vars.get(RETRIED_VAR)),
      error: failedIn === undefined ? undefined : { transition: failedIn, reason: vars.get('ERROR_REASON') ?? '' },
    };
  });
  return { total: p.count, tokens };
}

/** A transition's recent firings and its last failure, with the end of that failure's kept log. */
export function transitionDetail(net: NetModel, name: string, options: { tailBytes?: number } = {}): {
  history: LiveState['transitions'][string]['history'];
  lastFailure?: LastFailure;
  stopped?: { reason: string; log: string; at: number };
  /** The end of the last failure's stderr: from its log file when kept, else from the live state. */
  stderrTail?: string;
} {
  if (!net.transitions.has(name)) throw new RangeError(`no transition named ${name}`);
  const { state, running } = readLiveState(net.stateDir);
  const lt = state?.transitions[name];
  const lastFailure = lt?.lastFailure;
  let stderrTail = lastFailure?.stderrTail;
  const log = lastFailure?.log;
  // Only a log under STATE/logs is read: live.json names it, but it is not trusted to name any file.
  const logs = path.join(path.resolve(net.stateDir), 'logs') + path.sep;
  if (log && path.resolve(log).startsWith(logs)) {
    try {
      const fd = fs.openSync(log, 'r');
      try {
        const size = fs.fstatSync(fd).size;
        const n = Math.min(size, options.tailBytes ?? 4096);
        const buf = Buffer.alloc(n);
        fs.readSync(fd, buf, 0, n, size - n);
        stderrTail = buf.toString('utf8');
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // rotated away: the live state's tail will do
    }
  }
  return { history: lt?.history ?? [], lastFailure, stopped: running ? lt?.stopped : undefined, stderrTail };
}
