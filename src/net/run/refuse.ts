/**
 * Tokens of a signed place (place/signatures.ts) judged before any transition may take them: as a
 * scan first indexes them, each is opened, its header's signature checked against the place's
 * signers and its payload against the signed SHA-512 (sign/judge.ts). A refused token is set
 * aside into STATE/set-aside (the queue `net set-aside` fills, operate/set-aside.ts) with the
 * reason, never fired and never lost, and leaves its place without taking its number: unlike an
 * operator's set-aside, no NOP stands for it, so a sequence place still waits for the real token
 * of that number (a forgery can't make it skip one).
 *
 * A token is judged again when a firing opens it (inputs.ts): whoever writes its place may have
 * replaced it under its name since. Refused then, it is set aside the same way (setAsideAtFiring),
 * its firing dropped before anything ran, and the firing's other tokens go back.
 *
 * The move: the copy written into the set-aside queue (durably, as `net put` writes), then the
 * token removed from jobs/ (fsynced). Killed between the two, the token is judged again by the
 * next run and set aside once more: a second copy in the set-aside queue at worst, never a loss.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LockedError } from '../../base/errors.js';
import type { Logger } from '../../base/log.js';
import type { PacketHeader } from '../../packet/index.js';
import type { AllowedSigners } from '../../sign/allowed-signers.js';
import { judgeSignedFile } from '../../sign/judge.js';
import { fsyncDir } from '../../sys/durable.js';
import { closeQuietly } from '../../sys/io.js';
import type { NetModel } from '../model/model.js';
import { REFUSED_BY, setAsidePlace } from '../operate/aside-queue.js';
import type { Place } from '../place/place.js';
import type { IndexedToken, TokenContent } from '../place/token.js';
import type { RefusedInput } from './inputs.js';

/**
 * Judge the tokens a scan of a signed place has just indexed; the refused ones are set aside and
 * forgotten by the index. Returns the tokens let in. A token that can't be judged or moved now
 * (gone meanwhile, the set-aside queue busy or its disk full) is forgotten too: the next scan
 * finds it again.
 */
export async function judgeFresh(
  net: NetModel,
  p: Place,
  fresh: readonly IndexedToken[],
  signers: AllowedSigners,
  log: Logger,
): Promise<{ admitted: IndexedToken[]; refused: number }> {
  const admitted: IndexedToken[] = [];
  let refused = 0;
  for (const t of fresh) {
    let verdict: { ok: true } | { ok: false; why: string; header: PacketHeader };
    try {
      const opened = await p.queue.openPlainJob(t.filename);
      try {
        const v = judgeSignedFile(opened.header, opened.payload, opened.payloadOffset, signers, t.seq);
        if (v.kind === 'signed' && v.payload.spooled) closeQuietly(v.payload.fd);
        verdict = v.kind === 'signed' ? { ok: true } : { ok: false, why: v.why, header: opened.header };
      } finally {
        opened.close();
      }
    } catch (err) {
      log.debug('net', () => `Cannot judge token ${t.filename} of place ${p.name} now: ${(err as Error).message}`);
      p.forget(t.filename);
      lookAgainSoon(p);
      continue;
    }
    if (verdict.ok) {
      admitted.push(t);
      continue;
    }
    if (setAside(net, p, t.filename, verdict.header, verdict.why, log)) refused++;
  }
  return { admitted, refused };
}

/**
 * A token that its firing found refused as it opened it (inputs.ts): forgotten by the index and
 * set aside as judgeFresh sets one aside. Its firing is dropped by the caller.
 */
export function setAsideAtFiring(net: NetModel, p: Place, r: RefusedInput, log: Logger): void {
  setAside(
    net,
    p,
    r.token.filename,
    r.header,
    r.why,
    log,
    ' (replaced since it was indexed: judged again as its firing opened it)',
  );
}

/** Forget a refused token and set it aside; false when that must wait for the next look (logged, with `when`). */
function setAside(
  net: NetModel,
  p: Place,
  filename: string,
  header: PacketHeader,
  why: string,
  log: Logger,
  when = '',
): boolean {
  p.forget(filename);
  try {
    const asideSeq = setAsideRefused(net, p, filename, header, why);
    log.warn('net', `Place ${p.name}: ${why}${when}; set aside (#${asideSeq} in ${setAsidePlace(net).spec.dir})`);
    return true;
  } catch (err) {
    // Left in its place, unindexed: the next look at the place judges it again and tries anew.
    const busy =
      err instanceof LockedError
        ? 'the set-aside queue is busy'
        : `it could not be set aside (${(err as Error).message})`;
    log.warn('net', `Place ${p.name}: ${why}${when}; ${busy}: it will be set aside at the next look`);
    lookAgainSoon(p);
    return false;
  }
}

/**
 * A token left in its place unindexed: marked to be read again in a while (its directory may not
 * change again), not at once, which a full disk would make a busy loop.
 */
function lookAgainSoon(p: Place): void {
  setTimeout(() => p.markDirty(), 1000).unref();
}

/** Copy a refused token into the set-aside queue with why, then remove it from its place. Its number there. */
function setAsideRefused(net: NetModel, p: Place, filename: string, header: PacketHeader, why: string): bigint {
  const aside = setAsidePlace(net);
  aside.init();
  const file = p.queue.jobPath(filename);
  const env: Array<[Uint8Array, Uint8Array]> =
    header.cmd.kind === 'Command'
      ? header.cmd.env.filter(([k]) => !Buffer.from(k).toString().startsWith('SET_ASIDE_'))
      : [];
  const extra = {
    PLACE: p.name,
    SEQ: String(header.seq),
    REASON: why,
    BY: REFUSED_BY,
    AT: new Date().toISOString(),
    FILE: filename,
    HOST: os.hostname(),
  };
  for (const [k, v] of Object.entries(extra)) env.push([Buffer.from(`SET_ASIDE_${k}`), Buffer.from(v)]);
  const content: TokenContent = {
    env,
    params: header.cmd.kind === 'Command' ? header.cmd.params : [],
    payload: { tokens: [file] },
  };
  // The copy is durable once putNow returns (its file fsynced, then the set-aside queue's jobs/).
  const { seq } = aside.putNow(content);
  try {
    fs.unlinkSync(file); // unlink removes the name: it follows no link planted there
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fsyncDir(path.dirname(file)); // the removal is durable with this fsync of the place's jobs/
  return seq;
}
