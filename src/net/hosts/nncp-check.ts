/**
 * `net check --host H` where H is reached through NNCP: the receiving side. For every place of H
 * that another host feeds, H's NNCP config must give that host's node an exec handle (the host
 * entry's `handle:`, default `fspl`) that runs `fspl net receive NET --host H`: NNCP appends the
 * place's name. Without it, nncp-toss refuses the packets ("no handle") and keeps them.
 */
import { type NncpConfig, readNncpConfig } from '../../send/nncp-config.js';
import { hostConfig, hostOf } from '../model/hosts.js';
import { type NetModel, writersOf } from '../model/model.js';
import { ownNncpConfig, sendersTo } from './receive-admit.js';

export interface ReceiveCheck {
  place: string;
  /** The host that feeds the place. */
  from: string;
  /** What was found (ok), or why NNCP can't deliver there. */
  error?: string;
  detail: string;
}

export async function checkNncpReceiving(net: NetModel, host: string): Promise<ReceiveCheck[]> {
  const me = hostConfig(net, host);
  if (me.kind !== 'nncp') return [];
  const fed: Array<{ place: string; from: string }> = [];
  for (const p of net.places.values()) {
    if (hostOf(p) !== host || p.sync === true) continue;
    const from = writersOf(net, p.name)
      .map(hostOf)
      .find((h) => h !== undefined && h !== host);
    if (from) fed.push({ place: p.name, from });
  }
  if (fed.length === 0) return [];
  let config: NncpConfig;
  try {
    config = await readNncpConfig(ownNncpConfig(net, host));
  } catch (err) {
    return fed.map((f) => ({ ...f, error: (err as Error).message, detail: '' }));
  }
  return fed.map((f) => judgeHandle(net, config, host, me.nncp.handle, f));
}

function judgeHandle(
  net: NetModel,
  config: NncpConfig,
  host: string,
  handle: string,
  f: { place: string; from: string },
): ReceiveCheck {
  // The feeder's node: as this config names it (its hosts entry's node:, when this host sends to it
  // through NNCP too), or this host's own from: list; fspl net receive takes tokens from no other.
  const senders = sendersTo(net, host, f.from);
  if ('unknown' in senders)
    return { ...f, error: `fspl net receive would refuse its tokens: ${senders.unknown}`, detail: '' };
  const nodes = senders.from;
  const candidates = config.neighbours.filter(
    (n) => nodes.includes(n.name) || (n.id !== undefined && nodes.includes(n.id)),
  );
  const found = candidates.find((n) => n.exec[handle]);
  const want = `exec: { ${handle}: [fspl, net, receive, ${net.file}, --host, ${host}] }`;
  if (!found) {
    return {
      ...f,
      error:
        `${config.path} gives node ${nodes.join(', ')} no exec ` +
        `handle "${handle}": NNCP would refuse the tokens of ` +
        `host ${f.from} (add ${want} under neigh.${nodes[0]})`,
      detail: '',
    };
  }
  const argv = found.exec[handle]!;
  const at = argv.findIndex((w, i) => w === 'net' && argv[i + 1] === 'receive');
  const hostWord = argv.findIndex((w, i) => (w === '--host' && argv[i + 1] === host) || w === `--host=${host}`);
  const shown = `handle "${handle}" of node ${found.name} in ${config.path} runs ${JSON.stringify(argv)}`;
  if (at < 0) return { ...f, error: `${shown}, not fspl net receive (want ${want})`, detail: '' };
  if (hostWord < 0) return { ...f, error: `${shown}, without --host ${host} (want ${want})`, detail: '' };
  return { ...f, detail: shown };
}
