/**
 * `net check --host H` where H is reached through NNCP: the receiving side. For every place of H
 * that another host feeds, H's NNCP config must give that host's node an exec handle (the host
 * entry's `handle:`, default `fspl`) that runs `fspl net receive NET --host H`: NNCP appends the
 * place's name. Without it, nncp-toss refuses the packets ("no handle") and keeps them.
 */
import { type NncpConfig, readNncpConfig } from '../../send/nncp-config.js';
import { hostConfig, hostOf } from '../model/hosts.js';
import { type NetModel, writersOf } from '../model/model.js';

export interface ReceiveCheck {
  place: string;
  /** The host that feeds the place. */
  from: string;
  /** What was found (ok), or why NNCP can't deliver there. */
  error?: string;
  detail: string;
}

/** The config H's node uses: the one it sends with (a `cfg:` of a host it sends to through NNCP), else NNCP's default. */
function ownConfig(net: NetModel, host: string): string | undefined {
  for (const t of net.transitions.values()) {
    if (hostOf(t) !== host) continue;
    for (const p of [...t.outputs, ...(t.error ? [t.error] : [])]) {
      const to = hostOf(net.places.get(p) ?? {});
      if (!to || to === host) continue;
      const c = hostConfig(net, to);
      if (c.kind === 'nncp' && c.nncp.cfg !== undefined) return c.nncp.cfg;
    }
  }
  return undefined;
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
    config = await readNncpConfig(ownConfig(net, host));
  } catch (err) {
    return fed.map((f) => ({ ...f, error: (err as Error).message, detail: '' }));
  }
  return fed.map((f) => judgeHandle(net, config, host, me.nncp.handle, f));
}

function judgeHandle(net: NetModel, config: NncpConfig, host: string, handle: string, f: { place: string; from: string }): ReceiveCheck {
  const sender = hostConfig(net, f.from);
  // The feeder's node as this config names it is known when this host sends to it through NNCP too.
  const node = sender.kind === 'nncp' ? sender.nncp.node : undefined;
  const candidates = config.neighbours.filter((n) => node === undefined || n.name === node);
  const found = candidates.find((n) => n.exec[handle]);
  const want = `exec: { ${handle}: [fspl, net, receive, ${net.file}, --host, ${host}] }`;
  if (!found) {
    const whose = node === undefined ? `any node` : `node ${node}`;
    return {
      ...f,
      error: `${config.path} gives ${whose} no exec handle "${handle}": NNCP would refuse the tokens of host ${f.from} (add ${want} under neigh.${node ?? 'SENDER'})`,
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
