/**
 * Error tokens as an operator reads them: the variables a failed firing gave them (outcome.ts:
 * ERROR_TRANSITION, ERROR_PLACE, ERROR_REASON, ERROR_LOG ...) and the number of times they have
 * been retried (RETRIED); and what a token put back carries (the same, without ERROR_*).
 */
import { readHeaderFileSync } from '../../queue/job-headers.js';
import { isErrorVar } from '../place/error-vars.js';
import type { Place } from '../place/place.js';
import { type Token, type TokenContent, tokenKey } from '../place/token.js';

/** The variable counting how many times a token has been put back by `net retry`. */
export const RETRIED_VAR = 'RETRIED';

/** A token of a place, read from its file. */
export interface ReadToken extends Token {
  /** Its variables (names without FSPL_SET_); empty for a NOP. */
  vars: Map<string, string>;
}

/** The tokens of a place, as jobs/ is read (unsorted), NOPs and unreadable files left out. */
export function* readTokens(place: Place): Generator<ReadToken> {
  const names: string[] = [];
  place.queue.forEachJobFile((name) => names.push(name));
  for (const filename of names) {
    const tok = readToken(place, filename);
    if (tok) yield tok;
  }
}

/** One token of a place, read from its file; undefined when it is gone, not a packet, or a NOP. */
export function readToken(place: Place, filename: string): ReadToken | undefined {
  const file = place.queue.jobPath(filename);
  let header: ReturnType<typeof readHeaderFileSync>;
  try {
    header = readHeaderFileSync(file);
  } catch {
    return undefined;
  }
  if (header.cmd.kind !== 'Command') return undefined;
  const vars = new Map(header.cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]));
  return {
    place: place.name,
    filename,
    path: file,
    seq: header.seq,
    key: tokenKey(place.name, header),
    header,
    seen: 0,
    vars,
  };
}

/** How many times a token has been retried, from its RETRIED variable. */
export function retriedCount(value: string | undefined): number {
  const n = Number(value ?? '0');
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** What an error token becomes when put back: its ERROR_* variables gone, RETRIED one more, the rest kept. */
export function retriedContent(tok: ReadToken): TokenContent {
  const env: Array<[Uint8Array, Uint8Array]> = [];
  for (const [k, v] of tok.vars) {
    if (isErrorVar(k) || k === RETRIED_VAR) continue;
    env.push([Buffer.from(k), Buffer.from(v)]);
  }
  env.push([Buffer.from(RETRIED_VAR), Buffer.from(String(retriedCount(tok.vars.get(RETRIED_VAR)) + 1))]);
  const params = tok.header.cmd.kind === 'Command' ? tok.header.cmd.params : [];
  return { env, params, payload: { tokens: [tok.path] } };
}
