/**
 * One net, several hosts. Places and transitions may say `host: NAME`; the top-level `hosts:`
 * says how to reach each host (`ssh:` the command and destination, as a list or one word;
 * default `ssh NAME`, with the user's own ssh configuration).
 *
 * Each host runs `fspl net run NET --host NAME`, which sees the net through `hostView`: its own
 * transitions, its own places, and for every place on another host that its transitions write,
 * a local outbox (a Filespooler queue in STATE/outbox/PLACE) that stands in for the place. A
 * commit into a remote place is then an ordinary local commit into the outbox, with the journal's
 * exactly-once guarantees; the outbox is emptied towards the place by ssh (outbox-sender.ts) or, for a
 * `sync: true` place, by a file synchronisation tool that shares the outbox's jobs/ with the
 * place's jobs/ (docs/distributed.md).
 *
 * Sequence numbers: a place's numbers are given by its writers. A place written from another
 * host is numbered by that host's outbox (its sendseq), so all the writers of a place must be on
 * one host; this is checked here.
 */
import path from 'node:path';
import { NetRequestError, UnknownNameError } from '../../base/errors.js';
import { didYouMean } from '../../base/suggest.js';
import { type ModelProblem, NAME_RE, type NetModel, type PlaceSpec, type RemotePlace, writersOf } from './model.js';

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
    return { kind: 'nncp', name: host, nncp: { node, handle: handle ?? DEFAULT_NNCP_HANDLE, cfg, from: typeof from === 'string' ? [from] : from } };
  }
  const ssh = raw?.ssh === undefined ? ['ssh', host] : typeof raw.ssh === 'string' ? ['ssh', raw.ssh] : raw.ssh;
  return { kind: 'ssh', name: host, ssh, fspl: raw?.fspl };
}

/**
 * Problems with hosts, reported by buildNet (build.ts) with the model's own checks: every item has a
 * host or none has; hosts are known; a transition reads only places of its own host; all the
 * writers of a place are on one host (they share its numbering).
 */
export function hostProblems(net: NetModel): ModelProblem[] {
  const { places, transitions, hosts } = net;
  const problems: ModelProblem[] = signedPlaceProblems(net);
  if (!isDistributed(net)) return problems;
  if (hosts !== undefined) for (const [name, value] of Object.entries(hosts)) problems.push(...hostEntryProblems(name, value));
  const known = (where: Array<string | number>, host: string | undefined, what: string) => {
    if (host === undefined)
      problems.push({
        path: where,
        absent: [...where, 'host'],
        message: `${what} has no host: in a net that names hosts, every place and transition says which host it is on (host: NAME)`,
      });
    else if (hosts !== undefined && !(host in hosts))
      problems.push({ path: [...where, 'host'], message: `Unknown host ${JSON.stringify(host)} (hosts: ${Object.keys(hosts).join(', ')})` });
  };
  for (const p of places.values()) known(['places', p.name], hostOf(p), `Place ${p.name}`);
  for (const t of transitions.values()) {
    known(['transitions', t.name], hostOf(t), `Transition ${t.name}`);
    for (const [i, a] of t.inputs.entries()) {
      const ph = hostOf(places.get(a.place) ?? {});
      if (ph !== undefined && hostOf(t) !== undefined && ph !== hostOf(t)) {
        problems.push({
          path: ['transitions', t.name, 'in', ...(t.inputs.length > 1 ? [i] : [])],
          message: `Transition ${t.name} (host ${hostOf(t)}) reads place ${a.place} on host ${ph}: a transition reads places of its own host only`,
        });
      }
    }
  }
  for (const p of places.values()) {
    const writerHosts = new Set(
      writersOf(net, p.name)
        .map((t) => hostOf(t))
        .filter((h): h is string => !!h),
    );
    if (writerHosts.size > 1) {
      problems.push({
        path: ['places', p.name],
        atKey: true,
        message: `Place ${p.name} is written from hosts ${[...writerHosts].join(' and ')}: its sequence numbers have one owner, so its writers must be on one host`,
      });
    }
  }
  return problems;
}

/**
 * What is wrong with one entry of `hosts:`: its name, and its ssh, fspl, nncp and key as written
 * (a net defined in JavaScript may hold anything here).
 */
function hostEntryProblems(name: string, h: unknown): ModelProblem[] {
  const problems: ModelProblem[] = [];
  if (!NAME_RE.test(name))
    problems.push({
      path: ['hosts', name],
      atKey: true,
      message: `Invalid host name ${JSON.stringify(name)}: use letters, digits and _, starting with a letter`,
    });
  if (h === null || h === undefined) return problems;
  if (typeof h !== 'object' || Array.isArray(h)) {
    problems.push({ path: ['hosts', name], message: 'A host is a map: { ssh: [COMMAND..., DESTINATION], fspl: PATH } or { nncp: { node: NODE } }' });
    return problems;
  }
  if ('nncp' in h && ('ssh' in h || 'fspl' in h))
    problems.push({
      path: ['hosts', name, 'nncp'],
      atKey: true,
      message: 'A host is reached over ssh or through NNCP, not both: give ssh (and fspl) or nncp',
    });
  for (const [k, v] of Object.entries(h)) {
    if (k === 'nncp') problems.push(...nncpProblems(name, v));
    else if (k === 'ssh') {
      const ok = (typeof v === 'string' && v.length > 0) || (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.length > 0));
      if (!ok)
        problems.push({
          path: ['hosts', name, 'ssh'],
          message: 'ssh is a destination (a word) or the whole command as a list: [ssh, -F, CONFIG, DESTINATION]',
        });
    } else if (k === 'fspl') {
      if (typeof v !== 'string' || v.length === 0) problems.push({ path: ['hosts', name, 'fspl'], message: 'fspl is the path of fspl on that host' });
    } else if (k === 'key') {
      if (typeof v !== 'string' || v.length === 0)
        problems.push({ path: ['hosts', name, 'key'], message: "key is the path of the OpenSSH private key this host's run signs its tokens with" });
    } else problems.push({ path: ['hosts', name, k], atKey: true, message: `unknown key ${JSON.stringify(k)} (a host has ssh and fspl, or nncp; and a key)` });
  }
  return problems;
}

/**
 * What is wrong with the places that require signatures (`signers:`, `from:`): `from` names hosts
 * that have a `key`; and no transition writes such a place from its own host (its tokens would be
 * unsigned: only tokens from other hosts or from outside, `net put --sign`, are judged).
 */
function signedPlaceProblems(net: NetModel): ModelProblem[] {
  const problems: ModelProblem[] = [];
  for (const p of net.places.values()) {
    const from: unknown = p.from;
    if (from !== undefined) {
      const at = ['places', p.name, 'from'];
      if (!Array.isArray(from) || from.length === 0 || !from.every((h) => typeof h === 'string')) {
        problems.push({ path: at, message: 'from is the hosts whose key signs the tokens of this place, a name or a list' });
      } else {
        for (const h of from as string[]) {
          const entry: unknown = net.hosts?.[h];
          if (net.hosts === undefined || !Object.hasOwn(net.hosts, h))
            problems.push({
              path: at,
              message: `from: unknown host ${JSON.stringify(h)}${knownHosts(net.hosts)}`,
            });
          else if (entry === null || typeof entry !== 'object' || typeof (entry as { key?: unknown }).key !== 'string')
            problems.push({ path: at, message: `from: host ${h} has no key (hosts: { ${h}: { key: PATH } }): nothing it sends is signed` });
        }
      }
    }
    const signers: unknown = p.signers;
    if (signers !== undefined && (typeof signers !== 'string' || signers.length === 0))
      problems.push({ path: ['places', p.name, 'signers'], message: 'signers is the path of an OpenSSH allowed_signers file' });
    if (from === undefined && signers === undefined) continue;
    const own = writersOf(net, p.name).filter((t) => hostOf(t) === hostOf(p));
    if (own.length > 0)
      problems.push({
        path: ['places', p.name],
        atKey: true,
        message: `Place ${p.name} requires signatures but transition ${own[0]!.name} on its own host writes it unsigned: only places fed from other hosts or from outside can require them`,
      });
  }
  return problems;
}

/** What is wrong with a host's `nncp:` map. */
function nncpProblems(host: string, v: unknown): ModelProblem[] {
  const at = ['hosts', host, 'nncp'];
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return [
      {
        path: at,
        message:
          'nncp is a map: { node: NODE, cfg: PATH, handle: HANDLE, from: [NODE...] } (node is the NNCP node to send to; cfg, handle and from are optional)',
      },
    ];
  const problems: ModelProblem[] = [];
  const m = v as Record<string, unknown>;
  if (!('node' in m))
    problems.push({ path: at, absent: [...at, 'node'], message: 'nncp needs node: the NNCP node of this host, as the sending node names it' });
  for (const [k, x] of Object.entries(m)) {
    const word = typeof x === 'string' && /^[^\s\0]+$/.test(x);
    if (k === 'node' || k === 'handle') {
      // nncp-exec would read a leading '-' as one of its options.
      if (!word || x.startsWith('-'))
        problems.push({ path: [...at, k], message: `${k} is one word (an NNCP ${k === 'node' ? 'node name or id' : 'exec handle name'})` });
    } else if (k === 'cfg') {
      if (typeof x !== 'string' || x.length === 0) problems.push({ path: [...at, k], message: "cfg is the path of the sending node's NNCP config" });
    } else if (k === 'from') {
      const node = (y: unknown) => typeof y === 'string' && /^[^\s\0]+$/.test(y);
      if (!(node(x) || (Array.isArray(x) && x.length > 0 && x.every(node))))
        problems.push({
          path: [...at, k],
          message: "from is the NNCP nodes this host takes tokens from, a word or a list: their ids, or their names in this host's NNCP config",
        });
    } else problems.push({ path: [...at, k], atKey: true, message: `unknown key ${JSON.stringify(k)} (nncp has node, cfg, handle and from)` });
  }
  return problems;
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
export function hostFor(net: NetModel, host: string | undefined, item: { place?: string; transition?: string }): string | undefined {
  if (host !== undefined || !isDistributed(net)) return host;
  const named = item.place !== undefined ? net.places.get(item.place) : item.transition !== undefined ? net.transitions.get(item.transition) : undefined;
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
  if (host === undefined) throw new NetRequestError(`The net runs on several hosts (${names.join(', ')}): say which one this is with --host NAME`);
  if (!names.includes(host))
    throw new UnknownNameError('host', host, `Unknown host ${JSON.stringify(host)}: the net's hosts are ${names.join(', ')}${didYouMean(host, names)}`);
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

/** The hosts a `from:` may name, for its error. */
function knownHosts(hosts: Record<string, unknown> | undefined): string {
  return hosts ? ` (hosts: ${Object.keys(hosts).join(', ')})` : ' (the net has no hosts: list)';
}
