import { describe, expect, it } from 'vitest';
import { errorVars, type FiringError, isErrorVar, readErrorVars } from '../../../src/net/place/error-vars.js';

describe("error tokens' ERROR_* variables (src/net/place/error-vars.ts)", () => {
  const failure: FiringError = {
    transition: 'resize',
    reason: 'exited with status 3',
    status: 3,
    stderrTail: 'no such file\n',
    log: '/s/logs/resize-1.log',
  };

  it('reads back what the run writes, from a Map or an object', () => {
    const vars = errorVars(failure, 'photos');
    expect(vars.map(([k]) => k)).toEqual([
      'ERROR_TRANSITION',
      'ERROR_REASON',
      'ERROR_STATUS',
      'ERROR_STDERR',
      'ERROR_LOG',
      'ERROR_PLACE',
    ]);
    expect(vars.every(([k]) => isErrorVar(k))).toBe(true);
    const expected = {
      transition: 'resize',
      reason: 'exited with status 3',
      status: '3',
      stderr: 'no such file\n',
      log: '/s/logs/resize-1.log',
      place: 'photos',
    };
    const map = new Map(vars);
    expect(readErrorVars((n) => map.get(n))).toEqual(expected);
    const record: Record<string, string> = Object.fromEntries(vars);
    expect(readErrorVars((n) => record[n])).toEqual(expected);
  });

  it('writes no status for a firing that did not exit (a timeout, a signal)', () => {
    const map = new Map(errorVars({ ...failure, status: undefined }, 'p'));
    expect(map.get('ERROR_STATUS')).toBe('');
    expect(readErrorVars((n) => map.get(n))?.status).toBe('');
  });

  it('a token without ERROR_TRANSITION is no error token; a missing reason reads as empty', () => {
    const plain = new Map([
      ['KEY', 'k'],
      ['ERROR_REASON', 'x'],
    ]);
    expect(readErrorVars((n) => plain.get(n))).toBeUndefined();
    const bare = new Map([['ERROR_TRANSITION', 't']]);
    expect(readErrorVars((n) => bare.get(n))).toEqual({
      transition: 't',
      reason: '',
      status: undefined,
      stderr: undefined,
      log: undefined,
      place: undefined,
    });
    expect(isErrorVar('RETRIED')).toBe(false);
  });
});
