/**
 * A net as plain data: places (queues), transitions (commands or functions) and the arcs between
 * them, plus the facts derived from them (who reads and writes each place). Built from a net file
 * by build.ts (from a net file or from JavaScript); everything above reads only this.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import { didYouMean } from './suggest.js';

export const NAME_RE = /^[A-Za-z][A-Za-z0-9_]*$/;

/** How a place is consumed: by sequence number with no gaps (as queue-process), or as tokens arrive. */
export type PlaceOrder = 'sequence' | 'arrival';

export interface PlaceSpec {
  name: string;
  /** The queue directory, absolute. */
  dir: string;
  /** As written in the file (or the default); a place read by an and-merge is consumed by arrival anyway. */
  order: PlaceOrder;
  /** At most this many tokens (counting staged outputs); undefined: unbounded. */
  capacity?: number;
  /** The host the place is on (distributed nets, src/net/hosts). */
  host?: string;
  /** On another host, filled by a file synchronisation tool rather than over ssh. */
  sync?: boolean;
  /** Set by hostView on a place of another host: the place is this host's outbox towards it. */
  remote?: RemotePlace;
}

/** Where a remote place's tokens wait on this host before they leave. */
export interface RemotePlace {
  /** The place's host. */
  host: string;
  /** The place's directory on its host. */
  dir: string;
  /** Delivered by a synchronisation tool (sync: true) rather than over ssh. */
  sync: boolean;
}

/** How to reach a host, as written under `hosts:` (checked by hostProblems). */
export interface HostDefinition {
  /** A destination (one word) or the whole ssh command as a list. */
  ssh?: string | string[];
  /** The path of fspl on that host. */
  fspl?: string;
}

export interface InputArc {
  place: string;
  /** Tokens taken per firing (a batch); 1 by default. */
  take: number;
  /** Seconds to wait for a full batch before firing with what there is. */
  maxWait?: number;
}

/** and-branch (all), xor-branch (one-of) or the general branch (any-of). */
export type OutMode = 'all' | 'one-of' | 'any-of';

/** What a JavaScript transition gets for one firing. */
export interface FiringContext {
  transition: string;
  /** The correlation key shared by the inputs. */
  key: string;
  /** The input tokens, in arc order (a batch: in sequence order). */
  inputs: FiringInput[];
  /**
   * Output files by place name: write the ones the transition produces (all of them for an
   * and-branch, exactly one for one-of, any for any-of). With a single output place, returning
   * bytes, a string or a stream instead writes that place's token.
   */
  outputs: Record<string, string>;
  /** Aborted on timeout or when the run stops. */
  signal: AbortSignal;
}

export interface FiringInput {
  place: string;
  seq: bigint;
  key: string;
  /** FSPL_SET_ variables (names without the prefix). */
  env: Record<string, string>;
  params: string[];
  /** The payload as a stream (read it or destroy it). */
  payload(): Readable;
}

export type TransitionFunction = (ctx: FiringContext) => Promise<void | string | Uint8Array | Readable> | void;

export type RunSpec = { argv: string[] } | { shell: string };

export interface TransitionSpec {
  name: string;
  inputs: InputArc[];
  outputs: string[];
  outMode: OutMode;
  /** The command; undefined (and no fn): tokens are moved unchanged. */
  run?: RunSpec;
  fn?: TransitionFunction;
  env: Record<string, string>;
  /** Working directory, absolute; default the net file's directory. */
  cwd: string;
  error?: string;
  retries: number;
  /** Seconds; the whole process group is killed. */
  timeout?: number;
  /** Firings of this transition that may run at once. */
  workers: number;
  /** Commit outputs in input order (true) or as firings finish (`order: none`). */
  ordered: boolean;
  /** Disabled while any of these places holds a token. */
  inhibit: string[];
  /** The host the transition runs on (distributed nets). */
  host?: string;
  /** Run the command as this user and group (a name or an id). */
  user?: string | number;
  group?: string | number;
}

export interface NetModel {
  /** The net file, when loaded from one. */
  file?: string;
  /** The directory relative paths are resolved against. */
  dir: string;
  /** Where the runner keeps its journal, staging area, logs and live state. */
  stateDir: string;
  places: Map<string, PlaceSpec>;
  transitions: Map<string, TransitionSpec>;
  /** How to reach each host, as written (`hosts:`). */
  hosts?: Record<string, HostDefinition | null | undefined>;
}

/** Transitions that take tokens from each place. */
export function readersOf(net: NetModel, place: string): TransitionSpec[] {
  return [...net.transitions.values()].filter((t) => t.inputs.some((a) => a.place === place));
}

/** Transitions that put tokens into each place (outputs and error places). */
export function writersOf(net: NetModel, place: string): TransitionSpec[] {
  return [...net.transitions.values()].filter((t) => t.outputs.includes(place) || t.error === place);
}

/** Whether a transition is an and-merge: it fires on one token of each of several places with one key. */
export function isMerge(t: TransitionSpec): boolean {
  return t.inputs.length > 1;
}

/** A place read by an and-merge is indexed by key and consumed by arrival. */
export function isKeyed(net: NetModel, place: string): boolean {
  return readersOf(net, place).some(isMerge);
}

/**
 * The order a place is actually consumed in: by arrival when an and-merge reads it (tokens are
 * matched by key) or a transition with `order: none` does (it does not keep order anyway).
 */
export function effectiveOrder(net: NetModel, place: string): PlaceOrder {
  if (isKeyed(net, place) || readersOf(net, place).some((t) => !t.ordered)) return 'arrival';
  return net.places.get(place)!.order;
}

/** Places that some transition reads (tokens there wait to fire); the others hold results. */
export function isRead(net: NetModel, place: string): boolean {
  return readersOf(net, place).length > 0;
}

/** A JavaScript definition of a net: the net file's shape, with functions allowed as `fn`. */
export interface NetDefinition {
  /** Directory for relative paths and the default place directories. */
  dir: string;
  state?: string;
  places: Record<string, { dir?: string; order?: PlaceOrder; capacity?: number; host?: string; sync?: boolean; [k: string]: unknown }>;
  transitions: Record<string, TransitionDefinition>;
  hosts?: Record<string, HostDefinition | null | undefined>;
}

export interface TransitionDefinition {
  in: string | InputArcDefinition | Array<string | InputArcDefinition>;
  out?: string | string[] | { 'one-of': string[] } | { 'any-of': string[] };
  run?: string | string[] | null;
  fn?: TransitionFunction;
  env?: Record<string, string>;
  cwd?: string;
  error?: string;
  retries?: number;
  timeout?: number;
  workers?: number;
  order?: 'input' | 'none';
  inhibit?: string[];
  host?: string;
  user?: string | number;
  group?: string | number;
  [k: string]: unknown;
}

export interface InputArcDefinition {
  place: string;
  take?: number;
  'max-wait'?: number;
}

/** A problem in a definition, with where it is (a path of keys). */
export interface ModelProblem {
  path: Array<string | number>;
  message: string;
  /** The problem is the key itself (a name), not its value. */
  atKey?: boolean;
}

/**
 * A duration in a definition: absent, or a number of seconds above 0. Net files are checked by
 * their schema already; this holds nets defined in JavaScript to the same rule (NaN or a negative
 * timeout would fire at once). Any length is fine: timers are chained (src/timer.ts).
 */
function seconds(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && value > 0);
}

/**
 * Build the model from an already shape-checked definition. Cross-references (unknown places,
 * merges with batches...) are checked here; problems are collected, not thrown, so that a net
 * file reports all of them with their positions. One function (about 90 lines): places, then
 * transitions, then the checks across them, all filling one list of problems in the order a net
 * file reads.
 */
export function buildModel(def: NetDefinition, file?: string): { model?: NetModel; problems: ModelProblem[] } {
  const problems: ModelProblem[] = [];
  const dir = path.resolve(def.dir);
  const places = new Map<string, PlaceSpec>();
  for (const [name, p] of Object.entries(def.places ?? {})) {
    if (!NAME_RE.test(name)) problems.push({ path: ['places', name], atKey: true, message: `Invalid place name ${JSON.stringify(name)}: use letters, digits and _, starting with a letter` });
    const { dir: pdir, order, capacity, host, sync } = p ?? {};
    places.set(name, {
      name,
      dir: path.resolve(dir, typeof pdir === 'string' ? pdir : path.join('places', name)),
      order: order ?? 'sequence',
      capacity,
      host,
      sync,
    });
  }
  const known = (where: Array<string | number>, place: string) => {
    if (places.has(place)) return;
    // Arcs join places to transitions: a transition's name here is a mistake of its own kind.
    const hint = def.transitions && Object.hasOwn(def.transitions, place) ? ` (${JSON.stringify(place)} is a transition: arcs name places)` : didYouMean(place, places.keys());
    problems.push({ path: where, message: `Unknown place ${JSON.stringify(place)}${hint}` });
  };
  const transitions = new Map<string, TransitionSpec>();
  for (const [name, t] of Object.entries(def.transitions ?? {})) {
    const at = (...rest: Array<string | number>) => ['transitions', name, ...rest];
    if (!NAME_RE.test(name)) problems.push({ path: at(), atKey: true, message: `Invalid transition name ${JSON.stringify(name)}: use letters, digits and _, starting with a letter` });
    if (places.has(name)) problems.push({ path: at(), atKey: true, message: `${JSON.stringify(name)} names both a place and a transition` });
    const rawIn = Array.isArray(t.in) ? t.in : [t.in];
    const inputs: InputArc[] = rawIn.map((a, i) => {
      const arc = typeof a === 'string' ? { place: a, take: 1 } : { place: a.place, take: a.take ?? 1, maxWait: a['max-wait'] };
      known(Array.isArray(t.in) ? at('in', i) : at('in'), arc.place);
      if (!seconds(arc.maxWait)) problems.push({ path: [...(Array.isArray(t.in) ? at('in', i) : at('in')), 'max-wait'], message: `max-wait must be a number of seconds above 0 (got ${String(arc.maxWait)})` });
      return arc;
    });
    if (inputs.length === 0) problems.push({ path: at('in'), message: 'A transition needs at least one input place' });
    const seen = new Set<string>();
    for (const [i, a] of inputs.entries()) {
      if (seen.has(a.place)) problems.push({ path: at('in', i), message: `Place ${JSON.stringify(a.place)} is an input twice` });
      seen.add(a.place);
    }
    if (inputs.length > 1 && inputs.some((a) => a.take !== 1)) {
      problems.push({ path: at('in'), message: 'An and-merge takes one token of each place: batches (take) need a single input place' });
    }
    let outputs: string[] = [];
    let outMode: OutMode = 'all';
    const out = t.out;
    if (typeof out === 'string') outputs = [out];
    else if (Array.isArray(out)) outputs = out;
    else if (out && 'one-of' in out) [outMode, outputs] = ['one-of', out['one-of']];
    else if (out && 'any-of' in out) [outMode, outputs] = ['any-of', out['any-of']];
    const outPath = out && typeof out === 'object' && !Array.isArray(out) ? at('out', outMode) : at('out');
    outputs.forEach((p, i) => known(typeof out === 'string' ? outPath : [...outPath, i], p));
    if (new Set(outputs).size !== outputs.length) problems.push({ path: outPath, message: 'A place is named twice among the outputs' });
    if (outMode !== 'all' && outputs.length < 2) problems.push({ path: outPath, message: `${outMode} needs at least two places` });
    if (t.error !== undefined) {
      known(at('error'), t.error);
      if (outputs.includes(t.error)) problems.push({ path: at('error'), message: 'The error place is also an output' });
    }
    for (const [i, p] of (t.inhibit ?? []).entries()) known(at('inhibit', i), p);
    let run: RunSpec | undefined;
    if (typeof t.run === 'string') run = { shell: t.run };
    else if (Array.isArray(t.run)) run = { argv: t.run };
    if (run && t.fn) problems.push({ path: at('run'), message: 'Give run or fn, not both' });
    if (!run && !t.fn && t.run !== null && t.run !== undefined) problems.push({ path: at('run'), message: 'run must be a string, a list of strings, or null' });
    if (run && 'argv' in run && run.argv.length === 0) problems.push({ path: at('run'), message: 'run is an empty list' });
    if (!run && !t.fn && outputs.length > 0 && outMode !== 'all') {
      problems.push({ path: at('out'), message: `Without run, a transition copies its tokens to every output: ${outMode} needs a command to choose` });
    }
    const { fn, env, cwd, error, retries, timeout, workers, order, inhibit, host, user, group } = t;
    if (!seconds(timeout)) problems.push({ path: at('timeout'), message: `timeout must be a number of seconds above 0 (got ${String(timeout)})` });
    transitions.set(name, {
      name,
      inputs,
      outputs,
      outMode,
      run,
      fn,
      env: env ?? {},
      cwd: path.resolve(dir, cwd ?? '.'),
      error,
      retries: retries ?? 0,
      timeout,
      workers: workers ?? 1,
      ordered: order !== 'none',
      inhibit: inhibit ?? [],
      host,
      user,
      group,
    });
  }
  const { state, hosts } = def;
  if (problems.length > 0) return { problems };
  const stateDir = path.resolve(dir, state ?? (file ? `${path.basename(file).replace(/\.[^.]*$/, '')}.state` : 'net.state'));
  return { model: { file, dir, stateDir, places, transitions, hosts }, problems };
}
