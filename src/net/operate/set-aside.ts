/**
 * `net set-aside`: a poison token leaves its place without being lost. It goes to the net's
 * set-aside queue, STATE/set-aside (a Filespooler queue, so `fspl queue-ls` reads it too), with
 * where it was taken from and why (SET_ASIDE_*); a sequence place gets a NOP in its number, so
 * that its reader does not wait for it forever. `net retry --set-aside` brings it back, under a
 * new number, and only then is the set-aside copy removed. Nothing is ever deleted.
 *
 * The move is a commit (operator.ts): the copy staged in the set-aside queue and the NOP staged
 * beside the token (net-op-nop-*.part, fsynced with its directory), the move recorded, the copy
 * published, the token removed, then the NOP published. Killed anywhere, recovery publishes the
 * NOP if no token holds its number any more, and removes it otherwise (settleNopPart).
 *
 * The place's consumer lock (nextseq.lock) is held throughout: a run reading the place, which
 * holds it for its whole run, could otherwise be firing the token; set a token aside from a
 * place that a running `net run` reads once that run has stopped.
 */
import fs from 'node:fs';
import os from 'node:os';
import { v4 as uuidv4 } from 'uuid';
import { LockedError, NetError, NetRequestError, UnknownNameError } from '../../base/errors.js';
import { makeHeader, writePacketSync } from '../../packet/prepare.js';
import { readHeaderFileSync } from '../../queue/job-headers.js';
import { fsyncDir } from '../../sys/durable.js';
import { closeQuietly, fsyncSync } from '../../sys/io.js';
import type { SeqFile } from '../../sys/seqfile.js';
import type { NetModel } from '../model/model.js';
import { type Place, publishDurably } from '../place/place.js';
import { numberedName, type TokenContent } from '../place/token.js';
import { NOP_PART_PREFIX, SET_ASIDE, setAsidePlace } from './aside-queue.js';
import { type ReadToken, readTokens } from './error-tokens.js';
import { Operator } from './operator.js';
import type { RetryMove, RetryResult } from './retry.js';
import { findToken } from './tokens.js';

const PREFIX = 'SET_ASIDE_';

/** A token set aside. */
export interface SetAsideResult {
  place: string;
  seq: bigint;
  key: string;
  reason: string;
  /** Its number in the set-aside queue. */
  asideSeq: bigint;
  /** Whether a NOP took its number in its place. */
  nop: boolean;
}

/** Set one token aside (see the top of this file). */
export async function setAside(
  net: NetModel,
  place: string,
  which: { key?: string; seq?: bigint },
  options: { reason?: string; by?: string } = {},
): Promise<SetAsideResult> {
  const tok = await findToken(net, place, which);
  const aside = setAsidePlace(net);
  aside.init();
  const op = await Operator.open(net, { extra: [aside] });
  const p = op.places.get(place)!;
  let consumer: SeqFile;
  try {
    consumer = p.queue.lockSeqfile();
  } catch (err) {
    op.close();
    if (err instanceof LockedError)
      throw new NetError(
        `Place ${place} is being read (its nextseq.lock is held, by a net run ` +
          `or a queue-process): stop it, then set the token aside`,
      );
    throw err;
  }
  try {
    if (!fs.existsSync(tok.path))
      throw new NetRequestError(
        `The token ${which.key ?? which.seq} of place ${place} is gone (it was taken meanwhile)`,
      );
    const reason = options.reason ?? '';
    const env: Array<[Uint8Array, Uint8Array]> = Object.entries(tok.vars).map(([k, v]) => [
      Buffer.from(k),
      Buffer.from(v),
    ]);
    const extra = {
      PLACE: place,
      SEQ: String(tok.seq),
      REASON: reason,
      BY: options.by ?? os.userInfo().username,
      AT: new Date().toISOString(),
    };
    for (const [k, v] of Object.entries(extra)) env.push([Buffer.from(PREFIX + k), Buffer.from(v)]);
    const content: TokenContent = {
      env,
      params: tok.params.map((x) => Buffer.from(x)),
      payload: { tokens: [tok.path] },
    };
    const nop = p.order === 'sequence' ? stageNop(p, tok.seq) : undefined;
    const header = readHeaderFileSync(tok.path);
    const [moved] = await op.move(
      'aside',
      [{ place: SET_ASIDE, content }],
      [{ place, filename: tok.filename, path: tok.path, seq: tok.seq, key: tok.key, header, seen: 0 }],
    );
    if (nop) publishDurably(nop, p.queue.jobPath(numberedName(tok.seq)));
    return { place, seq: tok.seq, key: tok.key, reason, asideSeq: moved!.seq, nop: nop !== undefined };
  } finally {
    consumer.release();
    op.close();
  }
}

/** A NOP with this number, staged beside the token it will stand for; durable before the move is recorded. */
function stageNop(p: Place, seq: bigint): string {
  const temp = p.queue.jobPath(`${NOP_PART_PREFIX}${uuidv4()}.part`);
  const fd = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
  try {
    writePacketSync(fd, makeHeader({ seq, cmd: { kind: 'NOP' } }));
    fsyncSync(fd); // its bytes...
  } finally {
    closeQuietly(fd);
  }
  fsyncDir(p.queue.jobsDir); // ...and its name are durable before the move is recorded: recovery finds it
  return temp;
}

/** `net retry --set-aside`: tokens set aside go back to their places, under new numbers. */
export async function restoreSetAside(
  net: NetModel,
  opts: { keys?: string[]; seq?: bigint; all?: boolean; dryRun?: boolean },
): Promise<RetryResult> {
  if (!opts.all && !opts.keys?.length && opts.seq === undefined)
    throw new NetRequestError('Say which tokens set aside to bring back: --key K, --seq N or --all');
  const aside = setAsidePlace(net);
  const op = await Operator.open(net, { readOnly: opts.dryRun, extra: aside.exists() ? [aside] : [] });
  try {
    const chosen: ReadToken[] = [];
    if (aside.exists()) {
      for (const tok of readTokens(aside)) {
        if (opts.keys?.length && !opts.keys.includes(tok.key)) continue;
        if (opts.seq !== undefined && tok.vars.get(`${PREFIX}SEQ`) !== String(opts.seq)) continue;
        chosen.push(tok);
      }
    }
    if (chosen.length === 0 && !opts.all) {
      const which = opts.keys?.length
        ? `key ${opts.keys.map((k) => JSON.stringify(k)).join(', ')}`
        : `number ${opts.seq}`;
      throw new UnknownNameError('token', opts.keys?.[0] ?? String(opts.seq), `No token set aside with ${which}`);
    }
    chosen.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    const moves: RetryMove[] = [];
    for (const tok of chosen) {
      const to = tok.vars.get(`${PREFIX}PLACE`) ?? '';
      if (!op.places.has(to))
        throw new NetRequestError(`Token ${tok.key} was set aside from ${JSON.stringify(to)}, which has no queue here`);
      const move: RetryMove = {
        key: tok.key,
        transition: '',
        from: { place: SET_ASIDE, seq: tok.seq },
        to: { place: to },
        retried: 0,
      };
      if (!opts.dryRun) {
        const env = [...tok.vars]
          .filter(([k]) => !k.startsWith(PREFIX))
          .map(([k, v]): [Uint8Array, Uint8Array] => [Buffer.from(k), Buffer.from(v)]);
        const params = tok.header.cmd.kind === 'Command' ? tok.header.cmd.params : [];
        const [back] = await op.move(
          'back',
          [{ place: to, content: { env, params, payload: { tokens: [tok.path] } } }],
          [tok],
        );
        move.to.seq = back!.seq;
      }
      moves.push(move);
    }
    return { moves, dryRun: !!opts.dryRun };
  } finally {
    op.close();
  }
}
