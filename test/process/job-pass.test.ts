/** The jobs of one pass (src/process/job-pass.ts): taken in turn or by number, and the job after one. */
import { describe, expect, it } from 'vitest';
import { JobPass } from '../../src/process/job-pass.js';
import type { JobEntry } from '../../src/queue/jobs.js';

const job = (seq: bigint, filename = `f${seq}`) => ({ filename, header: { seq } }) as unknown as JobEntry;

describe('JobPass', () => {
  it('in timestamp order: taken in turn, the one after the one taken, taken again after a try', () => {
    const [a, b, c] = [job(9n), job(2n), job(5n)];
    const pass = JobPass.inTimestampOrder([a, b, c]);
    expect(pass.peek(0n)).toBe(a);
    expect(pass.take(0n)).toBe(a);
    expect(pass.after(a)).toBe(b);
    expect(pass.take(0n)).toBe(b);
    pass.again();
    expect(pass.take(0n)).toBe(b);
    expect(pass.take(0n)).toBe(c);
    expect(pass.after(c)).toBeUndefined();
  });

  it('in sequence order: the job at the number the run is at, the one numbered after it, one removed', () => {
    const [a, b] = [job(1n), job(2n)];
    const pass = JobPass.inSequenceOrder(
      new Map([
        [1n, a],
        [2n, b],
      ]),
    );
    expect(pass.take(1n)).toBe(a);
    expect(pass.take(1n)).toBe(a); // the number moves when the job is recorded, not when it is taken
    expect(pass.after(a)).toBe(b);
    pass.remove(job(2n, 'another file with number 2'));
    expect(pass.peek(2n)).toBe(b); // not the job held at its number
    pass.remove(b);
    expect(pass.peek(2n)).toBeUndefined();
    expect(pass.after(a)).toBeUndefined();
  });
});
