/**
 * The status line `fspl net run` draws on stderr when stderr is a terminal: tokens per place and
 * firings per second (over the last 10 seconds), redrawn in place at most five times a second.
 * Log lines are written above it (see sink()).
 */
import { type LiveState, type NetEvent, RateWindow } from '../../net-tools.js';
import { StatusLine } from './status-line.js';

const REDRAW_MS = 200;
const RATE_WINDOW_MS = 10_000;

export class NetProgressLine {
  private readonly rate = new RateWindow({ bucketMs: 1000, spanMs: RATE_WINDOW_MS });
  private tokens: Record<string, number> = {};
  private running = 0;
  private fired = 0;
  private failed = 0;
  private lastDraw = 0;
  private readonly line: StatusLine;

  /** `places`: the net's places in the order of its file. */
  constructor(
    out: NodeJS.WriteStream,
    private readonly places: string[],
  ) {
    this.line = new StatusLine(out);
  }

  event(e: NetEvent, now = Date.now()): void {
    if (e.type === 'commit') {
      this.fired++;
      this.rate.record(now);
    } else if (e.type === 'fail' && !e.willRetry) this.failed++;
    else if (e.type === 'start') this.running++;
    if (e.type === 'commit' || e.type === 'fail') this.running = Math.max(0, this.running - 1);
    this.maybeDraw(now);
  }

  live(s: LiveState, now = Date.now()): void {
    this.tokens = s.places ?? {};
    this.running = Object.values(s.transitions).reduce((n, t) => n + t.running, 0);
    this.maybeDraw(now);
  }

  /** The line as it would be drawn at `now`. */
  text(now = Date.now()): string {
    const perSecond = this.rate.perMinute(now, RATE_WINDOW_MS) / 60;
    const places = this.places.map((p) => `${p} ${this.tokens[p] ?? 0}`).join(' · ');
    return (
      `fspl net: ${places} | ${perSecond >= 10 ? perSecond.toFixed(0) : perSecond.toFixed(1)} ` +
      `firings/s, ${this.running} running, ${this.fired} fired${this.failed ? `, ${this.failed} failed` : ''}`
    );
  }

  private maybeDraw(now: number): void {
    if (now - this.lastDraw >= REDRAW_MS) this.draw(now);
  }

  private draw(now: number): void {
    this.lastDraw = now;
    this.line.draw(this.text(now));
  }

  /** A log sink that writes the line above the status line, then draws it again. */
  get sink(): (line: string) => void {
    return this.line.sink;
  }

  /** Clear the line (call before exiting). */
  finish(): void {
    this.line.clear();
  }
}
