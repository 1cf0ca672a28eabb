/**
 * Where the tokens are and what is stuck: read from the places' directories and, when a run is
 * going, from its live state (live.ts). Works with no run, and with places that have vanished.
 */
import fs from 'node:fs';
import { describeLeftovers, type Leftover } from './leftovers.js';
import { readLiveState, type LiveState } from './live.js';
import { effectiveOrder, isRead, readersOf, writersOf, type NetModel } from './model.js';
import type { OutboxStatus } from './outbox-status.js';
import { Place } from './place.js';

export type NetState = 'running' | 'idle' | 'stuck' | 'drained';

export interface PlaceStatus {
  name: string;
  dir: string;
  /** source (no writer), sink (no reader), error (an error place), inner, or outbox (a place on another host: outbox-status.ts). */
  role: 'source' | 'sink' | 'error' | 'inner' | 'outbox';
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
  /** For a place on another host: its outbox here (net status --host). */
  outbox?: OutboxStatus;
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
  lastFiredAt?: number;
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
    const st: PlaceStatus = { name: spec.name, dir: spec.dir, role, exists: p.exists(), tokens: 0, capacity: spec.capacity };
    if (st.exists) {
      try {
        await p.refresh(now);
        st.tokens = p.tokens.size;
        let oldest: number | undefined;
        for (const t of p.tokens.values()) {
          try {
            const m = fs.statSync(t.path).mtimeMs;
            if (oldest === undefined || m < oldest) oldest = m;
          } catch {
            // consumed meanwhile
          }
        }
        if (oldest !== undefined) st.oldestAgeMs = Math.max(0, now - oldest);
        if (p.order === 'sequence' && isRead(net, spec.name)) {
          st.next = p.readNext();
          next.set(spec.name, st.next);
        }
      } catch (err) {
        st.problem = (err as Error).message;
      }
    } else st.problem = `no queue at ${spec.dir} (run fspl net init)`;
    if (spec.capacity !== undefined) st.fill = st.tokens / spec.capacity;
    placeStatus.push(st);
  }
  const stoppedNames = new Set(Object.entries(live?.transitions ?? {}).filter(([, t]) => running && t.stopped).map(([n]) => n));
  const all = describeLeftovers(net, places, next, stoppedNames);
  const stuck = all.filter((l) => l.reason !== undefined);
  const transitions: TransitionStatus[] = [...net.transitions.values()].map((t) => {
    const lt = live?.transitions[t.name];
    const merges = t.inputs.length > 1 ? stuck.filter((l) => l.place === t.inputs[0]!.place && l.reason?.includes('no partner')).length : 0;
    return {
      name: t.name,
      running: running ? (lt?.running ?? 0) : 0,
      waiting: running ? (lt?.waiting ?? 0) : 0,
      fired: lt?.fired ?? 0,
      failed: lt?.failed ?? 0,
      retried: lt?.retried ?? 0,
      waitingMerges: merges,
      stopped: running ? lt?.stopped : undefined,
      lastFiredAt: lt?.lastFired,
      serviceTimes: lt?.serviceTimes ?? [],
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
  return { net: net.file ?? net.dir, state, live: running, pid: running ? live?.pid : undefined, updatedAt: live?.updatedAt, places: placeStatus, transitions, stuck };
}
