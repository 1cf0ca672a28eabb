/**
 * What `fspl net receive NET --host H PLACE` takes, decided from the net alone before a byte of its
 * input is read (the rules: docs/distributed.md, "What `fspl net receive` takes"): a place of H
 * that a transition on another host writes, from that host's NNCP node when NNCP_SENDER says who
 * sent it. A refusal is a ReceiveRefusedError: one line, nothing stored, so NNCP keeps the packet.
 */
import { ReceiveRefusedError } from '../../base/errors.js';
import { hostConfig, hostOf, isDistributed } from '../model/hosts.js';
import { type NetModel, type PlaceSpec, writersOf } from '../model/model.js';

/** The NNCP nodes that may send to host H's places fed by host `feeder`, or why the net can't say. */
export type Senders = { from: string[] } | { unknown: string };

export function sendersTo(net: NetModel, host: string, feeder: string): Senders {
  const me = hostConfig(net, host);
  if (me.kind === 'nncp' && me.nncp.from !== undefined) return { from: me.nncp.from };
  const f = hostConfig(net, feeder);
  if (f.kind === 'nncp') return { from: [f.nncp.node] };
  const fix =
    me.kind === 'nncp'
      ? `name its node in hosts: { ${host}: { nncp: { from: [NODE] } } }`
      : `host ${host} is not reached through NNCP either (hosts.${host}.nncp)`;
  return {
    unknown:
      `host ${feeder} is not reached through NNCP, so the net does not say ` + `which NNCP node it sends from: ${fix}`,
  };
}

/** A place of `host` that another host feeds, with that host; a ReceiveRefusedError when no other host does. */
export interface FedPlace {
  spec: PlaceSpec;
  host: string;
  feeder: string;
}

/** `spec` (a place of `host`) as a place fed by another host; a ReceiveRefusedError when no other host feeds it. */
export function fedPlace(net: NetModel, host: string | undefined, spec: PlaceSpec): FedPlace {
  const place = spec.name;
  const refuse = (why: string) =>
    new ReceiveRefusedError(
      `refused: ${why}; fspl net receive takes tokens only for a place that a ` +
        `transition on another host writes, nothing stored`,
    );
  if (host === undefined || !isDistributed(net))
    throw refuse(`no other host feeds place ${place} (the net names no hosts)`);
  const writers = writersOf(net, place);
  const feeder = writers.map(hostOf).find((h) => h !== undefined && h !== host);
  if (feeder === undefined) {
    const by =
      writers.length === 0
        ? 'no transition writes it'
        : `written by ${writers.map((t) => t.name).join(', ')} on host ${host}`;
    throw refuse(`no other host feeds place ${place} on host ${host} (${by})`);
  }
  if (spec.sync === true)
    throw refuse(
      `place ${place} on host ${host} is filled by a sync tool from host ${feeder} (sync: true), not through NNCP`,
    );
  return { spec, host, feeder };
}

/**
 * The receiver's options for a fed place: with `sender` (NNCP_SENDER), the nodes it must be one
 * of and the config their names are looked up in; without, none (anyone: run by hand).
 */
export function senderRule(
  net: NetModel,
  fed: FedPlace,
  sender: string | undefined,
): { from?: string[]; sender?: string; nncpCfg?: string; what: string } {
  const what = `place ${fed.spec.name} on host ${fed.host} (${fed.spec.dir})`;
  if (sender === undefined) return { what };
  const senders = sendersTo(net, fed.host, fed.feeder);
  if ('unknown' in senders)
    throw new ReceiveRefusedError(
      `refused: ${what} was sent tokens by NNCP node ${sender}, but ${senders.unknown}; nothing stored`,
    );
  return { from: senders.from, sender, nncpCfg: ownNncpConfig(net, fed.host), what };
}

/**
 * The config H's node uses: the one it sends with (a `cfg:` of a host it sends to through NNCP), else NNCP's default.
 */
export function ownNncpConfig(net: NetModel, host: string): string | undefined {
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
