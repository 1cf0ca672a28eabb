/**
 * Making signed packets (packet/signature.ts): the payload is measured first (its length, CRC-32
 * and SHA-512 go in the header; a piped payload is spooled to $TMPDIR for it, as a sealed one
 * is), then a sequence number is taken, the header signed, and header and payload written. A
 * signer that fails gives the number back, so that the receiver never waits for it.
 */
import { Readable } from 'node:stream';
import { signedMessage } from '../packet/codec.js';
import {
  giveBackSenderSeq,
  openPayloadFile,
  type PreparePacketOptions as PlainPrepareOptions,
  type PrepareOptions,
  prepareHeader,
  preparePacket as preparePlainPacket,
  writeTakenSync,
} from '../packet/prepare.js';
import { measurePayloadSync, writeMeasuredSync } from '../packet/seal/sealed-copy.js';
import { emitMeasured, measurePayload } from '../packet/seal/sealed-stream.js';
import type { PacketHeader } from '../packet/types.js';
import { type SignWith, signMessage } from './signer.js';

export type { SignWith } from './signer.js';

/** A sealed header, signed for a payload whose SHA-512 is `sha512`. */
export async function signHeader(
  header: PacketHeader,
  sha512: Uint8Array,
  how: SignWith,
  env?: NodeJS.ProcessEnv,
): Promise<PacketHeader> {
  const { blob } = await signMessage(signedMessage(header, sha512), how, env);
  return { ...header, signature: { sha512, sshsig: blob } };
}

/** A new header, signed for a measured payload; the number given back if signing fails. */
async function signedHeader(
  options: PrepareOptions,
  measured: { seal: PacketHeader['seal']; sha512?: Buffer },
  how: SignWith,
): Promise<PacketHeader> {
  const header = { ...prepareHeader(options), seal: measured.seal };
  try {
    return await signHeader(header, measured.sha512!, how);
  } catch (err) {
    if (options.seq === undefined) giveBackSenderSeq(options.seqfile, header.seq);
    throw err;
  }
}

/**
 * `fspl prepare --sign`: write a signed packet to outFd, its payload read from payloadFd (none if
 * undefined). The number comes from `options.seqfile` as prepare's does.
 */
export async function writeSignedPacket(
  outFd: number,
  options: PrepareOptions,
  payloadFd: number | undefined,
  how: SignWith,
): Promise<void> {
  const m = measurePayloadSync(payloadFd, true);
  try {
    const header = await signedHeader(options, m, how);
    writeTakenSync(options.seqfile, header.seq, () => writeMeasuredSync(outFd, header, m));
  } finally {
    m.close();
  }
}

export interface PreparePacketOptions extends PlainPrepareOptions {
  /**
   * Sign the packet (an extension; docs/api.md): with an OpenSSH private key ({ key: PATH }; one
   * with a passphrase through ssh-agent) or a command ({ command }, as `ssh-keygen -Y sign -f KEY
   * -n fspl`). A signed packet is sealed too. The payload is measured first (a stream spooled to
   * $TMPDIR), then the number taken and the header signed, as the stream is first read.
   */
  sign?: SignWith;
}

/** A new packet as a readable stream (packet/prepare.ts's preparePacket), signed if `sign` says how. */
export function preparePacket(options: PreparePacketOptions = {}): Readable {
  const how = options.sign;
  if (!how) return preparePlainPacket(options);
  const given = options.payload;
  let payload: Readable | { fd: number };
  if (given === undefined || given instanceof Uint8Array)
    payload = Readable.from(given ? [Buffer.from(given)] : [], { objectMode: false });
  else if (given instanceof Readable) payload = given;
  else payload = { fd: openPayloadFile(given.path) };
  async function* signed() {
    const m = await measurePayload(payload, true);
    try {
      yield* emitMeasured(await signedHeader(options, m, how!), m);
    } finally {
      m.close();
    }
  }
  return Readable.from(signed(), { objectMode: false });
}
