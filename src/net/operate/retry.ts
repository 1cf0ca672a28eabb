/**
 * `net retry`: error tokens go back where they came from, the input place of the failed
 * transition each was taken from (ERROR_PLACE), with their ERROR_* variables removed and RETRIED
 * counted, under a new number in that place (so a sequence place takes them next in line). The
 * tokens of one failed firing (an and-merge's pair: same transition, same key) go back in one
 * move, so they pair again. Each move is a commit (operator.ts): exactly once through a kill -9.
 */
import { NetRequestError, UnknownNameError } from '../../base/errors.js';
import { type NetModel, readersOf } from '../model/model.js';
import { placeNamed } from '../model/names.js';
import { readErrorVars } from '../place/error-vars.js';
import type { Place } from '../place/place.js';
import { RETRIED_VAR, type ReadToken, readToken, readTokens, retriedContent, retriedCount } from './error-tokens.js';
import { Operator } from './operator.js';

export interface RetryOptions {
  /** The error place to take tokens from; default every error place of the net. */
  errorPlace?: string;
  /** Only the tokens with these keys. */
  keys?: string[];
  /** Only the tokens of this failed transition. */
  transition?: string;
  /** Every error token (the default when neither keys nor transition is given is to refuse). */
  all?: boolean;
  /** Put them into this place, whatever their ERROR_PLACE says. */
  to?: string;
  /** Say what would move where; move nothing. */
  dryRun?: boolean;
  /** Bring back tokens set aside (`net set-aside`) instead: chosen by keys, `seq` or all. */
  setAside?: boolean;
  /** With setAside: the token that had this number in its place. */
  seq?: bigint;
}

/** One token put back (or, in a dry run, that would be). */
export interface RetryMove {
  key: string;
  transition: string;
  from: { place: string; seq: bigint };
  to: { place: string; seq?: bigint };
  /** RETRIED as the token carries it now (after the move). */
  retried: number;
}

export interface RetryResult {
  moves: RetryMove[];
  dryRun: boolean;
}

/** A token chosen, without its header (error tokens carry up to 2 KiB of stderr each): read again as it moves. */
interface Planned {
  tok: { place: string; filename: string; seq: bigint; key: string; retried: number };
  transition: string;
  to: string;
}

function errorPlaces(net: NetModel, only?: string): string[] {
  if (only !== undefined) {
    placeNamed(net, only);
    const readers = readersOf(net, only);
    if (readers.length > 0)
      throw new NetRequestError(
        `Place ${only} is read by ${readers.map((t) => t.name).join(', ')}: net ` +
          `retry takes tokens only from a place no transition reads (an error place)`,
      );
    return [only];
  }
  const names = [...new Set([...net.transitions.values()].flatMap((t) => (t.error !== undefined ? [t.error] : [])))];
  if (names.length === 0) throw new NetRequestError('The net has no error place: name the place to retry from');
  return names.filter((n) => readersOf(net, n).length === 0);
}

/** Where a token goes back to, or why it can't. */
function destination(net: NetModel, tok: ReadToken, to: string | undefined): { transition: string; to: string } {
  const error = readErrorVars((name) => tok.vars.get(name));
  const transition = error?.transition ?? '';
  if (to !== undefined) return { transition, to };
  const t = net.transitions.get(transition);
  if (!t)
    throw new NetRequestError(
      `Token ${tok.key} (${tok.place} #${tok.seq}) failed in transition ${JSON.stringify(transition)}, ` +
        `which the net no longer has: retry it with --to PLACE`,
    );
  const from = error?.place;
  if (from !== undefined && net.places.has(from)) return { transition, to: from };
  if (t.inputs.length === 1) return { transition, to: t.inputs[0]!.place };
  throw new NetRequestError(
    `Token ${tok.key} (${tok.place} #${tok.seq}) does not say which input ` +
      `of ${transition} it came from (${t.inputs.map((a) => a.place).join(', ')}): ` +
      `retry it with --to PLACE`,
  );
}

/** The tokens chosen, each with where it goes; every bad input found before anything moves. */
function plan(net: NetModel, places: Map<string, Place>, opts: RetryOptions): Planned[] {
  if (!opts.all && !opts.keys?.length && opts.transition === undefined)
    throw new NetRequestError('Say which error tokens to retry: --key K, --transition T or --all');
  if (opts.to !== undefined) placeNamed(net, opts.to);
  const keys = opts.keys?.length ? new Set(opts.keys) : undefined;
  const seenKeys = new Set<string>();
  let transitionSeen = opts.transition === undefined || net.transitions.has(opts.transition);
  const chosen: Planned[] = [];
  for (const name of errorPlaces(net, opts.errorPlace)) {
    const place = places.get(name);
    if (!place) continue; // no queue here (never made, or on another host): no error token either
    for (const tok of readTokens(place)) {
      const failedIn = readErrorVars((name) => tok.vars.get(name))?.transition;
      if (opts.transition !== undefined && failedIn !== opts.transition) continue;
      if (failedIn === opts.transition) transitionSeen = true;
      if (keys && !keys.has(tok.key)) continue;
      seenKeys.add(tok.key);
      const d = destination(net, tok, opts.to);
      if (!places.has(d.to))
        throw new NetRequestError(
          `Place ${d.to} has no queue here (${net.places.get(d.to)!.dir}): run ` +
            `fspl net init, or retry on the host that has it`,
        );
      chosen.push({
        tok: {
          place: tok.place,
          filename: tok.filename,
          seq: tok.seq,
          key: tok.key,
          retried: retriedCount(tok.vars.get(RETRIED_VAR)),
        },
        ...d,
      });
    }
  }
  if (!transitionSeen && opts.transition !== undefined)
    throw new UnknownNameError(
      'transition',
      opts.transition,
      `No transition named ${JSON.stringify(opts.transition)} in the net, and no error token names it`,
    );
  const missing = [...(keys ?? [])].filter((k) => !seenKeys.has(k));
  if (missing.length > 0)
    throw new UnknownNameError(
      'token',
      missing[0]!,
      `No error token with key ${missing.map((k) => JSON.stringify(k)).join(', ')}${fromTransition(opts.transition)}`,
    );
  return chosen.sort((a, b) =>
    a.tok.place < b.tok.place
      ? -1
      : a.tok.place > b.tok.place
        ? 1
        : a.tok.seq < b.tok.seq
          ? -1
          : a.tok.seq > b.tok.seq
            ? 1
            : 0,
  );
}

/** The tokens of one failed firing go back together: grouped by transition and key, in order of their first number. */
function firings(chosen: Planned[]): Planned[][] {
  const groups = new Map<string, Planned[]>();
  for (const p of chosen) {
    const id = JSON.stringify([p.transition, p.tok.key]);
    const g = groups.get(id);
    if (g) g.push(p);
    else groups.set(id, [p]);
  }
  return [...groups.values()];
}

const moveOf = (p: Planned, seq?: bigint): RetryMove => ({
  key: p.tok.key,
  transition: p.transition,
  from: { place: p.tok.place, seq: p.tok.seq },
  to: { place: p.to, seq },
  retried: p.tok.retried + 1,
});

/** Put error tokens back (see the top of this file). */
export async function retryTokens(net: NetModel, opts: RetryOptions): Promise<RetryResult> {
  const op = await Operator.open(net, { readOnly: opts.dryRun });
  try {
    const chosen = plan(net, op.places, opts);
    if (opts.dryRun) return { moves: chosen.map((p) => moveOf(p)), dryRun: true };
    const moves: RetryMove[] = [];
    for (const group of firings(chosen)) {
      const toks = group.map((p) => readToken(op.places.get(p.tok.place)!, p.tok.filename));
      // taken meanwhile (by a Filespooler reader of the error place): nothing to put back
      if (toks.some((t) => t === undefined)) continue;
      const seqs = await op.move(
        'retry',
        group.map((p, i) => ({ place: p.to, content: retriedContent(toks[i]!) })),
        toks.map((t) => t!),
      );
      group.forEach((p, i) => moves.push(moveOf(p, seqs[i]!.seq)));
    }
    return { moves, dryRun: false };
  } finally {
    op.close();
  }
}

/** ` from T` when the retry names a transition. */
function fromTransition(transition: string | undefined): string {
  return transition !== undefined ? ` from ${transition}` : '';
}
