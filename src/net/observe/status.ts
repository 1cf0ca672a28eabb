/**
 * Where the tokens are and what is stuck: read from the places' directories and, when a run is
 * going, from its live state (live.ts). Works with no run, and with places that have vanished.
 */
import fs from 'node:fs';
import os from 'node:os';
import { describeSystemError, LockedError, systemErrorWords } from '../../base/errors.js';
import { SeqFile } from '../../sys/seqfile.js';
import type { IoErrorCount, PlaceFault } from '../commit/io-faults.js';
import type { SenderState } from '../hosts/outbox-sender.js';
import { effectiveOrder, isRead, type NetModel, readersOf, writersOf } from '../model/model.js';
import { refusedCounts } from '../operate/aside-queue.js';
import { type PauseRecord, pauseText, readPauses } from '../operate/pause.js';
import { Place } from '../place/place.js';
import { isSignedPlace } from '../place/signatures.js';
import { describeLeftovers, type Leftover } from '../run/leftovers.js';
import { type LiveState, readLiveState } from '../run/live.js';
import { isFailing, type LastFailure } from '../run/monitor.js';
import { mean, oldestAge, p95, timeSince } from '../run/stats.js';
import { mayStillCome, type NetNow, prospects } from './prospects.js';

export type NetState = 'running' | 'idle' | 'stuck' | 'drained';

/** A place on another host that this host writes: its outbox here (`net status --host`, outbox-status.ts). */
export interface OutboxStatus {
  host: string;
  /** The place's directory on its host. */
  remoteDir: string;
  /** ssh, NNCP, or a synchronisation tool that shares the outbox's jobs/ (sync: true). */
  via: 'ssh' | 'sync' | 'nncp';
  /** Tokens waiting to leave (the outbox's tokens). */
  waiting: number;
  /** The outbox has no queue yet: no run has committed into it, nor has `net init --host` made it. */
  empty?: true;
  /** The sender's last report (ssh and NNCP). */
  sender?: SenderState;
  /** Through NNCP: what was handed to it, and what its spool here still holds for the node. */
  nncp?: NncpOutboxStatus;
}

/**
 * An outbox emptied through NNCP. A token handed to NNCP is out of the outbox; whether it has
 * arrived is known on the receiving host (its place's received ranges), not here: what this host
 * can know is whether NNCP has moved it off this node yet.
 */
export interface NncpOutboxStatus {
  node: string;
  /** Every token numbered up to this was handed to NNCP (none yet: 0). */
  handedThrough: bigint;
  /**
   * NNCP packets in this node's spool for the node (all of NNCP's,
   * a batch of tokens each), or why nncp-stat could not say.
   */
  spool?: { packets: number } | { error: string };
}

/** For a place of this host that another host writes: who feeds it. */
export interface FeedStatus {
  host: string;
  /** That host's outbox, emptied over ssh or NNCP, or shared by a synchronisation tool. */
  via: 'ssh' | 'sync' | 'nncp';
  /** Through NNCP: the numbers received so far, as ranges (`1-250, 252-300`): a gap is on its way. */
  received?: string;
}

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
  /** For a place that requires signatures: its tokens refused and set aside (still in the set-aside queue). */
  refused?: number;
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

/**
 * Something said once about the report as a whole: `read-only` (this user may read the net but not lock its places).
 */
export interface StatusNote {
  code: 'read-only';
  text: string;
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
  /** Tokens that can never fire, and why: nothing in the net can bring what they wait for (prospects.ts). */
  stuck: Leftover[];
  /** Tokens that can't fire now, and why, but whose partner, number, room, batch or resume can still come. */
  waiting: Leftover[];
  /** What is said once about the whole report (absent when nothing). */
  notes?: StatusNote[];
  /**
   * Places whose disk is full or failing now, as the live run met it (`(state)`: the state
   * directory's), and since when: what needs them waits and tries again (absent when none).
   */
  ioFaults?: PlaceFault[];
  /** I/O errors the live run met, by place and error (absent when none). */
  ioErrors?: IoErrorCount[];
}

export interface NetStatusOptions {
  /** The time of the report (ms since the epoch). */
  now?: number;
  /** Places another host writes (net status --host): tokens may still come from there. */
  fedFromElsewhere?: ReadonlySet<string>;
}

/** The places as read from their directories: their status rows, and what the leftovers are found from. */
interface PlacesRead {
  rows: PlaceStatus[];
  places: Map<string, Place>;
  next: Map<string, bigint>;
  /** A place's lock could not be taken for want of permission (a user who may read, not write). */
  lockDenied?: string;
}

async function readPlaces(net: NetModel, now: number): Promise<PlacesRead> {
  const read: PlacesRead = { rows: [], places: new Map(), next: new Map() };
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  const refused = [...net.places.values()].some(isSignedPlace) ? refusedCounts(net) : undefined;
  for (const spec of net.places.values()) {
    const p = new Place(spec, effectiveOrder(net, spec.name));
    read.places.set(spec.name, p);
    const role = errorPlaces.has(spec.name)
      ? 'error'
      : writersOf(net, spec.name).length === 0
        ? 'source'
        : readersOf(net, spec.name).length === 0
          ? 'sink'
          : 'inner';
    const st: PlaceStatus = {
      name: spec.name,
      dir: spec.dir,
      role,
      exists: p.exists(),
      tokens: 0,
      capacity: spec.capacity,
      stuck: 0,
    };
    if (st.exists) {
      try {
        await p.refresh(now);
        st.tokens = p.count;
        st.oldestAgeMs = oldestAge(now, arrivals(p));
        if (p.order === 'sequence' && isRead(net, spec.name)) {
          const peeked = peekNext(p);
          st.next = peeked.next;
          if (st.next !== undefined) read.next.set(spec.name, st.next);
          read.lockDenied ??= peeked.denied;
        }
      } catch (err) {
        st.problem = describeSystemError(err);
      }
    } else st.problem = `no queue at ${spec.dir} (run fspl net init)`;
    if (spec.capacity !== undefined) st.fill = st.tokens / spec.capacity;
    if (refused && isSignedPlace(spec)) st.refused = refused.get(spec.name) ?? 0;
    read.rows.push(st);
  }
  return read;
}

/** Leftovers split into the stuck and the waiting (prospects.ts), with the prospects' inputs. */
function sortLeftovers(
  net: NetModel,
  read: PlacesRead,
  all: Leftover[],
  open: ReadonlySet<string>,
  stopped: ReadonlySet<string>,
  fedFromElsewhere?: ReadonlySet<string>,
): { stuck: Leftover[]; waiting: Leftover[] } {
  const holds = new Map<string, number>();
  for (const l of all) if (l.code !== 'below-next') holds.set(l.place, (holds.get(l.place) ?? 0) + 1);
  const now: NetNow = { holds: (place) => holds.get(place) ?? 0, open, stopped, fedFromElsewhere };
  const p = prospects(net, now);
  const stuck: Leftover[] = [];
  const waiting: Leftover[] = [];
  for (const l of all) {
    if (l.reason === undefined) continue;
    if (
      mayStillCome(
        l,
        p,
        now,
        (place) => readersOf(net, place),
        (place) => writersOf(net, place),
      )
    )
      waiting.push(l);
    else stuck.push(l);
  }
  const rows = new Map(read.rows.map((r) => [r.name, r]));
  for (const l of stuck) rows.get(l.place)!.stuck++;
  return { stuck, waiting };
}

export async function netStatus(net: NetModel, options: NetStatusOptions = {}): Promise<NetStatusReport> {
  const now = options.now ?? Date.now();
  const { state: live, running } = readLiveState(net.stateDir);
  const read = await readPlaces(net, now);
  const liveOf = Object.entries(live?.transitions ?? {});
  const stoppedNames = new Set(liveOf.filter(([, t]) => running && t.stopped).map(([n]) => n));
  const open = new Set(liveOf.filter(([, t]) => running && (t.running > 0 || t.waiting > 0)).map(([n]) => n));
  const pauses = readPauses(net.stateDir);
  const all = describeLeftovers(net, read.places, read.next, stoppedNames, undefined, pauses);
  const { stuck, waiting } = sortLeftovers(net, read, all, open, stoppedNames, options.fedFromElsewhere);
  const transitions: TransitionStatus[] = [...net.transitions.values()].map((t) => {
    const lt = live?.transitions[t.name];
    const merges =
      t.inputs.length > 1
        ? [...stuck, ...waiting].filter((l) => l.place === t.inputs[0]!.place && l.code === 'no-partner').length
        : 0;
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
  let state: NetState;
  if (stuck.length > 0 || transitions.some((t) => t.stopped)) state = busy ? 'running' : 'stuck';
  else if (busy) state = 'running';
  else if (all.length > 0) state = running ? 'running' : 'idle';
  else state = 'drained';
  const notes: StatusNote[] = read.lockDenied ? [{ code: 'read-only', text: read.lockDenied }] : [];
  return {
    net: net.file ?? net.dir,
    state,
    live: running,
    pid: running ? live?.pid : undefined,
    updatedAt: live?.updatedAt,
    startedAt: live?.startedAt,
    at: now,
    places: read.rows,
    transitions,
    stuck,
    waiting,
    ...(notes.length ? { notes } : {}),
    ...(running && live?.ioFaults?.length ? { ioFaults: live.ioFaults } : {}),
    ...(running && live?.ioErrors?.length ? { ioErrors: live.ioErrors } : {}),
  };
}

/** Errors that say this user may not open a file for writing (a monitoring user), not that something is wrong. */
function isDenied(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EACCES' || code === 'EPERM' || code === 'EROFS';
}

/** Who runs this, for a note: the user name, or the uid when it has none. */
function whoAmI(): string {
  try {
    return os.userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/**
 * The consumer's next number, read under the place's lock. A running net holds every read place's
 * nextseq lock for the whole run, and a user who may read the places but not write them can't
 * open the lock file: then the file is read without the lock (it is replaced whole, by a rename,
 * so a read never sees half of it; a torn one gives none). `denied` says, in words, why a lock
 * could not be taken for want of permission.
 */
function peekNext(p: Place): { next?: bigint; denied?: string } {
  try {
    return { next: p.readNext() };
  } catch (err) {
    if (!(err instanceof LockedError) && !isDenied(err)) throw err;
    const next = SeqFile.peek(p.queue.seqfilePath);
    if (err instanceof LockedError) return { next };
    const why = `nextseq.lock: ${systemErrorWords(err) ?? (err as Error).message}`;
    return {
      next,
      denied:
        `user ${whoAmI()} may read this net but not lock its places (${why}), ` +
        `so their next numbers were read without the lock`,
    };
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
