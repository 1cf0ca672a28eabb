/**
 * Crash recovery, once as a run opens and before anything fires: every commit the journal
 * recorded without an end is carried out again (each step is idempotent, commit.ts), and the
 * numbers of outputs staged but never recorded become NOP tokens or go with their files
 * (Place.repairPart), so that every token has moved exactly once. Only then is the journal
 * emptied and the staging directory made anew.
 */
import fs from 'node:fs';
import path from 'node:path';
import { removeTree } from '../../sys/untrusted.js';
import type { Place } from '../place/place.js';
import type { Committer } from './commit.js';
import { Journal } from './journal.js';

/** What recovery did: commits completed, numbers filled with NOP, staged files removed. */
export interface Recovered {
  commits: number;
  nops: number;
  removed: number;
}

/** Recover the net whose state is in stateDir, and open the committer's journal. */
export async function recover(
  committer: Committer,
  places: Iterable<Place>,
  next: Map<string, bigint>,
  stateDir: string,
  stagingDir: string,
): Promise<Recovered> {
  const journalPath = path.join(stateDir, 'journal');
  const pending = Journal.pending(journalPath);
  committer.journal = new Journal(journalPath);
  await committer.carryOut(pending);
  let nops = 0;
  let removed = 0;
  for (const p of places) {
    const parts = p.partFiles();
    if (parts.length === 0) continue;
    const writers = committer.lockWriters([p]);
    try {
      for (const part of parts) {
        if (p.repairPart(writers[0]!, part, next.get(p.name) ?? safeReadNext(p)) === 'nop') nops++;
        else removed++;
      }
    } finally {
      writers.forEach((w) => w.release());
    }
  }
  committer.journal.truncate();
  // Firings run as other users left directories of theirs in it (out/): removed without following
  // a name through them (untrusted.ts).
  removeTree(stagingDir);
  fs.mkdirSync(stagingDir, { recursive: true });
  return { commits: pending.length, nops, removed };
}

function safeReadNext(p: Place): bigint | undefined {
  try {
    return p.readNext();
  } catch {
    return undefined;
  }
}
