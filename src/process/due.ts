/**
 * A queue that waits until a time (on the wall clock) before its next job: the job's next try
 * (queue-process --retries, retry-run.ts) or its not-before time (prepare --not-before,
 * packet/not-before.ts). Strict order: nothing after that job runs meanwhile. A one-pass run
 * stops there, at a retry as at a failed job, at a not-before time as at a missing job (no
 * error); a watching run sleeps on a timer until then, at most WALL_CHECK_MS at a time
 * (base/timer.ts: a clock set back or forward), and looks again.
 */
import type { RetryDueError } from '../base/errors.js';
import type { Logger } from '../base/log.js';
import { dueDelayMs } from '../base/timer.js';
import { notBeforeText, notYet } from '../packet/not-before.js';
import type { JobEntry } from '../queue/jobs.js';
import type { QueueJobEvent } from './options.js';
import type { Retries } from './retry-run.js';

export class DueWait {
  /** The job the pass stopped at when it waits for its not-before time, and that time. */
  private notBefore: { seq: bigint; ms: number } | undefined;
  /** The last not-before wait said (`seq@ms`): each is said once. */
  private said: string | undefined;

  /** `say`: a new not-before wait, told once (the run logs it, and emits it). */
  constructor(
    private readonly retries: Retries,
    private readonly say: (seq: bigint, ms: number) => void,
  ) {}

  /** A run's DueWait: each new not-before wait of the queue in `dir` logged, and emitted as a `waiting` event. */
  static told(
    retries: Retries,
    dir: string,
    watching: boolean,
    log: Logger,
    emit: (event: QueueJobEvent) => void,
  ): DueWait {
    return new DueWait(retries, (seq, ms) => {
      const then = watching ? 'the queue waits until then' : 'stopping, the job stays in the queue';
      log.info('process', `Job ${seq} of ${JSON.stringify(dir)} is not due before ${notBeforeText(ms)}; ${then}`);
      emit({ type: 'waiting', seq, until: new Date(ms) });
    });
  }

  /** Whether the job waits for a time (`ms` then says until when). */
  waits(entry: JobEntry): boolean {
    this.notBefore = undefined;
    if (this.retries.waits(entry)) return true;
    if (!notYet(entry.header)) return false;
    const { seq } = entry.header;
    const ms = entry.header.notBefore!;
    this.notBefore = { seq, ms };
    if (this.said !== `${seq}@${ms}`) {
      this.said = `${seq}@${ms}`;
      this.say(seq, ms);
    }
    return true;
  }

  /** When the job the pass stopped at is due, ms since the epoch; undefined if it did not stop at one. */
  get ms(): number | undefined {
    return this.retries.dueMs ?? this.notBefore?.ms;
  }

  /** A one-pass run's error when the job waits for its next try; none for a not-before time. */
  error(entry: JobEntry | undefined, next: bigint): RetryDueError | undefined {
    return this.retries.dueMs === undefined ? undefined : this.retries.dueError(entry, next);
  }
}

/**
 * A timer for a queue whose next job is due at `dueMs`, kept in `timers` until it fires (the
 * caller clears what is left when its run ends), in place of the queue's `previous` one. It sleeps
 * at most WALL_CHECK_MS: the look then finds the job not due yet, and waits again.
 */
export function atDue(
  timers: Set<NodeJS.Timeout>,
  dueMs: number | undefined,
  fn: () => void,
  previous?: NodeJS.Timeout,
): NodeJS.Timeout {
  if (previous) {
    timers.delete(previous);
    clearTimeout(previous);
  }
  const timer = setTimeout(
    () => {
      timers.delete(timer);
      fn();
    },
    dueDelayMs(dueMs ?? Date.now()),
  );
  timers.add(timer);
  return timer;
}
