/**
 * Timeouts and waits longer than setTimeout holds (2^31-1 ms, about 24.8 days; Node turns a
 * longer delay into 1 ms): a transition's `timeout` (function and command), a batch's `max-wait`
 * and the run's `grace` are all waited out in full, never cut short, and never make Node warn
 * about an overflowing timer. Nonsense values in a JavaScript definition are refused.
 *
 * No timing is asserted: a delay that overflowed would fire within a millisecond, long before
 * the few tens of milliseconds each firing here takes.
 */
import path from 'node:path';
import { Net, NetError, type NetEvent } from 'filespooler';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { MAX_TIMER_MS } from '../../../src/base/timer.js';
import { makeNet, netDir, runFspl, sleep, tokensIn } from '../helpers.js';

/** Just over setTimeout's limit, in seconds. */
const LONG = Math.ceil(MAX_TIMER_MS / 1000) + 10;

let overflows: string[] = [];
const onWarning = (w: Error) => {
  if (w.name === 'TimeoutOverflowWarning') overflows.push(w.message);
};
beforeEach(() => {
  overflows = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
  vi.useRealTimers();
  expect(overflows, "a timer was armed beyond setTimeout's limit").toEqual([]);
});

function jsNet(transition: Record<string, unknown>): { dir: string; net: Net } {
  const dir = netDir();
  const net = Net.define({
    dir,
    places: { a: {}, b: {} },
    transitions: {
      t: {
        in: 'a',
        out: 'b',
        fn: async (ctx) => {
          await sleep(30);
          return `${ctx.key} done`;
        },
        ...transition,
      },
    },
  });
  net.init();
  return { dir, net };
}

describe('long timeouts', () => {
  test(`a JavaScript transition with timeout ${LONG} s is not cut short`, async () => {
    const { dir, net } = jsNet({ timeout: LONG });
    await net.put('a', Buffer.from('x'), { key: 'k' });
    const summary = await net.run({ drain: true });
    expect(summary.failed).toBe(0);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['k done']);
  });

  test(`a command transition with timeout ${LONG} s is not killed when setTimeout's limit has passed`, async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, failed: {} }
transitions:
  t: { in: a, run: "sleep 0.2; cat", out: b, error: failed, timeout: ${LONG} }
`);
    await net.put('a', Buffer.from('x'), { key: 'k' });
    // Only setTimeout is faked: the clock of the rest of the run, and the command, are real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const events: NetEvent[] = [];
    const summary = await net.run({
      drain: true,
      onEvent: (e) => {
        events.push(e);
        // Once the firing has armed its timer (launch is synchronous), let 2^31-1 ms pass.
        if (e.type === 'start') setImmediate(() => vi.advanceTimersByTime(MAX_TIMER_MS));
      },
    });
    expect(events.filter((e) => e.type === 'fail')).toEqual([]);
    expect(summary.fired).toBe(1);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['x']);
    expect(await tokensIn(path.join(dir, 'places/failed'))).toEqual([]);
  });

  test(`a grace of ${LONG} s lets a running firing finish and commit when the run stops`, async () => {
    const { dir, net } = jsNet({});
    await net.put('a', Buffer.from('x'), { key: 'k' });
    const stop = new AbortController();
    const summary = await net.run({
      grace: LONG,
      signal: stop.signal,
      onEvent: (e) => e.type === 'start' && stop.abort(),
    });
    expect(summary.fired).toBe(1);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['k done']);
  });

  test(`a batch with max-wait ${LONG} s waits for its partner (its wake-up timer does not fire at once)`, async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: { place: a, take: 2, max-wait: ${LONG} }, run: cat, out: b }
`);
    await net.put('a', Buffer.from('x'), { key: 'k' });
    const stop = new AbortController();
    const run = net.run({ signal: stop.signal });
    await sleep(200);
    stop.abort();
    const summary = await run;
    expect(summary.fired).toBe(0);
    expect(await tokensIn(path.join(dir, 'places/b'))).toEqual([]);
  });

  test(`net check accepts timeout: ${LONG} and max-wait: ${LONG}`, async () => {
    const { file } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: { place: a, take: 2, max-wait: ${LONG} }, run: cat, out: b, timeout: ${LONG} }
`);
    const r = await runFspl(['net', 'check', file]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/timeout|max-wait/);
  });
});

describe('nonsense durations in a JavaScript definition', () => {
  test.each([
    ['timeout -1', { timeout: -1 }, /transitions\.t\.timeout: timeout must be a number of seconds above 0 \(got -1\)/],
    ['timeout NaN', { timeout: NaN }, /timeout must be a number of seconds above 0 \(got NaN\)/],
    ['timeout 0', { timeout: 0 }, /timeout must be a number of seconds above 0 \(got 0\)/],
    [
      'max-wait "5"',
      { in: { place: 'a', take: 2, 'max-wait': '5' } },
      /transitions\.t\.in\.max-wait: max-wait must be a number of seconds above 0 \(got 5\)/,
    ],
  ])('%s is refused', (_, transition, message) => {
    expect(() => jsNet(transition)).toThrow(NetError);
    expect(() => jsNet(transition)).toThrow(message);
  });

  test('a grace of NaN or -1 is refused before the run starts', async () => {
    const { net } = jsNet({});
    await expect(net.run({ drain: true, grace: NaN })).rejects.toThrow(
      /Net\.run: grace: expected a number of seconds, 0 or more \(got NaN\)/,
    );
    await expect(net.run({ drain: true, grace: -1 })).rejects.toThrow(RangeError);
  });
});
