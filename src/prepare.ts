/**
 * Making packets on the sending side: take a sequence number from the sender's seqfile, capture
 * FSPL_SET_ variables, and write header then payload.
 */
import { copyFdSync, writeAllSync } from './io.js';
import { encodeHeader } from './packet/codec.js';
import type { Bytes, CommandType, Ctime, PacketHeader } from './packet/types.js';
import { SeqFile } from './seqfile.js';
import { now } from './time.js';

export const ENV_PREFIX = 'FSPL_SET_';

/** FSPL_SET_* variables of an environment, in its order, names without the prefix. */
export function captureEnv(env: NodeJS.ProcessEnv = process.env): Array<[Bytes, Bytes]> {
  const out: Array<[Bytes, Bytes]> = [];
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith(ENV_PREFIX) && v !== undefined) {
      out.push([Buffer.from(k.slice(ENV_PREFIX.length), 'utf8'), Buffer.from(v, 'utf8')]);
    }
  }
  return out;
}

/**
 * The next sender sequence number: with a seqfile path, take it under the lock (creating the file
 * holding 1 if missing) and store the following one; without (`-` or undefined), always 1.
 */
export function takeSenderSeq(seqfile: string | undefined): bigint {
  if (seqfile === undefined || seqfile === '-') return 1n;
  return SeqFile.with(seqfile, { create: true }, (sf) => sf.take());
}

/**
 * Read the sender's next sequence number without changing it (creating the file if missing).
 * Unlike prepare, `-` here is an ordinary file name, as in the reference.
 */
export function getSenderNext(seqfile: string): bigint {
  return SeqFile.with(seqfile, { create: true }, (sf) => sf.read());
}

export function setSenderNext(seqfile: string, seq: bigint): void {
  SeqFile.with(seqfile, { create: true }, (sf) => sf.write(seq));
}

export interface HeaderSpec {
  seq: bigint;
  cmd: CommandType;
  ctime?: Ctime;
}

export function makeHeader(spec: HeaderSpec): PacketHeader {
  return { seq: spec.seq, ctime: spec.ctime ?? now(), cmd: spec.cmd };
}

/** Write a packet to a descriptor: the header, then (if given) everything readable from payloadFd. */
export function writePacketSync(outFd: number, header: PacketHeader, payloadFd?: number): void {
  writeAllSync(outFd, encodeHeader(header));
  if (payloadFd !== undefined) copyFdSync(payloadFd, outFd);
}
