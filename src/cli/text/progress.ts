/**
 * The progress line queue-process draws on stderr when stderr is a terminal: jobs done and
 * waiting, rate and ETA, redrawn in place at most a few times a second (status-line.ts). A job
 * whose output goes to the terminal (--output-to PassBoth) gets it with the line cleared; the line
 * comes back when no job runs.
 */
import type { QueuesEvent } from '../../process/options.js';
import type { ProcessEvent } from '../../process/process.js';
import { StatusLine } from './status-line.js';

const REDRAW_MS = 200;

function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export class ProgressLine {
  private done = 0;
  private failed = 0;
  private waiting = 0;
  private started: number | undefined;
  private lastDraw = 0;
  private idle = false;
  /** Jobs running whose output goes to the terminal: while any runs, the line stays cleared. */
  private holding = 0;
  private readonly line: StatusLine;

  /** `jobsWriteHere`: the jobs' stdout and stderr are the terminal's (PassBoth). */
  constructor(
    out: NodeJS.WriteStream,
    readonly jobsWriteHere = false,
  ) {
    this.line = new StatusLine(out);
  }

  /** A log sink: each log line written where the progress line was, then the line drawn under it. */
  get sink(): (line: string) => void {
    return this.line.sink;
  }

  update(e: ProcessEvent): void {
    const now = Date.now();
    switch (e.type) {
      case 'scan':
        this.waiting = e.waiting;
        this.idle = false;
        break;
      case 'start':
        this.started ??= now;
        this.idle = false;
        if (this.jobsWriteHere) {
          this.holding++;
          this.line.clear(); // the job may write at once
          return;
        }
        break;
      case 'end':
        if (!e.interrupted && !e.refused) {
          // An interrupted job is neither done nor gone: it stays in the queue (a refused one was never counted).
          this.done++;
          if (!e.ok) this.failed++;
          this.waiting = Math.max(0, this.waiting - 1);
        }
        if (this.jobsWriteHere) {
          this.holding = Math.max(0, this.holding - 1);
          // Back at once: between jobs is the only time the line can be seen.
          if (this.holding === 0) this.draw(now);
          return;
        }
        break;
      case 'idle':
        this.idle = true;
        this.draw(now);
        return;
    }
    if (now - this.lastDraw >= REDRAW_MS) this.draw(now);
  }

  /** The line as it would be drawn now. */
  text(now = Date.now()): string {
    const elapsed = this.started === undefined ? 0 : (now - this.started) / 1000;
    const rate = elapsed > 0 ? this.done / elapsed : 0;
    let line = `fspl: ${this.done} done${this.failed ? ` (${this.failed} failed)` : ''}, ${this.waiting} waiting`;
    if (this.idle) return `${line}; watching for new jobs`;
    if (rate > 0)
      line += `, ${rate >= 10 ? rate.toFixed(0) : rate.toFixed(1)} jobs/s, ETA ${clock(this.waiting / rate)}`;
    return line;
  }

  private draw(now: number): void {
    if (this.holding > 0) return; // a job has the terminal
    this.lastDraw = now;
    this.line.draw(this.text(now));
  }

  /** Clear the line (call before exiting). */
  finish(): void {
    this.line.clear();
  }
}

/**
 * The same line for a run over many queues: jobs done across them, and the jobs waiting in all
 * (each queue's last scan, less what has run since).
 */
export class ManyProgress {
  private readonly waiting = new Map<string, number>();
  private total = 0;

  constructor(private readonly line: ProgressLine) {}

  update(e: QueuesEvent): void {
    switch (e.type) {
      case 'scan':
        this.set(e.queue, e.waiting);
        this.line.update({ type: 'scan', waiting: this.total });
        return;
      case 'end':
        if (!e.interrupted && !e.refused) this.set(e.queue, (this.waiting.get(e.queue) ?? 1) - 1);
        this.line.update(e);
        return;
      case 'start':
      case 'idle':
        this.line.update(e);
        return;
      case 'removed':
      case 'stopped':
        this.set(e.queue, 0);
    }
  }

  private set(queue: string, n: number): void {
    const m = Math.max(0, n);
    this.total += m - (this.waiting.get(queue) ?? 0);
    if (m === 0) this.waiting.delete(queue);
    else this.waiting.set(queue, m);
  }
}
