/**
 * Static warnings about a valid net: a place read by two transitions (they race for its tokens,
 * unless that is intended), sources (places no transition writes: tokens come from outside),
 * sinks (places no transition reads: results), and places or transitions that no token can reach.
 */
import { readersOf, writersOf, type NetModel } from './model.js';

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
  // Reachability from the sources, along input and output arcs.
  const reached = new Set<string>();
  const queue = [...net.places.keys()].filter((p) => writersOf(net, p).length === 0);
  for (const p of queue) reached.add(p);
  const fired = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of net.transitions.values()) {
      if (fired.has(t.name) || !t.inputs.every((a) => reached.has(a.place))) continue;
      fired.add(t.name);
      changed = true;
      for (const o of [...t.outputs, ...(t.error ? [t.error] : [])]) reached.add(o);
    }
  }
  for (const p of net.places.keys()) if (!reached.has(p)) out.push({ kind: 'unreachable', name: p, message: `place ${p} can not be reached: no token from a source can get there` });
  for (const t of net.transitions.keys()) if (!fired.has(t)) out.push({ kind: 'unreachable', name: t, message: `transition ${t} can never fire: its input places can not all be reached` });
  return out;
}
