/**
 * A delivery: the way an outbox's packets leave this host. The outboxes (the nets' OutboxSender,
 * `fspl queue-send`) own the order and the removal protocol; a delivery only carries a batch of
 * consecutive packets and says, packet by packet and in order, which ones it is done with:
 *
 * - `ssh` (ssh-send.ts): a receiver on the far host stores each packet and acknowledges it. An
 *   acknowledgement means the packet is stored there, durably.
 * - `nncp` (nncp-send.ts): `nncp-exec` takes the batch into this node's NNCP spool; NNCP carries
 *   it, later and in any order, to the far node's exec handle (`fspl queue-receive`,
 *   `fspl net receive`), which stores each packet once. An acknowledgement means the packet is
 *   handed to NNCP, not that it has arrived.
 *
 * Either way, once a packet is acknowledged the outbox may forget it: the far side drops a copy
 * sent again after a crash here.
 */
import type { VerifierProblem } from './receive-script.js';

export interface OutgoingPacket {
  /** The packet file (an outbox job). */
  path: string;
  /** Its stable identity: the UUID of its fspl-UUID.fspl name, kept on the remote side. */
  id: string;
  seq: bigint;
}

export interface SendResult {
  /** Packets acknowledged, in order (a prefix of those given). */
  acked: number;
  /** Of those, how many the receiver already had (known over ssh only). */
  duplicates: number;
  /** The receiver's number after the packets it holds, as it said on connecting (ssh only). */
  remoteNext?: bigint;
  /** Why the delivery ended early (or, for a probe with no packets, failed). */
  error?: string;
  /** The seal verifier (`fspl:`) is unusable on the remote host: nothing was or will be taken. */
  verifier?: VerifierProblem;
}

export interface DeliveryHooks {
  signal?: AbortSignal;
  /** Called for each packet acknowledged, in order, before the next acknowledgement is taken. */
  onAck?: (p: OutgoingPacket, duplicate: boolean) => void;
  /** Called once the far side says which number it expects next (ssh only): return an error to send nothing. */
  onReady?: (remoteNext: bigint) => string | undefined;
}

export interface Delivery {
  readonly kind: 'ssh' | 'nncp';
  /**
   * What an acknowledgement means: `stored` on the far host, or `handed` to a store-and-forward
   * system that delivers it later.
   */
  readonly acknowledges: 'stored' | 'handed';
  /**
   * Send packets, in the order given. Never throws for a failed connection or tool: the result
   * says how far it went. With no packets it is a probe: the way is tried as a delivery would
   * try it.
   */
  send(packets: OutgoingPacket[], hooks?: DeliveryHooks): Promise<SendResult>;
}
