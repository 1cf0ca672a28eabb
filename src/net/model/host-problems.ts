/**
 * Problems with a net's hosts (hosts.ts), reported by buildNet (build.ts) with the model's own
 * checks: the `hosts:` entries, which host each item is on, and signed places fed from their own host.
 */

import { hostOf, isDistributed } from './hosts.js';
import { type ModelProblem, NAME_RE, type NetModel, writersOf } from './model.js';

/**
 * Problems with hosts: every item has a host or none has; hosts are known; a transition reads only
 * places of its own host; all the writers of a place are on one host (they share its numbering).
 */
export function hostProblems(net: NetModel): ModelProblem[] {
  const { places, transitions, hosts } = net;
  const problems: ModelProblem[] = signedPlaceProblems(net);
  if (!isDistributed(net)) return problems;
  if (hosts !== undefined)
    for (const [name, value] of Object.entries(hosts)) problems.push(...hostEntryProblems(name, value));
  const known = (where: Array<string | number>, host: string | undefined, what: string) => {
    if (host === undefined)
      problems.push({
        path: where,
        absent: [...where, 'host'],
        message:
          `${what} has no host: in a net that names hosts, every place and ` +
          `transition says which host it is on (host: NAME)`,
      });
    else if (hosts !== undefined && !(host in hosts))
      problems.push({
        path: [...where, 'host'],
        message: `Unknown host ${JSON.stringify(host)} (hosts: ${Object.keys(hosts).join(', ')})`,
      });
  };
  for (const p of places.values()) known(['places', p.name], hostOf(p), `Place ${p.name}`);
  for (const t of transitions.values()) {
    known(['transitions', t.name], hostOf(t), `Transition ${t.name}`);
    for (const [i, a] of t.inputs.entries()) {
      const ph = hostOf(places.get(a.place) ?? {});
      if (ph !== undefined && hostOf(t) !== undefined && ph !== hostOf(t)) {
        problems.push({
          path: ['transitions', t.name, 'in', ...(t.inputs.length > 1 ? [i] : [])],
          message:
            `Transition ${t.name} (host ${hostOf(t)}) reads place ${a.place} on ` +
            `host ${ph}: a transition reads places of its own host only`,
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
        message:
          `Place ${p.name} is written from hosts ${[...writerHosts].join(' and ')}: ` +
          `its sequence numbers have one owner, so its writers must be on one host`,
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
    problems.push({
      path: ['hosts', name],
      message: 'A host is a map: { ssh: [COMMAND..., DESTINATION], fspl: PATH } or { nncp: { node: NODE } }',
    });
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
      const ok =
        (typeof v === 'string' && v.length > 0) ||
        (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.length > 0));
      if (!ok)
        problems.push({
          path: ['hosts', name, 'ssh'],
          message: 'ssh is a destination (a word) or the whole command as a list: [ssh, -F, CONFIG, DESTINATION]',
        });
    } else if (k === 'fspl') {
      if (typeof v !== 'string' || v.length === 0)
        problems.push({ path: ['hosts', name, 'fspl'], message: 'fspl is the path of fspl on that host' });
    } else if (k === 'key') {
      if (typeof v !== 'string' || v.length === 0)
        problems.push({
          path: ['hosts', name, 'key'],
          message: "key is the path of the OpenSSH private key this host's run signs its tokens with",
        });
    } else
      problems.push({
        path: ['hosts', name, k],
        atKey: true,
        message: `unknown key ${JSON.stringify(k)} (a host has ssh and fspl, or nncp; and a key)`,
      });
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
        problems.push({
          path: at,
          message: 'from is the hosts whose key signs the tokens of this place, a name or a list',
        });
      } else {
        for (const h of from as string[]) {
          const entry: unknown = net.hosts?.[h];
          if (net.hosts === undefined || !Object.hasOwn(net.hosts, h))
            problems.push({
              path: at,
              message: `from: unknown host ${JSON.stringify(h)}${knownHosts(net.hosts)}`,
            });
          else if (entry === null || typeof entry !== 'object' || typeof (entry as { key?: unknown }).key !== 'string')
            problems.push({
              path: at,
              message: `from: host ${h} has no key (hosts: { ${h}: { key: PATH } }): nothing it sends is signed`,
            });
        }
      }
    }
    const signers: unknown = p.signers;
    if (signers !== undefined && (typeof signers !== 'string' || signers.length === 0))
      problems.push({
        path: ['places', p.name, 'signers'],
        message: 'signers is the path of an OpenSSH allowed_signers file',
      });
    if (from === undefined && signers === undefined) continue;
    const own = writersOf(net, p.name).filter((t) => hostOf(t) === hostOf(p));
    if (own.length > 0)
      problems.push({
        path: ['places', p.name],
        atKey: true,
        message:
          `Place ${p.name} requires signatures but transition ${own[0]!.name} on ` +
          `its own host writes it unsigned: only places fed from other hosts or ` +
          `from outside can require them`,
      });
  }
  return problems;
}

function nncpProblems(host: string, v: unknown): ModelProblem[] {
  const at = ['hosts', host, 'nncp'];
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return [
      {
        path: at,
        message:
          'nncp is a map: { node: NODE, cfg: PATH, handle: HANDLE, from: [NODE...] ' +
          '} (node is the NNCP node to send to; cfg, handle and from are optional)',
      },
    ];
  const problems: ModelProblem[] = [];
  const m = v as Record<string, unknown>;
  if (!('node' in m))
    problems.push({
      path: at,
      absent: [...at, 'node'],
      message: 'nncp needs node: the NNCP node of this host, as the sending node names it',
    });
  for (const [k, x] of Object.entries(m)) {
    const word = typeof x === 'string' && /^[^\s\0]+$/.test(x);
    if (k === 'node' || k === 'handle') {
      // nncp-exec would read a leading '-' as one of its options.
      if (!word || x.startsWith('-'))
        problems.push({
          path: [...at, k],
          message: `${k} is one word (an NNCP ${k === 'node' ? 'node name or id' : 'exec handle name'})`,
        });
    } else if (k === 'cfg') {
      if (typeof x !== 'string' || x.length === 0)
        problems.push({ path: [...at, k], message: "cfg is the path of the sending node's NNCP config" });
    } else if (k === 'from') {
      const node = (y: unknown) => typeof y === 'string' && /^[^\s\0]+$/.test(y);
      if (!(node(x) || (Array.isArray(x) && x.length > 0 && x.every(node))))
        problems.push({
          path: [...at, k],
          message:
            'from is the NNCP nodes this host takes tokens from, a word or a list: ' +
            "their ids, or their names in this host's NNCP config",
        });
    } else
      problems.push({
        path: [...at, k],
        atKey: true,
        message: `unknown key ${JSON.stringify(k)} (nncp has node, cfg, handle and from)`,
      });
  }
  return problems;
}

/** The hosts a `from:` may name, for its error. */
function knownHosts(hosts: Record<string, unknown> | undefined): string {
  return hosts ? ` (hosts: ${Object.keys(hosts).join(', ')})` : ' (the net has no hosts: list)';
}
