/** "Did you mean ...?": the closest word by edit distance (net files and the command line use it). */
import { expect, test } from 'vitest';
import { closest, didYouMean, editDistance } from '../../src/base/suggest.js';

test('edit distance counts a swap of neighbours as one edit; guesses need 1 or 2 edits, fewer for short words', () => {
  expect([
    editDistance('retrys', 'retries'),
    editDistance('dri', 'dir'),
    editDistance('', 'ab'),
    editDistance('kitten', 'sitting'),
  ]).toEqual([2, 1, 2, 3]);
  expect(closest('retrys', ['in', 'out', 'retries', 'run'])).toBe('retries');
  expect(closest('rn', ['in', 'run'])).toBe('run');
  expect(closest('x', ['a', 'b'])).toBeUndefined();
  expect(closest('worker', ['workers'])).toBe('workers');
  expect(closest('timeout', ['timeout'])).toBeUndefined();
  expect(closest('abcdef', ['uvwxyz'])).toBeUndefined();
  expect(didYouMean('retrys', ['retries'])).toBe('; did you mean "retries"?');
  expect(didYouMean('abcdef', ['uvwxyz'])).toBe('');
});
