/**
 * sys/exec-size.ts: whether execve(2) takes a command's arguments and environment, said before the
 * start, naming what is too large.
 */
import { describe, expect, it } from 'vitest';
import { execSizeProblem, MAX_ARG_STRLEN } from '../../src/sys/exec-size.js';

const onLinux = process.platform === 'linux';

describe('execSizeProblem', () => {
  it('takes the usual command at once', () => {
    expect(execSizeProblem('/bin/true', ['a', 'b'], { PATH: '/bin', FSPL_SEQ: '1' })).toBeUndefined();
  });

  it.runIf(onLinux)('names a variable or an argument over the limit for one string (its NUL counted)', () => {
    const big = 'x'.repeat(MAX_ARG_STRLEN);
    expect(execSizeProblem('/bin/true', [], { FSPL_SET_X: big })).toMatch(
      new RegExp(
        `^its environment variable FSPL_SET_X is ${MAX_ARG_STRLEN + 'FSPL_SET_X='.length + 1}` +
          ` bytes, over the system's ${MAX_ARG_STRLEN}-byte limit`,
      ),
    );
    expect(execSizeProblem('/bin/true', ['a', big], {})).toMatch(
      /^its argument 2 is \d+ bytes, over the system's 131072-byte limit for one argument/,
    );
    // Just under: a string of MAX_ARG_STRLEN bytes with its NUL is refused, one byte less is taken.
    expect(execSizeProblem('/bin/true', ['y'.repeat(MAX_ARG_STRLEN - 1)], {})).toBeUndefined();
  });

  it.runIf(onLinux)('counts bytes, not characters: multi-byte text over the limit is refused', () => {
    expect(execSizeProblem('/bin/true', [], { FSPL_SET_X: 'é'.repeat(MAX_ARG_STRLEN / 2) })).toMatch(
      /FSPL_SET_X is \d+ bytes/,
    );
  });

  it.runIf(onLinux)('names the total when no one string is too long but all of them are', () => {
    const env: Record<string, string> = {};
    for (let i = 0; i < 200; i++) env[`V${i}`] = 'z'.repeat(100_000);
    expect(execSizeProblem('/bin/true', [], env)).toMatch(
      /^its arguments and environment take \d+ bytes, over the system's \d+-byte limit for them all/,
    );
  });
});
