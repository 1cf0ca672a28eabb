/**
 * Staging (src/net/run/staging.ts): a firing's scratch files, removed once it is done with them,
 * many firings' in one batch; a command firing's runner knows what it made, so that only those
 * names are unlinked, whatever way the firing ended.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import type { TransitionSpec } from '../../../src/net/model/model.js';
import { everyStagedName, StagingSweeper, stagingOf } from '../../../src/net/run/staging.js';
import { tempDir } from '../../helpers.js';
import { makeNet, tokensIn } from '../helpers.js';

const spec = (over: Partial<TransitionSpec>): TransitionSpec =>
  ({
    name: 't',
    inputs: [{ place: 'a', take: 1 }],
    outputs: ['b'],
    outMode: 'all',
    run: { argv: ['cat'] },
    ...over,
  }) as TransitionSpec;

describe('StagingSweeper', () => {
  test('removes the names it is given, those of many firings in one sweep, and says when it is done', async () => {
    const dir = tempDir();
    const t = spec({});
    const made: string[][] = [];
    for (let i = 0; i < 50; i++) {
      const files = stagingOf(path.join(dir, `t-${i}-1`), undefined);
      for (const f of [files.stderr, files.out('b')]) fs.writeFileSync(f, 'x');
      made.push([files.stderr, files.out('b')]);
    }
    fs.writeFileSync(path.join(dir, 'other'), 'kept');
    const sweeper = new StagingSweeper();
    for (const m of made) sweeper.remove(t, m[0]!.replace(/\.stderr$/, ''), undefined, m);
    await sweeper.idle();
    expect(fs.readdirSync(dir)).toEqual(['other']);
    // Names not known: every name a firing of t may have made goes (missing ones are no failure).
    const files = stagingOf(path.join(dir, 'u-1'), undefined);
    fs.writeFileSync(files.stdout, '');
    fs.writeFileSync(files.in('a'), '');
    expect(everyStagedName(t, files)).toContain(files.in('a'));
    sweeper.remove(t, path.join(dir, 'u-1'), undefined);
    await sweeper.idle();
    expect(fs.readdirSync(dir)).toEqual(['other']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a few names wait briefly for more (no idle() needed for them to go); idle() sweeps at once', async () => {
    const dir = tempDir();
    const t = spec({});
    const one = (i: number): string[] => {
      const files = stagingOf(path.join(dir, `t-${i}-1`), undefined);
      fs.writeFileSync(files.stderr, 'x');
      return [files.stderr];
    };
    const sweeper = new StagingSweeper();
    sweeper.remove(t, path.join(dir, 't-0-1'), undefined, one(0));
    // Left for the sweep after the wait, with no one asking: they go on their own.
    await expect.poll(() => fs.readdirSync(dir), { timeout: 2000, interval: 5 }).toEqual([]);
    // With the clock stopped, the wait never ends: idle() must sweep without it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      sweeper.remove(t, path.join(dir, 't-1-1'), undefined, one(1));
      await sweeper.idle();
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a move stages nothing: nothing to remove; idle at once', async () => {
    const sweeper = new StagingSweeper();
    sweeper.remove(spec({ run: undefined }), '/nonexistent/x', undefined);
    await sweeper.idle();
  });
});

describe('command firings leave nothing in staging, whatever way they end', () => {
  test('single and several outputs, an and-merge, a batch, a failure with ' +
    'retries, a start failure; a tail only of a stderr that has bytes', async () => {
    const { dir, net } = makeNet(
      `
places: { a: {}, l: {}, r: {}, b: {}, c: {}, m: {}, x: {}, y: {}, bad: {}, ns: {}, failed: {}, out: {} }
transitions:
  one: { in: a, run: "cat; echo said >&2", out: b }
  two: { in: b, run: 'cat >"$FSPL_OUT_x"; cat "$FSPL_OUT_x" >"$FSPL_OUT_y"', out: [x, y] }
  merge: { in: [l, r], run: 'cat "$FSPL_IN_l" "$FSPL_IN_r"', out: m }
  batch: { in: { place: c, take: 2 }, run: [cat], out: out }
  failing: { in: bad, run: "exit 3", out: out, error: failed, retries: 1 }
  nostart: { in: ns, run: [./no-such-program], out: out, error: failed }
`,
    );
    for (let i = 0; i < 4; i++) {
      await net.put('a', Buffer.from(`a${i}\n`), { key: `a${i}` });
      await net.put('l', Buffer.from(`l${i}\n`), { key: `m${i}` });
      await net.put('r', Buffer.from(`r${i}\n`), { key: `m${i}` });
      await net.put('c', Buffer.from(`c${i}\n`), { key: `c${i}` });
    }
    await net.put('bad', Buffer.from('bad\n'), { key: 'bad' });
    await net.put('ns', Buffer.from('n\n'), { key: 'n' });
    const summary = await net.run({ drain: true, workers: 3 });
    expect(summary.leftovers).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/x'))).map((t) => t.payload)).toEqual([
      'a0\n',
      'a1\n',
      'a2\n',
      'a3\n',
    ]);
    expect((await tokensIn(path.join(dir, 'places/y'))).map((t) => t.payload)).toEqual([
      'a0\n',
      'a1\n',
      'a2\n',
      'a3\n',
    ]);
    expect((await tokensIn(path.join(dir, 'places/m'))).map((t) => t.payload).sort()).toEqual([
      'l0\nr0\n',
      'l1\nr1\n',
      'l2\nr2\n',
      'l3\nr3\n',
    ]);
    const failed = await tokensIn(path.join(dir, 'places/failed'));
    const byKey = new Map(failed.map((t) => [t.key, t]));
    // An empty stderr gives an empty tail; a start failure says why.
    expect(byKey.get('bad')?.env.ERROR_STDERR).toBe('');
    expect(byKey.get('bad')?.env.ERROR_REASON).toBe('exited with status 3');
    expect(byKey.get('n')?.env.ERROR_STDERR).toContain('cannot run');
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  }, 60_000);
});
