/**
 * src/base/timer.ts: delays beyond setTimeout's 2^31-1 ms are waited out in steps, and the library
 * refuses a timeout that is not a number of seconds (NaN, a negative number) instead of firing
 * it at once. Fake timers: nothing here waits for real.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { dueDelayMs, MAX_TIMER_MS, setLongTimeout, WALL_CHECK_MS, waitUnlessAborted } from '../../src/base/timer.js';
import { encodeHeader, makeHeader, processFd, Queue, runCommand } from '../../src/lowlevel.js';
import { tempDir } from '../helpers.js';

const makePacket = (seq: bigint) =>
  Buffer.concat([
    encodeHeader(makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [] } })),
    Buffer.from('payload\n'),
  ]);

afterEach(() => {
  vi.useRealTimers();
});

test(
  'dueDelayMs: until a wall-clock time, at most WALL_CHECK_MS ' +
    'at once (a clock that jumps is noticed), never negative',
  () => {
    expect(dueDelayMs(10_500, 10_000)).toBe(500);
    expect(dueDelayMs(10_000 + 86_400_000, 10_000)).toBe(WALL_CHECK_MS);
    expect(dueDelayMs(9_000, 10_000)).toBe(0);
    expect(WALL_CHECK_MS).toBe(60_000);
  },
);

describe('setLongTimeout', () => {
  test('fires once the whole delay has passed, not at 2^31-1 ms', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const fn = vi.fn();
    setLongTimeout(fn, 2 * MAX_TIMER_MS + 1000);
    vi.advanceTimersByTime(2 * MAX_TIMER_MS);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  test('can be cancelled between two steps; Infinity never fires; a short delay fires as setTimeout does', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const long = vi.fn();
    const cancel = setLongTimeout(long, MAX_TIMER_MS + 5);
    vi.advanceTimersByTime(MAX_TIMER_MS);
    cancel();
    const never = vi.fn();
    setLongTimeout(never, Infinity);
    const short = vi.fn();
    setLongTimeout(short, 10);
    vi.advanceTimersByTime(10 * MAX_TIMER_MS);
    expect(long).not.toHaveBeenCalled();
    expect(never).not.toHaveBeenCalled();
    expect(short).toHaveBeenCalledTimes(1);
  });
});

describe('waitUnlessAborted', () => {
  test('ends when the signal aborts (at once if it has), else after the delay', async () => {
    await waitUnlessAborted(MAX_TIMER_MS, AbortSignal.abort());
    const ac = new AbortController();
    const waiting = waitUnlessAborted(MAX_TIMER_MS, ac.signal);
    ac.abort();
    await waiting;
    await waitUnlessAborted(1, new AbortController().signal);
  });
});

describe('the library refuses a timeout that is not a number of seconds, 0 or more', () => {
  function queue(): Queue {
    const q = Queue.init(path.join(tempDir(), 'q'));
    q.writeBuffer(makePacket(1n));
    return q;
  }

  test.each([NaN, -1])(
    'Queue.process(..., { timeout: %s }), with a command or a function: RangeError, nothing run',
    async (timeout) => {
      const q = queue();
      const fn = vi.fn();
      await expect(q.process(fn, { timeout })).rejects.toThrow(
        /processQueue: timeout: expected a number of seconds, 0 or more/,
      );
      await expect(q.process('true', { timeout })).rejects.toThrow(RangeError);
      expect(fn).not.toHaveBeenCalled();
      expect(q.getNext()).toBe(1n);
    },
  );

  test('Queue.open(..., { decoderTimeout: -1 }), runCommand and processFd: RangeError', async () => {
    const dir = tempDir();
    expect(() => Queue.open(dir, { decoderTimeout: -1 })).toThrow(
      /Queue: decoderTimeout: expected a number of seconds, 0 or more \(got -1\)/,
    );
    expect(() =>
      runCommand({ command: 'true', args: [], env: {}, stdin: 'ignore', output: 'inherit', timeout: NaN }),
    ).toThrow(RangeError);
    const file = path.join(dir, 'p');
    fs.writeFileSync(file, makePacket(1n));
    const fd = fs.openSync(file, 'r');
    try {
      await expect(processFd(fd, { command: 'true', timeout: -5 })).rejects.toThrow(/processFd: timeout/);
    } finally {
      fs.closeSync(fd);
    }
  });
});
