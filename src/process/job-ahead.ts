/**
 * The next job of a queue's run, opened before its turn. While a job's command runs, the run's
 * thread only waits; opening the next job then (its file, its header, its command's environment
 * packed) takes that work out of the time between one job's end and the next one's start
 * (docs/benchmarks-notes.md, "The next job opened ahead").
 *
 * It holds one job at most, for one try of it. The job's turn takes it (take); anything else
 * closes it: another job's turn, the run resting or releasing its lock (drop), its file removed or
 * replaced before its turn (current). What failed to open is opened again at its turn, which
 * reports the failure in its place in the run.
 */
export class JobAhead<T extends { current(): boolean; close(): void }> {
  /** The job and the try it was opened for. */
  private key: { entry: object; attempt: number | undefined } | undefined;
  private ready: T | undefined;
  /** Bumped by drop: an open that ends after it closes what it opened. */
  private generation = 0;

  /**
   * Open `entry` (its try `attempt`) with `open`, now: called once a job's command has started, so
   * that the open comes while the command runs. (A job opened at its own turn starts a few
   * microtasks later: its open comes first, once.) `onReady` hears of it once it is held.
   */
  open(entry: object, attempt: number | undefined, open: () => Promise<T>, onReady?: (opened: T) => void): void {
    this.drop();
    const generation = this.generation;
    this.key = { entry, attempt };
    open().then(
      (opened) => {
        if (generation !== this.generation) return opened.close();
        this.ready = opened;
        onReady?.(opened); // held until taken, claimed or dropped
      },
      () => {}, // opened again at its turn, which says what went wrong
    );
  }

  /**
   * What was opened for `entry` at this try, now the caller's to close; undefined if nothing was,
   * or if it is no longer current (its file removed or replaced since). Anything else held is closed.
   */
  take(entry: object, attempt: number | undefined): T | undefined {
    const hit = this.heldFor(entry, attempt);
    if (!hit?.current()) {
      this.drop();
      return undefined;
    }
    this.ready = undefined;
    this.drop();
    return hit;
  }

  /**
   * What was opened for `entry` at this try, now the caller's to close, whatever its name holds
   * now: its job was started from it already (a chained start, queue-chain.ts). Anything else held is closed.
   */
  claim(entry: object, attempt: number | undefined): T | undefined {
    const hit = this.heldFor(entry, attempt);
    if (hit) this.ready = undefined;
    this.drop();
    return hit;
  }

  /** What is held, opened, for `entry` at this try (still held). */
  private heldFor(entry: object, attempt: number | undefined): T | undefined {
    return this.key?.entry === entry && this.key.attempt === attempt ? this.ready : undefined;
  }

  /** Close what is held, and open nothing more. */
  drop(): void {
    this.generation++;
    this.ready?.close();
    this.ready = undefined;
    this.key = undefined;
  }
}
