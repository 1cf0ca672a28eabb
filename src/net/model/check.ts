/**
 * Static warnings about a valid net: what is likely a mistake (races, unused places, look-alike
 * names, a read sink, unreachable parts: docs/nets.md, `net check`), never what is merely normal
 * (sources and sinks).
 */

import { closest } from '../../base/suggest.js';
import { type NetModel, readersOf, type TransitionSpec, writersOf } from './model.js';

export interface NetWarning {
  kind: 'shared-input' | 'unused' | 'look-alike' | 'sink-read' | 'unreachable' | 'permissions';
  /** The place or transition concerned. */
  name: string;
  message: string;
}

export function checkNet(net: NetModel): NetWarning[] {
  const out: NetWarning[] = [];
  const errorPlaces = new Set([...net.transitions.values()].map((t) => t.error).filter((e): e is string => !!e));
  const inhibitors = new Set([...net.transitions.values()].flatMap((t) => t.inhibit));
  const unused: string[] = [];
  const unread: string[] = [];
  for (const p of net.places.values()) {
    const readers = readersOf(net, p.name);
    const writers = writersOf(net, p.name);
    if (readers.length > 1) {
      out.push({
        kind: 'shared-input',
        name: p.name,
        message:
          `place ${p.name} is read by ${names(readers)}: they race for its tokens ` +
          `(each token goes to one of them)`,
      });
    }
    if (readers.length === 0 && writers.length === 0 && !inhibitors.has(p.name)) unused.push(p.name);
    else if (readers.length === 0 && writers.length > 0 && !errorPlaces.has(p.name) && !p.sink) unread.push(p.name);
    if (readers.length > 0 && p.sink) {
      out.push({
        kind: 'sink-read',
        name: p.name,
        message:
          `place ${p.name} is declared sink: true, but ` + `${names(readers)} read${readers.length > 1 ? '' : 's'} it`,
      });
    }
  }
  const like = new LookAlikes(net, unused.length + unread.length);
  for (const p of unused) {
    const twin = like.of(p, like.places);
    out.push({
      kind: 'unused',
      name: p,
      message:
        `place ${p} is not used: no transition reads, writes or is ` +
        `inhibited by it${twin ? ` (a misspelt copy of ${twin}?)` : ''}`,
    });
  }
  // Unused places have their warning: not twins of another.
  const paired = new Set(unused);
  for (const p of unread) {
    const warning = lookAlike(net, like, p, paired);
    if (!warning) continue;
    out.push(warning.warning);
    paired.add(p).add(warning.twin);
  }
  out.push(...unreachable(net));
  return out;
}

function names(ts: TransitionSpec[]): string {
  return ts.map((t) => t.name).join(' and ');
}

/**
 * A place written but read by nothing is a sink, normal, unless its name is one or two typos from
 * another place's: then an arc probably misspells one of them. Its twin is looked for first among
 * the places read but never written (the two halves of one misspelt place), then among the places
 * read (the place the writer meant), then among the other places but those `paired` already (in a
 * warning of their own: a pair is warned about once).
 */
function lookAlike(
  net: NetModel,
  like: LookAlikes,
  p: string,
  paired: ReadonlySet<string>,
): { warning: NetWarning; twin: string } | undefined {
  const writers = names(writersOf(net, p));
  const head = `place ${p} is written by ${writers} but no transition reads it`;
  const meant = `(if it holds results, declare it sink: true)`;
  const warn = (twin: string, message: string) => ({
    warning: { kind: 'look-alike' as const, name: p, message },
    twin,
  });
  const source = like.of(p, like.sources);
  if (source)
    return warn(
      source,
      `${head}, and place ${source} is read by ${names(readersOf(net, source))} ` +
        `but none writes it: is one of them misspelt in an arc? ${meant}`,
    );
  const read = like.of(p, like.read);
  if (read) return warn(read, `${head}: did ${writers} mean ${read}, which is read? ${meant}`);
  const other = like.of(p, like.places, paired);
  if (other) return warn(other, `${head}, and its name is close to place ${other}'s: a typo? ${meant}`);
  return undefined;
}

/**
 * The place a name is probably a typo of (suggest.ts's rule), unless the two differ only in their
 * numbers: `stage1` and `stage2` are two places, not a typo.
 */
class LookAlikes {
  readonly places: string[];
  /** Places some transition reads. */
  readonly read: string[];
  /** Of those, the ones no transition writes. */
  readonly sources: string[];
  /** Whether names are compared at all: on a net with very many places, look-alikes are left out (quadratic). */
  private readonly enabled: boolean;

  constructor(net: NetModel, asked: number) {
    this.places = [...net.places.keys()];
    this.read = this.places.filter((q) => readersOf(net, q).length > 0);
    this.sources = this.read.filter((q) => writersOf(net, q).length === 0);
    this.enabled = asked * this.places.length <= 1_000_000;
  }

  /** The closest of `candidates` (but those in `skip`). */
  of(name: string, candidates: string[], skip?: ReadonlySet<string>): string | undefined {
    if (!this.enabled) return undefined;
    const shape = numbersOut(name);
    return closest(
      name,
      candidates.filter((c) => numbersOut(c) !== shape && !skip?.has(c)),
    );
  }
}

function numbersOut(name: string): string {
  return name.replace(/[0-9]+/g, '#');
}

/**
 * Reachability from the sources, along input and output arcs: a transition fires once all its
 * input places are reached (each place reached once, each of its readers told once).
 */
function unreachable(net: NetModel): NetWarning[] {
  const out: NetWarning[] = [];
  const reached = new Set<string>();
  const fired = new Set<string>();
  const missing = new Map(
    [...net.transitions.values()].map((t) => [t.name, new Set(t.inputs.map((a) => a.place)).size]),
  );
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
  for (const p of net.places.keys())
    if (!reached.has(p))
      out.push({
        kind: 'unreachable',
        name: p,
        message: `place ${p} can not be reached: no token from a source can get there`,
      });
  for (const t of net.transitions.keys())
    if (!fired.has(t))
      out.push({
        kind: 'unreachable',
        name: t,
        message: `transition ${t} can never fire: its input places can not all be reached`,
      });
  return out;
}
