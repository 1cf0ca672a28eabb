/**
 * Making packets on the sending side: take a sequence number from the sender's seqfile, capture
 * FSPL_SET_ variables, and write header then payload.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { namePath } from '../base/errors.js';
import { copy } from '../sys/copy.js';
import { closeQuietly, writeAllSync } from '../sys/io.js';
import { SeqFile } from '../sys/seqfile.js';
import { encodeHeader } from './codec.js';
import { isNotBeforeMs } from './not-before.js';
import { sealedPacketStream } from './seal/sealed-stream.js';
import { fdStream, packetStream } from './stream.js';
import { now } from './time.js';
import type { Bytes, CommandType, Ctime, PacketHeader } from './types.js';

export const ENV_PREFIX = 'FSPL_SET_';

/** Whether `fspl prepare` seals packets without --seal: FSPL_SEAL=1 (or true, yes) in the environment. */
export function sealByDefault(env: NodeJS.ProcessEnv = process.env): boolean {
  return /^(1|true|yes)$/i.test(env.FSPL_SEAL ?? '');
}

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

/** Errors of writing a packet out that name where it went: a full disk under it, a reader gone. */
const OUTPUT_ERRORS = ['ENOSPC', 'EDQUOT', 'EFBIG', 'EPIPE'] as const;

/** Errors of the output's own file system: what was written is a local file cut short, no packet. */
const DISK_ERRORS: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'EIO']);

/**
 * Write out a packet whose number `seq` was taken from the sender's seqfile (takeSenderSeq).
 * Should the writing fail on the output's disk (full, or failing: stdout is a file there), no
 * packet was made: the number is given back when no one has taken another since (the seqfile
 * still holds seq + 1), so that the receiver does not wait for it for ever. Not when the reader
 * went away (EPIPE): it may have taken the packet in part, and a plain packet cut short still
 * reads as a packet (`queue-write` over a dropped ssh stores it), so the number is spent and
 * another packet must not get it. The error names `where`.
 */
export function writeTakenSync(
  seqfile: string | undefined,
  seq: bigint,
  write: () => void,
  where = 'standard output',
): void {
  try {
    write();
  } catch (err) {
    if (DISK_ERRORS.has(String((err as NodeJS.ErrnoException).code))) giveBackSenderSeq(seqfile, seq);
    throw namePath(err, where, OUTPUT_ERRORS);
  }
}

/** Put `seq` back as the sender's next number if the seqfile still holds the one after it (best effort). */
export function giveBackSenderSeq(seqfile: string | undefined, seq: bigint): void {
  if (seqfile === undefined || seqfile === '-') return;
  try {
    SeqFile.with(seqfile, {}, (sf) => {
      if (sf.read() === seq + 1n) sf.write(seq, seq + 1n);
    });
  } catch {
    // The seqfile can't be changed now: the error that ended the packet is the one to report.
  }
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

type Text = string | Uint8Array;
const bytes = (t: Text): Bytes => (typeof t === 'string' ? Buffer.from(t, 'utf8') : t);

export interface PrepareOptions {
  /**
   * The sender's seqfile: the packet takes its number under the file's lock (the file is created
   * holding 1 if missing). Omitted or '-': sequence number 1, as `fspl prepare -s -`.
   */
  seqfile?: string;
  /** The sequence number itself, instead of taking one from a seqfile. */
  seq?: bigint;
  /** 'Command' (the default) runs the processor's command; 'NOP' always succeeds; 'Fail' always fails. */
  kind?: CommandType['kind'];
  /** Job parameters (Command packets only). */
  params?: Text[];
  /**
   * Variables for the job, stored without the FSPL_SET_ prefix and given to its command as
   * FSPL_SET_<name>. Default: none. `captureEnv()` gives what `fspl prepare` stores.
   */
  env?: Record<string, string> | Array<[Text, Text]>;
  /** Creation time; default now. */
  ctime?: Ctime;
  /**
   * An extension (retry-keys.ts): how many more times a processor may try this job when it fails
   * (`prepare --retries N`); a processor's --retries caps it, and without one it means nothing.
   */
  retries?: number;
  /**
   * An extension (not-before.ts): the job does not run before this time, nor in sequence order
   * any job after it (`prepare --not-before`). Kept to the millisecond; the reference ignores it.
   */
  notBefore?: Date;
}

export interface PreparePacketOptions extends PrepareOptions {
  /** The payload: a stream, bytes, or a file ({ path }). Default: none. */
  payload?: Readable | Uint8Array | { path: string };
  /**
   * Seal the packet (an extension; see docs/api.md): record the payload's length and CRC-32 in
   * the header, so that readers refuse it when it arrives cut short or corrupted. A stream
   * payload is first spooled to a nameless temporary file in $TMPDIR (as much disk space as the
   * payload) so that its length is known before the header. Default: false.
   */
  seal?: boolean;
}

/** The header a new packet gets; takes a sequence number from the seqfile if one is named. */
export function prepareHeader(options: PrepareOptions = {}): PacketHeader {
  const kind = options.kind ?? 'Command';
  let cmd: CommandType;
  if (kind === 'Command') {
    const env = Array.isArray(options.env) ? options.env : Object.entries(options.env ?? {});
    cmd = { kind, params: (options.params ?? []).map(bytes), env: env.map(([k, v]) => [bytes(k), bytes(v)]) };
  } else {
    if (options.params?.length || (options.env && Object.keys(options.env).length)) {
      throw new TypeError(`prepareHeader: a ${kind} packet has no params or env`);
    }
    cmd = { kind };
  }
  const { retries } = options;
  if (retries !== undefined && (!Number.isSafeInteger(retries) || retries < 0 || retries > 0xffff_ffff))
    throw new RangeError(`prepareHeader: retries must be a whole number from 0 to 4294967295, got ${String(retries)}`);
  const notBefore = options.notBefore === undefined ? undefined : notBeforeOf(options.notBefore);
  const seq = options.seq ?? takeSenderSeq(options.seqfile);
  const header = makeHeader({ seq, cmd, ctime: options.ctime });
  if (retries !== undefined) header.retries = BigInt(retries);
  if (notBefore !== undefined) header.notBefore = notBefore;
  return header;
}

/** A notBefore option as the header keeps it (ms since the epoch), checked before a number is taken. */
function notBeforeOf(d: Date): number {
  const ms = d instanceof Date ? Math.ceil(d.getTime()) : Number.NaN;
  if (!isNotBeforeMs(ms))
    throw new RangeError(`prepareHeader: notBefore must be a valid Date from 1970 on, got ${String(d)}`);
  return ms;
}

/**
 * A new packet as a readable stream: the header, then the payload, streamed. A payload file is
 * opened before a sequence number is taken, so a bad path uses none up.
 */
export function preparePacket(options: PreparePacketOptions = {}): Readable {
  const given = options.payload;
  let payload: Readable | Uint8Array | undefined;
  // A stream or bytes as they are (an fs.ReadStream has a `path` too, so test for these first).
  if (given === undefined || given instanceof Readable || given instanceof Uint8Array) {
    payload = given;
  } else {
    const fd = openPayloadFile(given.path);
    if (options.seal) {
      let header: PacketHeader;
      try {
        header = prepareHeader(options);
      } catch (err) {
        closeQuietly(fd);
        throw err;
      }
      return sealedPacketStream(header, { fd });
    }
    payload = fdStream(fd, true);
  }
  try {
    const header = prepareHeader(options);
    return options.seal ? sealedPacketStream(header, payload) : packetStream(header, payload);
  } catch (err) {
    if (given !== payload && payload instanceof Readable) payload.destroy(); // our own file stream
    throw err;
  }
}

/** A payload file, opened and checked before any number is taken (a directory opens, but fails once read). */
export function openPayloadFile(path: string): number {
  const fd = fs.openSync(path, 'r');
  try {
    if (fs.fstatSync(fd).isDirectory())
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), {
        code: 'EISDIR',
        path,
      });
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
  return fd;
}

/** Write a packet to a descriptor: the header, then (if given) everything readable from payloadFd. */
export function writePacketSync(outFd: number, header: PacketHeader, payloadFd?: number): void {
  writeAllSync(outFd, encodeHeader(header));
  if (payloadFd !== undefined) copy(payloadFd, outFd);
}

/** A small packet whole in memory (header and payload): for packets code builds, such as probes. */
export function packetBytes(header: PacketHeader, payload: Uint8Array = new Uint8Array(0)): Buffer {
  return Buffer.concat([encodeHeader(header), payload]);
}
