/**
 * A queue as the many-queues engine (many-queues.ts) holds it: its state, and when a stopped one is looked at again.
 */
import { LockedError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { backoffMs } from '../base/timer.js';
import type { Candidate, Parent } from '../queue/queues-in.js';
import { BUSY_WAIT_MS } from '../sys/lock.js';
import type { QueueResult } from './options.js';
import type { QueueRun } from './queue-run.js';

/**
 * Watching: a queue stopped by its disk, or skipped for another processor's lock, is looked at
 * again after this long (doubling up to DISK_RETRY_MAX_MS), so that it resumes by itself without
 * waiting for a change in its jobs/.
 */
const DISK_RETRY_MS = 1000;
const DISK_RETRY_MAX_MS = 60_000;
const DISK_ERRORS: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'EIO']);

/** Whether a queue stopped on this error is looked at again by itself (watching): its disk may get room. */
export function isDiskError(err: unknown): boolean {
  return DISK_ERRORS.has(String((err as NodeJS.ErrnoException | undefined)?.code));
}

/** How long until a stopped or skipped queue is looked at again: DISK_RETRY_MS, doubling with each in a row. */
export function nextLookDelay(m: Member): number {
  return backoffMs(++m.retries, DISK_RETRY_MS, DISK_RETRY_MAX_MS);
}

export interface Member {
  kind: 'queue';
  run: QueueRun;
  /** How its run ends so far (the result's state). */
  outcome: QueueResult['state'];
  error?: Error;
  state: 'idle' | 'ready' | 'running' | 'stopped' | 'skipped' | 'gone';
  /** Its jobs/ changed since its last scan. */
  dirty: boolean;
  /** A look (peek) is under way. */
  looking: boolean;
  /** Its skip (another processor holds its lock) was said: not again until it is locked. */
  skipNoted: boolean;
  /** Stopped by a failed job: its shape then (QueueRun.shape); a look finding it unchanged leaves it stopped. */
  failedAt?: string;
  /** Disk errors or skips in a row (watching: each puts its next look off longer, lookLater). */
  retries: number;
  identity: string;
  parent?: Parent<Member>;
  /** Watching: the timer that looks at it again when its next job is due (its next try, its not-before time). */
  dueTimer?: NodeJS.Timeout;
}

export type Watched = Member | Parent<Member> | Candidate<Member>;

/** Why a queue was skipped. */
export const SKIP_WHY = 'another processor holds its lock';

/**
 * Take m's lock, waiting out a lock held for a moment (a `queue-status` probe) as a single
 * queue-process does, but without blocking the other queues; false, and m marked skipped (said
 * once), when another processor keeps holding it.
 */
export async function lockMember(m: Member, log: Logger): Promise<boolean> {
  const deadline = Date.now() + BUSY_WAIT_MS;
  for (;;) {
    try {
      await m.run.lock({ wait: false });
      if (m.skipNoted) m.retries = 0; // its holder let go: a skip puts the next look off 1 s again
      m.skipNoted = false;
      return true;
    } catch (err) {
      if (!(err instanceof LockedError)) throw err;
      if (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      // Said once, not at every change while the other processor works.
      if (!m.skipNoted)
        log.warn('process', `Skipping queue ${JSON.stringify(m.run.queue.dir)}: ${SKIP_WHY} (${err.path})`);
      m.skipNoted = true;
      m.state = 'skipped';
      if (m.outcome === 'done') m.outcome = 'skipped';
      return false;
    }
  }
}

/** A stopped queue runs again (its disk has room, its failed job was skipped): the run's summary says done. */
export function resumed(m: Member, log: Logger): void {
  m.retries = 0;
  m.failedAt = undefined;
  m.outcome = 'done';
  m.error = undefined;
  log.info('process', `Queue ${JSON.stringify(m.run.queue.dir)} resumed`);
}
