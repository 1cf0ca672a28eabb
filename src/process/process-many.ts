/**
 * processQueues: many queues served by one process (`queue-process -q A -q B ...`,
 * `--queues-in PARENT`), each exactly as a `queue-process` of that queue alone would serve it:
 * its own order, its own nextseq lock, its own --on-error outcome. A failing job stops its own
 * queue, never the others.
 *
 * - At most `jobs` commands run at once, across the queues. Jobs of one queue never overlap, and
 *   the queues with a job to run take turns (round-robin.ts: first come first served): one busy queue
 *   gets one turn in each round, whatever its backlog, so no queue starves another.
 * - A queue is locked only while it has work: looked at without its lock first (QueueRun.peek),
 *   locked when its turn comes, released when it has nothing more to run (or, while it waits
 *   for its turn, when many others hold theirs: LOCK_BUDGET). A queue locked by another
 *   processor is skipped with a note.
 * - Without `watch`, one pass: every queue runs what its scan found, and the call returns when
 *   no queue has anything more to run (or after maxJobs jobs, or when the signal aborts).
 * - With `watch`, one DirWatchSet watches every queue's jobs/ (one inotify instance, one timer),
 *   the parents of --queues-in for queues made or removed later, and the directories under them
 *   that are not queues yet. A change marks only its own queue for a look: the work of a change
 *   does not grow with the number of queues. A queue stopped by a failed job is tried again
 *   when its jobs/ changes (a poll that finds it as it was is no change: the job is not run
 *   again for nothing), and in sequence order when its nextseq moves (queue-set-next past the
 *   job); one stopped by its disk (ENOSPC, EDQUOT, EIO), or skipped because another processor
 *   held its lock, also after a while (1 s, doubling up to a minute), so that it resumes by
 *   itself once there is room, or once the other processor let go.
 */
import type { Queue } from '../queue/queue.js';
import { ManyQueues } from './many-queues.js';

export type { ProcessQueuesOptions, ProcessQueuesSummary, QueueResult, QueuesEvent } from './options.js';

import type { ProcessQueuesOptions, ProcessQueuesSummary, QueuesEvent } from './options.js';

/**
 * Process many queues in one process. `queues` are queue directories (or Queue objects, whose
 * decoder and logger are kept); opts.queuesIn adds every queue directly under each parent. The
 * options are processQueue's, plus `jobs` and `queuesIn`. Resolves when the pass (or, with
 * watch, the run) ends; a queue's failure is in its result, not thrown.
 */
export function processQueues(queues: Iterable<string | Queue>, opts: ProcessQueuesOptions): Promise<ProcessQueuesSummary> {
  return opts.listen ? processListened(queues, opts) : new ManyQueues(queues, opts).run();
}

/** processQueues with its page served (listen.ts). */
async function processListened(queues: Iterable<string | Queue>, opts: ProcessQueuesOptions): Promise<ProcessQueuesSummary> {
  // The page is fed by the run's events, before the caller's listener hears them.
  const { withQueuePage } = await import('./listen.js');
  return withQueuePage(opts, 'processQueues', (monitor) => {
    const onEvent = (e: QueuesEvent) => {
      monitor.onQueuesEvent(e);
      opts.onEvent?.(e);
    };
    return new ManyQueues(queues, { ...opts, listen: undefined, onEvent }).run();
  });
}
