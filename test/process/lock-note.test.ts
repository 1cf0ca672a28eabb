import { describe, expect, it } from 'vitest';
import { formatLockNote, type LockNote, parseLockNote } from '../../src/process/lock-note.js';
import { genFilename } from '../../src/queue/jobs.js';

describe('the lock file note (src/process/lock-note.ts)', () => {
  const [a, b, c] = [genFilename(), genFilename(), genFilename()];
  const notes: LockNote[] = [
    { kind: 'S', seq: 1n, file: a, waiting: [] },
    { kind: 'S', seq: 18446744073709551614n, file: a, waiting: [b, c] },
    { kind: 'T', seq: 0n, file: b, waiting: [c] },
    { kind: 'N', first: 3n, last: 3n },
    { kind: 'N', first: 1n, last: 18446744073709551615n },
  ];

  it('reads back every note it writes, as it was', () => {
    for (const note of notes) {
      const line = formatLockNote(note);
      expect(line).not.toMatch(/\n/);
      expect(parseLockNote(line), line).toEqual(note);
    }
  });

  it('writes the lines the next run (and an older fspl) reads', () => {
    expect(formatLockNote({ kind: 'S', seq: 7n, file: a, waiting: [b] })).toBe(`S 7 ${a} ${b}`);
    expect(formatLockNote({ kind: 'N', first: 2n, last: 9n })).toBe('N 2 9');
  });

  it('leaves out names that are not job files, and reads nonsense as no note', () => {
    expect(parseLockNote(`T 4 ../etc/passwd ${a} nextseq`)).toEqual({
      kind: 'T',
      seq: 4n,
      file: undefined,
      waiting: [a],
    });
    for (const line of ['', 'N 1', 'N x 3', 'S 1', 'S -1 x', `X 1 ${a}`, `S 1  ${a}`, 'N 1 2 3'])
      expect(parseLockNote(line), line).toBeUndefined();
  });
});
