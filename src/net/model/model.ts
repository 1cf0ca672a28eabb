/**
 * A net as plain data: places (queues), transitions (commands or functions) and the arcs between
 * them, plus the facts derived from them (who reads and writes each place). Built from a net file
 * by define.ts and build.ts (from a net file or from JavaScript); everything above reads only this.
 */
import type { Readable } from 'node:stream';

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
  /** Declared to hold the net's results (`sink: true`): no transition is meant to read it (check.ts). */
  sink?: boolean;
  /** The host the place is on (distributed nets, src/net/hosts). */
  host?: string;
  /** On another host, filled by a file synchronisation tool rather than over ssh. */
  sync?: boolean;
  /** Set by hostView on a place of another host: the place is this host's outbox towards it. */
  remote?: RemotePlace;
  /** Its tokens must be signed by a key of this OpenSSH allowed_signers file (absolute). */
  signers?: string;
  /** ...or by the key (`hosts: { H: { key } }`) of one of these hosts (place/signatures.ts). */
  from?: string[];
}

/** Where a remote place's tokens wait on this host before they leave. */
export interface RemotePlace {
  /** The place's host. */
  host: string;
  /** The place's directory on its host. */
  dir: string;
  /** Delivered by a synchronisation tool (sync: true) rather than over ssh. */
  sync: boolean;
  /** The private key this host signs its tokens for the place with (its `hosts:` entry's `key`, absolute). */
  key?: string;
}

/** How to reach a host, as written under `hosts:` (checked by host-problems.ts). */
export interface HostDefinition {
  /** A destination (one word) or the whole ssh command as a list. */
  ssh?: string | string[];
  /** The path of fspl on that host. */
  fspl?: string;
  /** Reached through NNCP instead of ssh (src/send/nncp-send.ts). */
  nncp?: NncpHostDefinition;
  /**
   * The OpenSSH private key (no passphrase) the run on this host signs the tokens it sends to
   * other hosts with; its public half (PATH.pub, or the key file) is what `from: [HOST]` trusts.
   */
  key?: string;
}

/** `hosts: { b: { nncp: { node, cfg, handle, from } } }`. */
export interface NncpHostDefinition {
  /** The host's NNCP node, as the sending node's config names it. */
  node: string;
  /** The sending node's NNCP config (default: NNCP's, $NNCPCFG or /etc/nncp.hjson). */
  cfg?: string;
  /** The exec handle on that node that runs `fspl net receive` for this net (default `fspl`). */
  handle?: string;
  /**
   * The NNCP nodes this host takes tokens from (`fspl net receive` checks NNCP_SENDER): ids, or
   * names in this host's own NNCP config. Default: the node of the host that feeds the place.
   */
  from?: string | string[];
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

// A user's `async (ctx) => { ... }` returns Promise<void>, which `undefined` would refuse.
// biome-ignore lint/suspicious/noConfusingVoidType: as said above
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

/** Each place's readers and writers, in the transitions' order. */
interface Arcs {
  /** The transitions map it was built from, at this size (a model is not changed once built). */
  size: number;
  readers: Map<string, TransitionSpec[]>;
  writers: Map<string, TransitionSpec[]>;
}

/** Built once per model, on first use: one pass over the arcs, where a walk per place made a net's checks quadratic. */
const arcsCache = new WeakMap<Map<string, TransitionSpec>, Arcs>();

function arcsOf(net: NetModel): Arcs {
  const cached = arcsCache.get(net.transitions);
  if (cached && cached.size === net.transitions.size) return cached;
  const arcs: Arcs = { size: net.transitions.size, readers: new Map(), writers: new Map() };
  const add = (m: Map<string, TransitionSpec[]>, place: string, t: TransitionSpec) => {
    const list = m.get(place);
    if (!list) m.set(place, [t]);
    else if (list[list.length - 1] !== t) list.push(t);
  };
  for (const t of net.transitions.values()) {
    for (const a of t.inputs) add(arcs.readers, a.place, t);
    for (const o of t.outputs) add(arcs.writers, o, t);
    if (t.error !== undefined) add(arcs.writers, t.error, t);
  }
  arcsCache.set(net.transitions, arcs);
  return arcs;
}

/** Transitions that take tokens from each place. */
export function readersOf(net: NetModel, place: string): TransitionSpec[] {
  return [...(arcsOf(net).readers.get(place) ?? [])];
}

/** Transitions that put tokens into each place (outputs and error places). */
export function writersOf(net: NetModel, place: string): TransitionSpec[] {
  return [...(arcsOf(net).writers.get(place) ?? [])];
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
  places: Record<
    string,
    {
      dir?: string;
      order?: PlaceOrder;
      capacity?: number;
      sink?: boolean;
      host?: string;
      sync?: boolean;
      signers?: string;
      from?: string | string[];
      [k: string]: unknown;
    }
  >;
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
  /**
   * The problem is that the value at this path is missing (no host, no command): a net file's
   * check says nothing of it when the file gave a value there that its schema refused.
   */
  absent?: Array<string | number>;
}
