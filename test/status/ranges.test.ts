import { describe, expect, it } from 'vitest';
import { formatRanges, toRanges } from '../../src/status/ranges.js';

describe('toRanges and formatRanges', () => {
  it('compresses sequence numbers into runs', () => {
    expect(formatRanges(toRanges([7n, 8n, 9n, 12n]))).toBe('7-9, 12');
    expect(formatRanges(toRanges([1n, 3n, 5n, 7n]), 2)).toBe('1, 3, ... (2 more runs)');
    expect(toRanges([])).toEqual([]);
  });
});
