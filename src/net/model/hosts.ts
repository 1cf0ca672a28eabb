/**
 * One net, several hosts. Places and transitions may say `host: NAME`; the top-level `hosts:`
 * says how to reach each host (`ssh:` the command and destination, as a list or one word;
 * default `ssh NAME`, with the user's own ssh configuration).
 *
 * Each host runs `fspl net run NET --host NAME`, which sees the net through `hostView`: its own
 * transitions and places, and for every place on another host that they write, a local outbox
 * (STATE/outbox/PLACE) committed into as any place, then emptied towards it (docs/distributed.md).
 *
 * Sequence numbers: a place's numbers are given by its writers. A place written from another
 * host is numbered by that host's outbox (its sendseq), so all the writers of a place must be on
 * one host; host-problems.ts checks that.
 */
import path from 'node:path';
import { NetRequestError, UnknownNameError } from '../../base/errors.js';
import { didYouMean } from '../../base/suggest.js';
import type { NetModel, PlaceSpec, RemotePlace } from './model.js';

export type { RemotePlace } from './model.js';

/** How to reach a host: over ssh, or through NNCP. */
export type HostConfig = SshHostConfig | NncpHostConfig;

export interface SshHostConfig {
  kind: 'ssh';
  name: string;
  /** The ssh command and its destination; a remote command is appended. */
  ssh: string[];
  /**
   * fspl on that host (ours): when given, the receiver checks each token's seal with it (one
   * fspl start per token); without it, the framed length is checked.
   */
  fspl?: string;
}

export interface NncpHostConfig {
  kind: 'nncp';
  name: string;
  /**
   * Its NNCP node, the exec handle there (default `fspl`), the sending node's config, and the
   * nodes it takes tokens from when not only those of the hosts that feed it (`from:`).
   */
  nncp: { node: string; handle: string; cfg?: string; from?: string[] };
}

/** The exec handle an NNCP host runs `fspl net receive` under, unless its entry names another. */
export const DEFAULT_NNCP_HANDLE = 'fspl';

export function hostOf(item: { host?: string }): string | undefined {
  const h: unknown = item.host;
  return typeof h === 'string' ? h : undefined;
}

/** Whether the net names hosts at all. */
export function isDistributed(net: Pick<NetModel, 'places' | 'transitions' | 'hosts'>): boolean {
  if (net.hosts !== undefined) return true;
  for (const p of net.places.values()) if (hostOf(p) !== undefined) return true;
  for (const t of net.transitions.values()) if (hostOf(t) !== undefined) return true;
  return false;
}

/** The hosts named anywhere in the net, in the order they first appear. */
export function hostNames(net: Pick<NetModel, 'places' | 'transitions' | 'hosts'>): string[] {
  const names = new Set<string>();
  const hosts = net.hosts;
  if (hosts && typeof hosts === 'object') for (const h of Object.keys(hosts)) names.add(h);
  for (const p of net.places.values()) if (hostOf(p)) names.add(hostOf(p)!);
  for (const t of net.transitions.values()) if (hostOf(t)) names.add(hostOf(t)!);
  return [...names];
}

export function hostConfig(net: NetModel, host: string): HostConfig {
  const raw = net.hosts?.[host];
  if (raw?.nncp) {
    const { node, handle, cfg, from } = raw.nncp;
    return {
      kind: 'nncp',
      name: host,
      nncp: { node, handle: handle ?? DEFAULT_NNCP_HANDLE, cfg, from: typeof from === 'string' ? [from] : from },
    };
  }
  const ssh = raw?.ssh === undefined ? ['ssh', host] : typeof raw.ssh === 'string' ? ['ssh', raw.ssh] : raw.ssh;
  return { kind: 'ssh', name: host, ssh, fspl: raw?.fspl };
}

/** The state directory of one host's run (several hosts may share a file system, as in tests). */
export function hostStateDir(net: NetModel, host: string): string {
  return path.join(net.stateDir, host);
}

export function outboxDir(stateDir: string, place: string): string {
  return path.join(stateDir, 'outbox', place);
}

/** Remote places written from this view, by place name. */
export function remotePlaces(view: NetModel): Map<string, RemotePlace> {
  const out = new Map<string, RemotePlace>();
  for (const p of view.places.values()) {
    const r = p.remote;
    if (r) out.set(p.name, r);
  }
  return out;
}

/**
 * The host a request about one place or transition is for: the one given (--host), else the one
 * the net file puts it on, so that `net ls NET PLACE` needs no --host when the place names its
 * host. Undefined when neither says (hostView then asks for --host, or the net names no hosts).
 */
export function hostFor(
  net: NetModel,
  host: string | undefined,
  item: { place?: string; transition?: string },
): string | undefined {
  if (host !== undefined || !isDistributed(net)) return host;
  const named =
    item.place !== undefined
      ? net.places.get(item.place)
      : item.transition !== undefined
        ? net.transitions.get(item.transition)
        : undefined;
  return named ? hostOf(named) : undefined;
}

/**
 * The net as one host runs it: its transitions; its places; and in place of each place on another
 * host that its transitions write, the outbox (its `remote` says where the place really is).
 * Places it neither owns nor writes are left out. A net without hosts is returned as it is.
 */
export function hostView(net: NetModel, host: string | undefined): NetModel {
  if (!isDistributed(net)) {
    if (host !== undefined) throw new NetRequestError(`--host ${host}: the net names no hosts`);
    return net;
  }
  const names = hostNames(net);
  if (host === undefined)
    throw new NetRequestError(
      `The net runs on several hosts (${names.join(', ')}): say which one this is with --host NAME`,
    );
  if (!names.includes(host))
    throw new UnknownNameError(
      'host',
      host,
      `Unknown host ${JSON.stringify(host)}: the net's hosts are ${names.join(', ')}${didYouMean(host, names)}`,
    );
  const stateDir = hostStateDir(net, host);
  const transitions = new Map([...net.transitions].filter(([, t]) => hostOf(t) === host));
  const places = new Map<string, PlaceSpec>();
  for (const p of net.places.values()) {
    if (hostOf(p) === host) places.set(p.name, p);
    else if ([...transitions.values()].some((t) => t.outputs.includes(p.name) || t.error === p.name)) {
      const remote: RemotePlace = { host: hostOf(p)!, dir: p.dir, sync: p.sync === true, ...signingKeyOf(net, host) };
      places.set(p.name, { ...p, dir: outboxDir(stateDir, p.name), capacity: undefined, remote });
    }
  }
  return { ...net, stateDir, places, transitions };
}

/** The key a host signs its outgoing tokens with (`hosts: { H: { key } }`, relative to the net file), if it has one. */
export function hostKeyPath(net: NetModel, host: string): string | undefined {
  const key: unknown = net.hosts?.[host]?.key;
  return typeof key === 'string' && key.length > 0 ? path.resolve(net.dir, key) : undefined;
}

function signingKeyOf(net: NetModel, host: string): { key?: string } {
  const key = hostKeyPath(net, host);
  return key === undefined ? {} : { key };
}

/** Places of one host (for `net init --host`). */
export function placesOf(net: NetModel, host: string): string[] {
  return [...net.places.values()].filter((p) => hostOf(p) === host).map((p) => p.name);
}
