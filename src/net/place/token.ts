/**
 * A token: a packet in a place's jobs/, known by its number and its correlation key (the packet
 * variable KEY, FSPL_SET_KEY); and the names net writers give token files.
 */
import { v4 as uuidv4 } from 'uuid';
import type { PacketHeader } from '../../packet/index.js';
import { readHeaderFileSync } from '../../queue/job-headers.js';

export const KEY_VAR = 'KEY';

/** A token waiting in a place. */
export interface Token {
  place: string;
  filename: string;
  /** Absolute path of the job file. */
  path: string;
  seq: bigint;
  /** The correlation key: the packet's KEY variable, or PLACE-SEQ for a token that came without. */
  key: string;
  header: PacketHeader;
  /** When this runner first saw it (ms since the epoch). */
  seen: number;
}

export function tokenKey(place: string, header: PacketHeader): string {
  if (header.cmd.kind === 'Command') {
    for (const [k, v] of header.cmd.env) if (Buffer.from(k).toString() === KEY_VAR) return Buffer.from(v).toString();
  }
  return `${place}-${header.seq}`;
}

/** What a new token carries: its kind, key, variables and params. */
export interface TokenContent {
  kind?: 'Command' | 'NOP';
  /** Variables without the FSPL_SET_ prefix; KEY among them. */
  env?: Array<[Uint8Array, Uint8Array]>;
  params?: Uint8Array[];
  /**
   * Where the payload comes from: a file, the payloads of tokens (one after the other), a
   * descriptor (read from its position), bytes in memory (a JavaScript transition's returned
   * value), or none.
   */
  payload?: { path: string } | { tokens: string[] } | { fd: number } | { data: Uint8Array };
}

/**
 * A token as the place index keeps it. Its header may be dropped to save memory while the token
 * is far from the head of the place (see TokenIndex.bound); reading `header` then reads it from
 * the file again.
 */
export class IndexedToken implements Token {
  readonly place: string;
  readonly filename: string;
  readonly seq: bigint;
  readonly key: string;
  readonly seen: number;
  readonly nop: boolean;
  private readonly jobsDir: string;
  private kept: PacketHeader | undefined;

  constructor(place: string, jobsDir: string, filename: string, header: PacketHeader, seen: number) {
    this.place = place;
    this.jobsDir = jobsDir;
    this.filename = filename;
    this.seq = header.seq;
    this.key = tokenKey(place, header);
    this.seen = seen;
    this.nop = header.cmd.kind === 'NOP';
    this.kept = header;
  }

  /** seq as orderKey() writes it (made when asked: one string less per token indexed). */
  get order(): string {
    return orderKey(this.seq);
  }

  get path(): string {
    return `${this.jobsDir}/${this.filename}`;
  }

  get header(): PacketHeader {
    this.kept ??= readHeaderFileSync(this.path);
    return this.kept;
  }

  dropHeader(): void {
    this.kept = undefined;
  }

  /** The header a firing judged (useCheckedHeader): kept, whatever was kept before. */
  replaceHeader(header: PacketHeader): void {
    this.kept = header;
  }

  /** Its header, read by a caller anyway (a firing opening its file): kept again until it is consumed. */
  keepHeader(header: PacketHeader): void {
    this.kept ??= header;
  }
}

/**
 * Hand a token the header its caller has just read from its file: an indexed token whose header
 * was dropped (far from the head when scanned) need not read it a second time when it fires.
 */
export function rememberHeader(t: Token, header: PacketHeader): void {
  if (t instanceof IndexedToken) t.keepHeader(header);
}

/**
 * Hand a token the header its firing judged on the descriptor it reads (run/inputs.ts): that one
 * replaces whatever the index kept, so that the job's variables and its payload are one packet's.
 */
export function useCheckedHeader(t: Token, header: PacketHeader): void {
  if (t instanceof IndexedToken) t.replaceHeader(header);
}

/** A sequence number as a string that sorts as the number does (a u64 has at most 20 digits). */
export function orderKey(seq: bigint): string {
  return seq.toString().padStart(20, '0');
}

/**
 * The name a net writer gives a token: fspl-NUMBER-UUID.fspl (NUMBER as orderKey() writes it), a
 * job file to any Filespooler reader, whose listing alone tells a place's reader where each token
 * stands, so that it indexes only the lowest numbers. Other names have their header read once.
 */
export function numberedName(seq: bigint, id: string = uuidv4()): string {
  return `fspl-${orderKey(seq)}-${id}.fspl`;
}

const NUMBERED = /^fspl-\d{20}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.fspl$/;

/** The order key a numbered name carries. */
export function nameOrder(name: string): string | undefined {
  return name.length === 67 && NUMBERED.test(name) ? name.slice(5, 25) : undefined;
}

/** The number a numbered name carries, as a double (exact up to 2^53), read without making a string. */
export function nameNumber(name: string): number | undefined {
  if (name.length !== 67 || !NUMBERED.test(name)) return undefined;
  let n = 0;
  for (let i = 5; i < 25; i++) n = n * 10 + (name.charCodeAt(i) - 48);
  return n;
}

/** A token being written by a net writer: jobs/net-*.part. */
export function isPartName(name: string): boolean {
  return name.startsWith('net-') && name.endsWith('.part');
}
