import type { JobEntry } from '../queue/jobs.js';

/**
 * The jobs of one pass of a queue's run, as a scan planned them. In timestamp order, a list taken
 * in turn; in sequence order, the jobs by number, taken at the number the run is at (`next`,
 * which moves as a job is recorded).
 */
export class JobPass {
  private index = 0;

  private constructor(
    private readonly list: readonly JobEntry[] | undefined,
    /** Sequence order: the jobs by number. */
    readonly bySeq: Map<bigint, JobEntry> | undefined,
  ) {}

  static inTimestampOrder(jobs: readonly JobEntry[]): JobPass {
    return new JobPass(jobs, undefined);
  }

  static inSequenceOrder(bySeq: Map<bigint, JobEntry>): JobPass {
    return new JobPass(undefined, bySeq);
  }

  /** The next job, left in the pass. */
  peek(next: bigint): JobEntry | undefined {
    return this.list ? this.list[this.index] : this.bySeq!.get(next);
  }

  /** The next job, taken: timestamp order moves past it. */
  take(next: bigint): JobEntry | undefined {
    return this.list ? this.list[this.index++] : this.bySeq!.get(next);
  }

  /** The job after `entry`, which was just taken. */
  after(entry: JobEntry): JobEntry | undefined {
    return this.list ? this.list[this.index] : this.bySeq!.get(entry.header.seq + 1n);
  }

  /** The job just taken comes next again (it is tried again). */
  again(): void {
    if (this.list) this.index--;
  }

  /** `entry` leaves the pass (sequence order: its number no longer holds it). */
  remove(entry: JobEntry): void {
    const { seq } = entry.header;
    if (this.bySeq?.get(seq) === entry) this.bySeq.delete(seq);
  }
}
