/**
 * Tokens that wait forever, and why: what `net run --drain` lists when it exits 3 and what
 * `net status` reports. A token in a place that no transition reads (a sink, an error place) is
 * a result, not a leftover.
 */
import { isMerge, readersOf, type NetModel } from '../model/model.js';
import type { Place } from '../place/place.js';
import { pauseText, type PauseRecord } from '../operate/pause.js';

/**
 * Why a token can't fire, as a code (what programs count) beside the reason's text (what the
 * operator reads): `stopped` (a reader stopped after a failure), `below-next` (a number below the
 * place's next), `waits-for-number` (an earlier number has not arrived), `inhibited`, `no-partner`
 * (an and-merge lacks the token's key in another input), `no-room` (an output is full),
 * `short-batch` (fewer tokens than a batch), `paused` (its reader was paused by an operator), `in-outbox` (it waits to be sent to another host),
 * `unexplained` (a drained run found nothing that stands in its way).
 */
export type LeftoverCode = 'stopped' | 'below-next' | 'waits-for-number' | 'inhibited' | 'no-partner' | 'no-room' | 'short-batch' | 'paused' | 'in-outbox' | 'unexplained';

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
}

/** A leftover with its reason. */
export function leftover(tok: { place: string; seq: bigint; key: string; filename: string }, code: LeftoverCode, reason: string): Leftover {
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
  for (const p of places.values()) {
    const readers = readersOf(net, p.name).filter((t) => !only || only.has(t.name));
    if (readers.length === 0) continue;
    const tokens = [...p.tokens.values()].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    const nxt = next.get(p.name);
    let expected = nxt;
    for (const tok of tokens) {
      if (tok.header.cmd.kind === 'NOP') continue;
      let why: [LeftoverCode, string, string[]?] | undefined;
      const stoppedReader = readers.find((t) => stopped.has(t.name));
      const pausedReader = readers.find((t) => paused?.has(t.name));
      if (stoppedReader) why = ['stopped', `held by ${stoppedReader.name}, stopped after a failure`];
      else if (pausedReader) why = ['paused', `held by ${pausedReader.name}, ${pauseText(paused!.get(pausedReader.name)!)}`];
      else if (p.order === 'sequence' && nxt !== undefined && tok.seq < nxt) why = ['below-next', `its number is below the place's next number ${nxt} (a duplicate or a late copy)`];
      else if (p.order === 'sequence' && expected !== undefined && tok.seq !== expected) why = ['waits-for-number', `waits for token number ${expected}, which has not arrived`, [p.name]];
      else {
        for (const t of readers) {
          const inhibitor = t.inhibit.find((name) => (places.get(name)?.count ?? 0) > 0);
          if (inhibitor) {
            why = ['inhibited', `${t.name} is inhibited by tokens in ${inhibitor}`, [inhibitor]];
            break;
          }
          if (isMerge(t)) {
            const missing = t.inputs.filter((a) => a.place !== p.name && !keysOf(a.place).has(tok.key)).map((a) => a.place);
            if (missing.length) {
              why = ['no-partner', `no partner with key ${JSON.stringify(tok.key)} in ${missing.join(', ')} (for ${t.name})`, missing];
              break;
            }
          }
          const full = t.outputs.find((o) => {
            const cap = net.places.get(o)?.capacity;
            return cap !== undefined && (places.get(o)?.count ?? 0) >= cap;
          });
          if (full) {
            why = ['no-room', `${t.name} waits for room in ${full} (capacity ${net.places.get(full)!.capacity})`, [full]];
            break;
          }
          const arc = t.inputs.find((a) => a.place === p.name);
          if (arc && arc.take > 1 && arc.maxWait === undefined && p.count < arc.take) {
            why = ['short-batch', `${t.name} takes batches of ${arc.take}; only ${p.count} here`, [p.name]];
            break;
          }
        }
      }
      if (p.order === 'sequence' && expected !== undefined && tok.seq === expected) expected++;
      out.push({ place: p.name, seq: tok.seq, key: tok.key, filename: tok.filename, reason: why?.[1], code: why?.[0], ...(why?.[2] ? { on: why[2] } : {}) });
    }
  }
  return out;
}
