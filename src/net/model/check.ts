/**
 * Static warnings about a valid net: a place read by two transitions (they race for its tokens,
 * unless that is intended), sources (places no transition writes: tokens come from outside),
 * sinks (places no transition reads: results), and places or transitions that no token can reach.
 */
import { readersOf, writersOf, type NetModel, type TransitionSpec } from './model.js';

export interface NetWarning {
  kind: 'shared-input' | 'source' | 'sink' | 'unreachable' | 'permissions';
  /** The place or transition concerned. */
  name: string;
  message: string;
}

export function checkNet(net: NetModel): NetWarning[] {
  const out: NetWarning[] = [];
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  for (const p of net.places.keys()) {
    const readers = readersOf(net, p);
    const writers = writersOf(net, p);
    if (readers.length > 1) {
      out.push({ kind: 'shared-input', name: p, message: `place ${p} is read by ${readers.map((t) => t.name).join(' and ')}: they race for its tokens (each token goes to one of them)` });
    }
    if (writers.length === 0) out.push({ kind: 'source', name: p, message: `place ${p} is a source: no transition writes it (tokens come from fspl net put or other senders)` });
    if (readers.length === 0 && !errorPlaces.has(p)) out.push({ kind: 'sink', name: p, message: `place ${p} is a sink: no transition reads it (its tokens are results)` });
  }
  // Reachability from the sources, along input and output arcs: a transition fires once all its
  // input places are reached (each place reached once, each of its readers told once).
  const reached = new Set<string>();
  const fired = new Set<string>();
  const missing = new Map([...net.transitions.values()].map((t) => [t.name, new Set(t.inputs.map((a) => a.place)).size]));
  const queue = [...net.places.keys()].filter((p) => writersOf(net, p).length === 0);
  for (const p of queue) reached.add(p);
  const fire = (t: TransitionSpec) => {
    fired.add(t.name);
    for (const o of [...t.outputs, ...(t.error ? [t.error] : [])]) {
      if (reached.has(o)) continue;
      reached.add(o);
      queue.push(o);
    }
  };
  for (const t of net.transitions.values()) if (missing.get(t.name) === 0) fire(t);
  for (let k = 0; k < queue.length; k++) {
    for (const t of readersOf(net, queue[k]!)) {
      const left = missing.get(t.name)! - 1;
      missing.set(t.name, left);
      if (left === 0) fire(t);
    }
  }
  for (const p of net.places.keys()) if (!reached.has(p)) out.push({ kind: 'unreachable', name: p, message: `place ${p} can not be reached: no token from a source can get there` });
  for (const t of net.transitions.keys()) if (!fired.has(t)) out.push({ kind: 'unreachable', name: t, message: `transition ${t} can never fire: its input places can not all be reached` });
  return out;
}
