/**
 * `net ls` and `net show`: the tokens of a place in the order a reader takes them (by number),
 * streamed. The place is read in passes of at most PASS names above the last one listed, so that
 * memory stays flat however many tokens the place holds.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { NetRequestError, UnknownNameError } from '../../base/errors.js';
import { openPayloadSync, readHeaderFileSync } from '../../queue/job-headers.js';
import { effectiveOrder, type NetModel } from '../model/model.js';
import { placeNamed } from '../model/names.js';
import { readErrorVars } from '../place/error-vars.js';
import { Place } from '../place/place.js';
import { nameOrder, orderKey, tokenKey } from '../place/token.js';
import { RETRIED_VAR, retriedCount } from './error-tokens.js';

const PASS = 10_000;

/** One token as `net ls` lists it. */
export interface TokenListing {
  seq: bigint;
  key: string;
  filename: string;
  /** Absolute path of its file. */
  path: string;
  /** Age by its file's time, ms. */
  ageMs: number;
  /** Size of its file, bytes. */
  size: number;
  nop: boolean;
  /** Params as text (invalid UTF-8 replaced). */
  params: string[];
  /** Its variables (names without FSPL_SET_). */
  vars: Record<string, string>;
  /** RETRIED: how often `net retry` put it back. */
  retried: number;
  /** For an error token: the failed transition, why, where it was taken from, and the failure's log. */
  error?: { transition: string; reason: string; place?: string; log?: string };
}

/** The place, or a one-line refusal: a name the net does not have (names.ts), a place with no queue. */
export function placeOf(net: NetModel, name: string): Place {
  const spec = placeNamed(net, name);
  const p = new Place(spec, effectiveOrder(net, name));
  if (!p.exists()) throw new NetRequestError(`Place ${name} has no queue at ${spec.dir}: run fspl net init first`);
  return p;
}

type Entry = [order: string, name: string];
const before = (a: Entry, b: Entry) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);

/** The lowest `pass` job files above `after`, in order. */
function nextPass(p: Place, after: Entry | undefined, pass: number): Entry[] {
  let batch: Entry[] = [];
  p.queue.forEachJobFile((name) => {
    let order = nameOrder(name);
    if (order === undefined) {
      try {
        order = orderKey(readHeaderFileSync(p.queue.jobPath(name)).seq);
      } catch {
        return; // gone, or not a packet
      }
    }
    const e: Entry = [order, name];
    if (after && before(e, after) <= 0) return;
    batch.push(e);
    if (batch.length >= 2 * pass) batch = batch.sort(before).slice(0, pass);
  });
  return batch.sort(before).slice(0, pass);
}

/**
 * The tokens of a place in order, read as they are listed (`pass`: names per pass, PASS by
 * default). A bad place is refused at once, before anything is listed (or printed).
 */
export function listTokens(
  net: NetModel,
  place: string,
  options: { now?: number; pass?: number } = {},
): AsyncGenerator<TokenListing> {
  return tokensOf(placeOf(net, place), options);
}

async function* tokensOf(p: Place, options: { now?: number; pass?: number }): AsyncGenerator<TokenListing> {
  const pass = options.pass ?? PASS;
  let after: Entry | undefined;
  for (;;) {
    const batch = nextPass(p, after, pass);
    for (const e of batch) {
      const t = describe(p, e[1], options.now ?? Date.now());
      if (t) yield t;
    }
    if (batch.length < pass) return;
    after = batch[batch.length - 1];
    await new Promise<void>((resolve) => setImmediate(resolve)); // let the event loop breathe between passes
  }
}

/** One token's listing, or undefined when it is gone (consumed since the directory was read). */
function describe(p: Place, filename: string, now: number): TokenListing | undefined {
  const file = p.queue.jobPath(filename);
  let header: ReturnType<typeof readHeaderFileSync>;
  let st: fs.Stats;
  try {
    header = readHeaderFileSync(file);
    st = fs.statSync(file);
  } catch {
    return undefined;
  }
  const cmd = header.cmd;
  const vars: Record<string, string> = {};
  if (cmd.kind === 'Command') for (const [k, v] of cmd.env) vars[Buffer.from(k).toString()] = Buffer.from(v).toString();
  const t: TokenListing = {
    seq: header.seq,
    key: tokenKey(p.name, header),
    filename,
    path: file,
    ageMs: Math.max(0, now - st.mtimeMs),
    size: st.size,
    nop: cmd.kind !== 'Command',
    params: cmd.kind === 'Command' ? cmd.params.map((x) => Buffer.from(x).toString('utf8')) : [],
    vars,
    retried: retriedCount(vars[RETRIED_VAR]),
  };
  const error = readErrorVars((name) => vars[name]);
  if (error) t.error = { transition: error.transition, reason: error.reason, place: error.place, log: error.log };
  return t;
}

/** One token of a place, by key or by number; a one-line refusal when there is none. */
export async function findToken(
  net: NetModel,
  place: string,
  which: { key?: string; seq?: bigint },
): Promise<TokenListing> {
  if ((which.key === undefined) === (which.seq === undefined))
    throw new NetRequestError('Say which token: --key K or --seq N');
  for await (const t of listTokens(net, place)) {
    if (t.nop) continue;
    if (which.key !== undefined ? t.key === which.key : t.seq === which.seq) return t;
  }
  throw new UnknownNameError(
    'token',
    which.key ?? String(which.seq),
    `No token with ${which.key !== undefined ? `key ${JSON.stringify(which.key)}` : `number ${which.seq}`} ` +
      `in place ${place}`,
  );
}

/** A token's payload, as a stream. */
export function tokenPayload(t: TokenListing): Readable {
  return fs.createReadStream('', { fd: openPayloadSync(t.path) });
}
