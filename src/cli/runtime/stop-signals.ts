/**
 * How queue-process and stdin-process answer the signals that end them. A job's command runs in
 * a process group of its own (exec.ts says why), so these reach fspl alone when they are sent to
 * its process group: by a terminal (Ctrl-C signals its whole foreground process group), or kill(1);
 * or to fspl alone: by systemd with KillMode=mixed.
 *
 *   SIGINT or SIGTERM   the first stops the run: the running jobs finish (within --stop-timeout,
 *                       if given) and are recorded, and none starts after them
 *   the second          interrupts: the running jobs are stopped as --timeout stops a job
 *                       (SIGKILL to its process group), and they stay in their queues
 *   SIGHUP, SIGQUIT     interrupt at once: the terminal hung up, or Ctrl-\ asked to quit, and a
 *                       job in fspl's process group would have had them too
 *   any after that      ends fspl at once: the handlers are gone
 */
import type { Logger } from '../../base/log.js';

/** The words of the messages: what runs, and what becomes of it when it is stopped. */
export interface StopWords {
  /** What the first signal lets finish, e.g. 'the current job'. */
  running: string;
  /** The same as a pronoun: 'it', 'them'. */
  pronoun: string;
  /** After an interrupt, e.g. 'it stays in the queue'; empty for nothing to say. */
  stays: string;
}

export const ONE_QUEUE: StopWords = { running: 'the current job', pronoun: 'it', stays: 'it stays in the queue' };
export const MANY_QUEUES: StopWords = {
  running: 'the running jobs',
  pronoun: 'them',
  stays: 'they stay in their queues',
};
export const STDIN_JOB: StopWords = { running: 'the job', pronoun: 'it', stays: '' };

const GENTLE = ['SIGINT', 'SIGTERM'] as const;
const AT_ONCE = ['SIGHUP', 'SIGQUIT'] as const;

export class StopSignals {
  /** The run's `signal`: aborted by the first SIGINT or SIGTERM. */
  readonly stop = new AbortController();
  /** The run's `interrupt`: aborted by the second, or by SIGHUP or SIGQUIT. */
  readonly interrupt = new AbortController();
  private listening = false;

  constructor(
    private readonly log: Logger,
    private readonly words: StopWords,
    /** --stop-timeout, for the message (the run itself keeps the time). */
    private readonly stopTimeout?: number,
  ) {}

  listen(): void {
    if (this.listening) return;
    this.listening = true;
    for (const s of GENTLE) process.on(s, this.onGentle);
    for (const s of AT_ONCE) process.on(s, this.onAtOnce);
  }

  /** Catch them no more: a signal then does what it does by default (ends fspl). */
  close(): void {
    if (!this.listening) return;
    this.listening = false;
    for (const s of GENTLE) process.off(s, this.onGentle);
    for (const s of AT_ONCE) process.off(s, this.onAtOnce);
  }

  private readonly onGentle = (sig: NodeJS.Signals) => {
    if (this.stop.signal.aborted) return this.interruptNow(`${sig} again`);
    const { running, pronoun, stays } = this.words;
    const within = this.stopTimeout === undefined ? '' : ` (or in ${this.stopTimeout} s)`;
    this.log.info(
      'process',
      `Stopping after ${running}${within}; a second SIGINT or ` +
        `SIGTERM stops ${pronoun} now${stays ? ` (${stays})` : ''}`,
    );
    this.stop.abort();
  };

  private readonly onAtOnce = (sig: NodeJS.Signals) => this.interruptNow(sig);

  private interruptNow(why: string): void {
    this.close(); // a further signal ends fspl at once
    this.log.info('process', `${why}: stopping ${this.words.running} now`);
    this.stop.abort();
    this.interrupt.abort();
  }
}
