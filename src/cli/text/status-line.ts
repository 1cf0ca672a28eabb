/**
 * A status line drawn in place on a terminal (stderr): written over from its start (`\r`) and
 * erased to the end (`\x1b[K`), one line, cut to the terminal's width. Nothing else may share its
 * line: whatever else is written to that terminal is written once the line is cleared, and the
 * line drawn again after it (sink() does both for log lines; queue-process clears it while a job
 * that writes to the terminal runs).
 */
export class StatusLine {
  private shown = false;
  private last = '';

  constructor(private readonly out: NodeJS.WriteStream) {}

  get drawn(): boolean {
    return this.shown;
  }

  draw(text: string): void {
    this.last = text;
    const width = (this.out.columns || 80) - 1;
    this.out.write(`\r\x1b[K${text.slice(0, width)}`);
    this.shown = true;
  }

  /** Erase the line, leaving the cursor at its start (call before exiting, too). */
  clear(): void {
    if (this.shown) this.out.write('\r\x1b[K');
    this.shown = false;
  }

  /** A log sink: the line cleared, the log line written where it was, then the line drawn again. */
  sink = (line: string): void => {
    const was = this.shown;
    this.clear();
    this.out.write(line); // a terminal: written at once, as the line is
    if (was) this.draw(this.last);
  };
}
