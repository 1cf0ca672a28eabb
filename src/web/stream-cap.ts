/**
 * How many event streams a page server keeps open at once: each holds a socket and its buffers for
 * as long as the client likes, so without a cap a hostile client would take the process's memory
 * and descriptors. The ones over the cap are refused, logged once per burst, never per request.
 */
import type { Logger } from '../base/log.js';

/** How long the log waits before saying how many more were refused, ms. */
const LOG_EVERY_MS = 60_000;

export class StreamCap {
  private open = 0;
  private refused = 0;
  private logTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly max: number,
    private readonly log: Logger,
    /** Whose log lines: the target and the server's name ('net', 'serve'), and the option that sets the cap, if any. */
    private readonly where: { target: string; name: string; option?: string } = {
      target: 'net',
      name: 'serve',
      option: '--max-streams',
    },
  ) {}

  get size(): number {
    return this.open;
  }

  /**
   * Take a place for one stream: a function that gives it back (once, however often it is called),
   * or undefined when all are taken (the refusal is counted for the log).
   */
  take(): (() => void) | undefined {
    if (this.open >= this.max) {
      this.refuse();
      return undefined;
    }
    this.open++;
    let held = true;
    return () => {
      if (held) {
        held = false;
        this.open--;
      }
    };
  }

  /** Stop the log's timer (the server is closing); what it had not said yet is said now. */
  close(): void {
    clearTimeout(this.logTimer);
    this.logTimer = undefined;
    this.flush();
  }

  /** The first refusal of a burst is said at once; those that follow, in one line a minute later. */
  private refuse(): void {
    this.refused++;
    if (this.logTimer) return;
    this.flush();
    this.wait();
  }

  private wait(): void {
    this.logTimer = setTimeout(() => {
      this.logTimer = undefined;
      if (this.refused === 0) return;
      this.flush();
      this.wait();
    }, LOG_EVERY_MS);
    this.logTimer.unref();
  }

  private flush(): void {
    if (this.refused === 0) return;
    const n = this.refused;
    this.refused = 0;
    this.log.warn(
      this.where.target,
      `${this.where.name}: refused ${n} event stream${n === 1 ? '' : 's'} ` +
        `(503): ${this.max} already open, the most ${this.where.option ? `${this.where.option} allows` : 'allowed'}`,
    );
  }
}
