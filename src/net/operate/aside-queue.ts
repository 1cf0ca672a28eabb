/**
 * The net's set-aside queue (STATE/set-aside, set-aside.ts) and the NOPs that take set-aside
 * tokens' numbers, as both an operator's move and its recovery (operator.ts) need them.
 */
import path from 'node:path';
import { readHeaderFileSync } from '../../queue/job-headers.js';
import { unlinkQuietly } from '../../sys/io.js';
import type { NetModel, PlaceSpec } from '../model/model.js';
import { Place, publishDurably } from '../place/place.js';
import { numberedName } from '../place/token.js';

/** The set-aside queue's name among the places a move writes (no net place can be named so). */
export const SET_ASIDE = '(set-aside)';
/** The staged NOP that takes a set-aside token's number: net-op-nop-*.part. */
export const NOP_PART_PREFIX = 'net-op-nop-';

/** The set-aside queue of a net. */
export function setAsidePlace(net: NetModel): Place {
  const spec: PlaceSpec = { name: SET_ASIDE, dir: path.join(net.stateDir, 'set-aside'), order: 'arrival' };
  return new Place(spec, 'arrival');
}

/**
 * Recovery of a staged NOP (the caller holds the place's writers): published when no token holds
 * its number any more (the move consumed the token), removed when the token is still there.
 * The publish is durable (publishDurably: rename, then fsync of jobs/). The removals need no
 * fsync: should a power cut undo one, the .part comes back and the next recovery settles it the
 * same way (a .part is never read as a token).
 */
export function settleNopPart(p: Place, part: string): void {
  let seq: bigint;
  try {
    seq = readHeaderFileSync(part).seq;
  } catch {
    unlinkQuietly(part); // cut short before it was complete: the move was never recorded
    return;
  }
  if (p.holds(seq)) unlinkQuietly(part);
  else publishDurably(part, p.queue.jobPath(numberedName(seq)));
}

/** SET_ASIDE_BY of the tokens a run refused for their signature (run/refuse.ts). */
export const REFUSED_BY = 'signature check';

/** Tokens refused for their signature and still set aside, by the place they were taken from. */
export function refusedCounts(net: NetModel): Map<string, number> {
  const counts = new Map<string, number>();
  const aside = setAsidePlace(net);
  if (!aside.exists()) return counts;
  aside.queue.forEachJobFile((name) => {
    let header: ReturnType<typeof readHeaderFileSync>;
    try {
      header = readHeaderFileSync(aside.queue.jobPath(name));
    } catch {
      return; // gone meanwhile, or not a packet
    }
    if (header.cmd.kind !== 'Command') return;
    const vars = new Map(header.cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]));
    const place = vars.get('SET_ASIDE_PLACE');
    if (place !== undefined && vars.get('SET_ASIDE_BY') === REFUSED_BY) counts.set(place, (counts.get(place) ?? 0) + 1);
  });
  return counts;
}
