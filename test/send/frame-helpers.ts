/** Framed packets as an outbox hands them to NNCP (src/send/frames.ts), for the receivers' tests. */
import { makeHeader, packetBytes } from '../../src/packet/prepare.js';
import { sealOf } from '../../src/packet/seal/seal.js';

/** A sealed packet numbered `seq` whose payload names it. */
export function packet(seq: number, payload = `job ${seq}\n`): Buffer {
  const body = Buffer.from(payload);
  const header = {
    ...makeHeader({ seq: BigInt(seq), ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
    seal: sealOf(body),
  };
  return packetBytes(header, body);
}

/** One frame: `ID SEQ LENGTH`, then the packet. */
export const frame = (seq: number, bytes = packet(seq), id = `id-${seq}`) =>
  Buffer.concat([Buffer.from(`${id} ${seq} ${bytes.length}\n`), bytes]);
