/**
 * Jobs a queue's signatures do not let in (sign/judge.ts): judged by their headers as a scan
 * reads them, before the pass is planned, so that a forged packet never runs, never shares a
 * number with the real one (which would stop the queue), never counts as waiting; the rest are
 * judged again, payload and all, as they run. A refused job goes to refused/ (Queue.refuse).
 */
import { describeSystemError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import type { JobEntry } from '../queue/jobs.js';
import type { Queue } from '../queue/queue.js';
import type { AllowedSigners } from '../sign/allowed-signers.js';

// Loaded with the first scan of a queue with allowed signers.
let judgeModule: Promise<typeof import('../sign/judge.js')> | undefined;
const judging = () => (judgeModule ??= import('../sign/judge.js'));

/** The entries not judged yet whose headers `signers` refuse, and why; the others get their signer. */
export async function refusedHeaders(
  entries: Iterable<JobEntry>,
  signers: AllowedSigners,
): Promise<Array<{ entry: JobEntry; why: string }>> {
  const { judgeSignedHeader } = await judging();
  const refused: Array<{ entry: JobEntry; why: string }> = [];
  for (const entry of entries) {
    if (entry.signer) continue;
    const verdict = judgeSignedHeader(entry.header, signers);
    if (verdict.signer) entry.signer = verdict.signer;
    else refused.push({ entry, why: verdict.why });
  }
  return refused;
}

/** Move a refused job file to refused/: never run, its number still waited for. Said in the log either way. */
export function moveRefused(queue: Queue, filename: string, why: string, log: Logger): void {
  try {
    if (queue.refuse(filename, why)) log.warn('process', `${why}; moved to ${queue.dir}/refused/`);
  } catch (err) {
    // Not ours to move (a sticky jobs/, a read-only refused/): it is still never run, and is
    // refused again by every scan that finds it; the run goes on.
    log.warn('process', `${why}; left in jobs/ (${describeSystemError(err)})`);
  }
}
