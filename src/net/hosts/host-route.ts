/**
 * The way from an outbox to its place on another host, by the host's kind (model/hosts.ts): over
 * ssh, to the receiver script (the place's recvseq), or through NNCP, to `fspl net receive` run by
 * the place's node as an exec handle (the place's received ranges).
 */
import type { Delivery } from '../../send/delivery.js';
import { nncpDelivery } from '../../send/nncp-send.js';
import { sshDelivery } from '../../send/ssh-send.js';
import type { HostConfig, RemotePlace } from '../model/hosts.js';

export function deliveryTo(host: HostConfig, place: string, remote: RemotePlace): Delivery {
  if (host.kind === 'nncp') return nncpDelivery({ ...host.nncp, args: [place] });
  return sshDelivery(host.ssh, remote.dir, { fspl: host.fspl, host: remote.host });
}

/** How the way is named in messages: `host b` over ssh, `host b (NNCP node NODE)`. */
export function describeWay(host: HostConfig): string {
  return host.kind === 'nncp' ? `host ${host.name} (NNCP node ${host.nncp.node})` : `host ${host.name}`;
}
