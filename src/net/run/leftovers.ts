/**
 * Tokens that wait forever, and why: what `net run --drain` lists when it exits 3 and what
 * `net status` reports. A token in a place that no transition reads (a sink, an error place) is
 * a result, not a leftover.
 */
import { isMerge, type NetModel, readersOf, type TransitionSpec } from '../model/model.js';
import { type PauseRecord, pauseText } from '../operate/pause.js';
import type { Place } from '../place/place.js';

/**
 * Why a token can't fire, as a code (what programs count) beside the reason's text (what the
 * operator reads): `stopped` (a reader stopped after a failure), `below-next` (a number below the
 * place's next), `waits-for-number` (an earlier number has not arrived), `inhibited`, `no-partner`
 * (an and-merge lacks the token's key in another input), `no-room` (an output is full),
 * `short-batch` (fewer tokens than a batch), `paused` (its reader was paused by an operator), `in-outbox` (it waits to
 * be sent to another host), `unexplained` (a drained run found nothing that stands in its way).
 */
export type LeftoverCode =
  | 'stopped'
  | 'below-next'
  | 'waits-for-number'
  | 'inhibited'
  | 'no-partner'
  | 'no-room'
  | 'short-batch'
  | 'paused'
  | 'in-outbox'
  | 'unexplained';

export interface Leftover {
  place: string;
  seq: bigint;
  key: string;
  filename: string;
  /** Why it can't fire; undefined when nothing stands in its way (it waits for a run). */
  reason?: string;
  /** The reason's code; set with `reason`. */
  code?: LeftoverCode;
  /**
   * The places it waits on, set with some codes: `no-partner` the inputs that lack its key,
   * `short-batch` and `waits-for-number` its own place, `inhibited` the inhibiting place,
   * `no-room` the full place (prospects.ts tells from them whether it is stuck or waiting).
   */
  on?: string[];
  /** The transition that can't take it (set with `code`). */
  transition?: string;
}

/** A leftover with its reason. */
export function leftover(
  tok: { place: string; seq: bigint; key: string; filename: string },
  code: LeftoverCode,
  reason: string,
): Leftover {
  return { place: tok.place, seq: tok.seq, key: tok.key, filename: tok.filename, reason, code };
}

/**
 * Why each token in a read place can't fire now. `next` gives the sequence places' next numbers;
 * `stopped` the transitions stopped by a failure; `only` restricts the readers considered (a run
 * of one host's transitions); `paused` the transitions an operator paused (operate/pause.ts).
 */
export function describeLeftovers(
  net: NetModel,
  places: Map<string, Place>,
  next: Map<string, bigint>,
  stopped: Set<string>,
  only?: Set<string>,
  paused?: ReadonlyMap<string, PauseRecord>,
): Leftover[] {
  const out: Leftover[] = [];
  // The keys of each place, made once when a merge first asks (a lookup per token, not a walk).
  const keySets = new Map<string, Set<string>>();
  const keysOf = (place: string): Set<string> => {
    let keys = keySets.get(place);
    if (!keys) keySets.set(place, (keys = new Set([...(places.get(place)?.tokens.values() ?? [])].map((x) => x.key))));
    return keys;
  };
  const count = (place: string) => places.get(place)?.count ?? 0;
  for (const p of places.values()) {
    const readers = readersOf(net, p.name).filter((t) => !only || only.has(t.name));
    if (readers.length === 0) continue;
    const tokens = [...p.tokens.values()].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    const nxt = next.get(p.name);
    let expected = nxt;
    const stoppedReader = readers.find((t) => stopped.has(t.name));
    const pausedReader = readers.find((t) => paused?.has(t.name));
    for (const tok of tokens) {
      if (tok.header.cmd.kind === 'NOP') continue;
      let why: Why | undefined;
      if (stoppedReader)
        why = {
          code: 'stopped',
          reason: `held by ${stoppedReader.name}, stopped after a failure`,
          transition: stoppedReader.name,
        };
      else if (pausedReader)
        why = {
          code: 'paused',
          reason: `held by ${pausedReader.name}, ${pauseText(paused!.get(pausedReader.name)!)}`,
          transition: pausedReader.name,
        };
      else if (p.order === 'sequence' && nxt !== undefined && tok.seq < nxt)
        why = {
          code: 'below-next',
          reason: `its number is below the place's next number ${nxt} (a duplicate or a late copy)`,
        };
      else if (p.order === 'sequence' && expected !== undefined && tok.seq !== expected)
        why = {
          code: 'waits-for-number',
          reason: `waits for token number ${expected}, which has not arrived`,
          on: [p.name],
        };
      else for (const t of readers) if ((why = blocked(net, t, p, tok.key, keysOf, count))) break;
      if (p.order === 'sequence' && expected !== undefined && tok.seq === expected) expected++;
      out.push({ place: p.name, seq: tok.seq, key: tok.key, filename: tok.filename, ...why });
    }
  }
  return out;
}

/** Why a token can't fire, as a leftover says it. */
type Why = Required<Pick<Leftover, 'code' | 'reason'>> & Pick<Leftover, 'on' | 'transition'>;

/** What stops reader `t` from taking a token with key `key` from place `p`, if anything. */
function blocked(
  net: NetModel,
  t: TransitionSpec,
  p: Place,
  key: string,
  keysOf: (place: string) => Set<string>,
  count: (place: string) => number,
): Why | undefined {
  const inhibitor = t.inhibit.find((name) => count(name) > 0);
  if (inhibitor)
    return {
      code: 'inhibited',
      reason: `${t.name} is inhibited by tokens in ${inhibitor}`,
      on: [inhibitor],
      transition: t.name,
    };
  if (isMerge(t)) {
    const missing = t.inputs.filter((a) => a.place !== p.name && !keysOf(a.place).has(key)).map((a) => a.place);
    if (missing.length)
      return {
        code: 'no-partner',
        reason: `no partner with key ${JSON.stringify(key)} in ${missing.join(', ')} (for ${t.name})`,
        on: missing,
        transition: t.name,
      };
  }
  const full = t.outputs.find((o) => {
    const cap = net.places.get(o)?.capacity;
    return cap !== undefined && count(o) >= cap;
  });
  if (full)
    return {
      code: 'no-room',
      reason: `${t.name} waits for room in ${full} (capacity ${net.places.get(full)!.capacity})`,
      on: [full],
      transition: t.name,
    };
  const arc = t.inputs.find((a) => a.place === p.name);
  if (arc && arc.take > 1 && arc.maxWait === undefined && p.count < arc.take)
    return {
      code: 'short-batch',
      reason: `${t.name} takes batches of ${arc.take}; only ${p.count} here`,
      on: [p.name],
      transition: t.name,
    };
  return undefined;
}

/** Tokens on another host that can't come here in this drain (its run ended with them). */
export interface RemoteLeftover {
  host: string;
  place: string;
  /** In a place it reads, or in its outbox towards the place. */
  where: 'place' | 'outbox';
  count: number;
}
