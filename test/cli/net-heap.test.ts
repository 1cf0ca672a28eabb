import { describe, expect, it } from 'vitest';
import { NET_RUN_HEAP_GROWING_PERCENT, netRunHeapFlag } from '../../src/cli/runtime/net-heap.js';

describe('netRunHeapFlag', () => {
  it('sets the heap growing percentage when the user gave none', () => {
    expect(netRunHeapFlag([], undefined)).toBe(`--heap-growing-percent=${NET_RUN_HEAP_GROWING_PERCENT}`);
    expect(netRunHeapFlag(['--enable-source-maps'], '--max-old-space-size=4096')).toBe(
      `--heap-growing-percent=${NET_RUN_HEAP_GROWING_PERCENT}`,
    );
  });

  it("leaves a user's own setting alone, on node's command line or in NODE_OPTIONS", () => {
    expect(netRunHeapFlag(['--heap-growing-percent=300'], undefined)).toBeUndefined();
    expect(netRunHeapFlag(['--heap_growing_percent=10'], undefined)).toBeUndefined();
    expect(netRunHeapFlag([], '--trace-gc --heap-growing-percent=20')).toBeUndefined();
  });

  it('is a growing factor, never a limit on the heap', () => {
    expect(netRunHeapFlag([], undefined)).not.toMatch(/max|limit|size/);
  });
});
