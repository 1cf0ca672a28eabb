/**
 * Issue 11 scenarios on real runs: parallel firings that keep order, bounded places and
 * back-pressure, inhibitor arcs, batches. Places are sampled from the runner's own event hook
 * (called synchronously right after each commit), so what is counted is what is on disk then.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net, type NetEvent } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { makeNet, netDir, sleep, tokensIn } from '../helpers.js';

/** Tokens in a place right now: its job files plus any staged .part (what capacity counts). */
function countIn(dir: string): number {
  return fs.readdirSync(path.join(dir, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n) || n.endsWith('.part')).length;
}

const count = (dir: string, p: string) => countIn(path.join(dir, 'places', p));

describe('parallel firings, capacity, inhibit, batches', () => {
  test('8 workers and capacity 2 on every inner place, 2,000 ' +
    'tokens: no place ever holds more than 2, all arrive in order', async () => {
    const dir = netDir();
    const jitter = (i: number) => (i * 7919) % 4; // 0-3 ms, deterministic
    const net = Net.define({
      dir,
      places: { src: {}, p1: { capacity: 2 }, p2: { capacity: 2 }, p3: { capacity: 2 }, sink: {} },
      transitions: {
        t1: {
          in: 'src',
          out: 'p1',
          workers: 8,
          fn: async (ctx) => {
            await sleep(jitter(Number(ctx.inputs[0]!.seq)));
            return ctx.inputs[0]!.payload();
          },
        },
        t2: {
          in: 'p1',
          out: 'p2',
          workers: 8,
          fn: async (ctx) => {
            await sleep(jitter(Number(ctx.inputs[0]!.seq) + 1));
            return ctx.inputs[0]!.payload();
          },
        },
        t3: { in: 'p2', out: 'p3', workers: 8, run: null },
        t4: { in: 'p3', out: 'sink', workers: 8, run: null },
      },
    });
    net.init();
    const N = 2000;
    for (let i = 0; i < N; i++) await net.put('src', Buffer.from(`${i}\n`), { key: `k${i}` });
    let samples = 0;
    let peak = 0;
    let maxRunning = 0;
    let running = 0;
    const onEvent = (e: NetEvent) => {
      if (e.type === 'start') maxRunning = Math.max(maxRunning, ++running);
      if (e.type !== 'commit') return;
      running--;
      for (const p of ['p1', 'p2', 'p3']) {
        const n = countIn(path.join(dir, 'places', p));
        peak = Math.max(peak, n);
        expect(n, `${p} after a commit of ${e.transition}`).toBeLessThanOrEqual(2);
      }
      samples++;
    };
    const summary = await net.run({ drain: true, workers: 8, onEvent });
    expect(summary.leftovers).toEqual([]);
    expect(samples).toBe(4 * N);
    expect(peak).toBe(2);
    expect(maxRunning).toBeGreaterThan(1);
    const out = await tokensIn(path.join(dir, 'places/sink'));
    expect(out.map((t) => t.key)).toEqual(Array.from({ length: N }, (_, i) => `k${i}`));
    expect(out.map((t) => t.payload)).toEqual(Array.from({ length: N }, (_, i) => `${i}\n`));
  }, 240_000);

  test('4 workers on commands sleeping 0-20 ms: outputs strictly ' +
    'in input order; with order: none all arrive, out of order', async () => {
    const N = 48;
    // Every 8th token sleeps much longer, so the ones started with it finish first.
    const delay = (i: number) => (i % 8 === 0 ? 0.15 : ((i * 37) % 21) / 1000);
    for (const order of ['input', 'none'] as const) {
      const { dir, net } = makeNet(
        `
places: { a: {}, b: {} }
transitions:
  t: { in: a, out: b, workers: 4, order: ${order}, run: 'read i d; mkdir running/$FSPL_NET_FIRING; ` +
          `ls running | wc -l >> counts; sleep "$d"; rmdir running/$FSPL_NET_FIRING; echo "$i"' }
`,
      );
      fs.mkdirSync(path.join(dir, 'running'));
      for (let i = 0; i < N; i++) await net.put('a', Buffer.from(`${i} ${delay(i)}\n`), { key: `k${i}` });
      let startsBeforeCommit = 0;
      let committed = false;
      const summary = await net.run({
        drain: true,
        workers: 4,
        onEvent: (e) => {
          if (e.type === 'start' && !committed) startsBeforeCommit++;
          if (e.type === 'commit') committed = true;
        },
      });
      expect(summary.leftovers).toEqual([]);
      expect(startsBeforeCommit).toBeGreaterThanOrEqual(4); // the first decision starts 4 firings at once
      // Never more than 4 commands at once: each counts the running ones as it starts. (A firing
      // whose command has ended holds no worker while its group commits.)
      const counts = fs.readFileSync(path.join(dir, 'counts'), 'utf8').trim().split('\n').map(Number);
      expect(counts.length).toBe(N);
      expect(Math.max(...counts)).toBeLessThanOrEqual(4);
      const out = (await tokensIn(path.join(dir, 'places/b'))).map((t) => Number(t.payload.trim()));
      expect([...out].sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i));
      if (order === 'input') expect(out).toEqual(Array.from({ length: N }, (_, i) => i));
      else expect(out).not.toEqual(Array.from({ length: N }, (_, i) => i));
    }
  }, 120_000);

  test('a failed firing holds back the commits behind it until it is retried', async () => {
    const { dir, net } = makeNet(
      `
places: { a: {}, b: {} }
transitions:
  t: { in: a, out: b, workers: 4, retries: 2, run: ./flaky.sh }
`,
      {
        'flaky.sh': `#!/bin/sh
read i
if [ "$i" = 0 ] && [ ! -e "$(dirname "$0")/failed-once" ]; then touch "$(dirname "$0")/failed-once"; exit 1; fi
echo "$i"
`,
      },
    );
    const N = 12;
    for (let i = 0; i < N; i++) await net.put('a', Buffer.from(`${i}\n`), { key: `k${i}` });
    const events: string[] = [];
    const summary = await net.run({
      drain: true,
      workers: 4,
      onEvent: (e) => (e.type === 'fail' || e.type === 'commit' ? events.push(`${e.type}:${e.key}`) : undefined),
    });
    expect(summary.leftovers).toEqual([]);
    expect(events[0]).toBe('fail:k0');
    expect(events.filter((e) => e.startsWith('commit'))).toEqual(Array.from({ length: N }, (_, i) => `commit:k${i}`));
    const out = (await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload.trim());
    expect(out).toEqual(Array.from({ length: N }, (_, i) => String(i)));
  }, 60_000);

  test('back-pressure: with the last transition stopped, tokens outstanding stay ' +
    'within the capacities and running firings; after release all arrive once', async () => {
    const { dir, net } = makeNet(`
places: { src: {}, a: { capacity: 3 }, b: { capacity: 2 }, out: {} }
transitions:
  t1: { in: src, out: a, workers: 4, run: [cat] }
  t2: { in: a, out: b, workers: 4, run: [cat] }
  t3: { in: b, out: out, workers: 4, run: [cat] }
`);
    const N = 40;
    for (let i = 0; i < N; i++) await net.put('src', Buffer.from(`${i}\n`), { key: `k${i}` });
    const count = (p: string) => countIn(path.join(dir, 'places', p));
    let running = 0;
    let worst = 0;
    const check = (e: NetEvent) => {
      if (e.type === 'start') running++;
      if (e.type === 'commit') running--;
      const outstanding = N - count('src') - count('out');
      worst = Math.max(worst, outstanding);
      expect(count('a')).toBeLessThanOrEqual(3);
      expect(count('b')).toBeLessThanOrEqual(2);
      expect(outstanding).toBeLessThanOrEqual(3 + 2 + running);
    };
    // Phase 1: t3 does not run. The run settles with a and b full and the rest waiting in src.
    const ctl = new AbortController();
    const idle = new Promise<void>((resolve) => {
      void net
        .run({
          workers: 4,
          only: (t) => t.name !== 't3',
          signal: ctl.signal,
          onEvent: (e) => (check(e), e.type === 'idle' && resolve()),
        })
        .then(() => resolve());
    });
    await idle;
    ctl.abort();
    await sleep(50);
    expect(count('a')).toBe(3);
    expect(count('b')).toBe(2);
    expect(count('out')).toBe(0);
    expect(count('src')).toBe(N - 5);
    // Phase 2: everything runs.
    const summary = await net.run({ drain: true, workers: 4, onEvent: check });
    expect(summary.leftovers).toEqual([]);
    expect(worst).toBe(5);
    const out = await tokensIn(path.join(dir, 'places/out'));
    expect(out.map((t) => t.key)).toEqual(Array.from({ length: N }, (_, i) => `k${i}`));
    expect(out.map((t) => t.payload)).toEqual(Array.from({ length: N }, (_, i) => `${i}\n`));
  }, 120_000);

  test('a bounded place whose reader stopped does not hang ' +
    '--drain: the blocked producer gives its token back', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, p: { capacity: 1 }, b: {} }
transitions:
  t1: { in: a, out: p, run: [cat] }
  t2: { in: p, out: b, run: 'exit 3' }
`);
    for (let i = 0; i < 3; i++) await net.put('a', Buffer.from(`${i}`), { key: `k${i}` });
    const s = await net.run({ drain: true, workers: 2 });
    expect(count(dir, 'p')).toBe(1);
    expect(count(dir, 'a') + count(dir, 'p')).toBe(3);
    expect(s.leftovers.length).toBe(3);
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  }, 60_000);

  test('a long run of moves (firings that end in microtasks) still answers its stop signal', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, c: {} }
transitions:
  m1: { in: a, out: b, run: null }
  m2: { in: b, out: c, run: null }
`);
    const N = 3000;
    for (let i = 0; i < N; i++) await net.put('a', Buffer.from('x'), { key: `k${i}` });
    const ctl = new AbortController();
    let commits = 0;
    const run = net.run({
      signal: ctl.signal,
      onEvent: (e) => (e.type === 'commit' && ++commits === 50 ? setTimeout(() => ctl.abort(), 0) : undefined),
    });
    await run;
    const keys = [
      ...(await tokensIn(path.join(dir, 'places/a'))),
      ...(await tokensIn(path.join(dir, 'places/b'))),
      ...(await tokensIn(path.join(dir, 'places/c'))),
    ].map((t) => t.key);
    expect(count(dir, 'c')).toBeLessThan(N); // it stopped before the end
    expect(new Set(keys).size).toBe(N);
    expect(keys).toHaveLength(N);
  }, 120_000);

  test('tryPut says "full" at once and writes nothing; put waits until there is room', async () => {
    const { dir, net } = makeNet(`
places: { a: { capacity: 2 }, b: {} }
transitions:
  t: { in: a, out: b, run: null }
`);
    await net.tryPut('a', Buffer.from('1'));
    await net.tryPut('a', Buffer.from('2'));
    const before = fs.readdirSync(path.join(dir, 'places/a/jobs')).sort();
    expect(await net.tryPut('a', Buffer.from('3'))).toBe('full');
    expect(fs.readdirSync(path.join(dir, 'places/a/jobs')).sort()).toEqual(before);
    let done = false;
    const waiting = net.put('a', Buffer.from('3'), { key: 'third' }).then((r) => ((done = true), r));
    await sleep(300);
    expect(done).toBe(false);
    await net.run({ drain: true });
    const r = await waiting;
    expect(r.key).toBe('third');
    await net.run({ drain: true });
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['1', '2', '3']);
  }, 60_000);

  test('a bounded place written both by the net and by put() from outside never exceeds its capacity', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: { capacity: 2 }, c: {} }
transitions:
  t: { in: a, out: b, workers: 4, run: [cat] }
  u: { in: b, out: c, workers: 1, run: 'sleep 0.01; cat' }
`);
    const N = 30;
    for (let i = 0; i < N; i++) await net.put('a', Buffer.from(`t${i}\n`), { key: `t${i}` });
    let worst = 0;
    const sample = () => (worst = Math.max(worst, countIn(path.join(dir, 'places/b'))));
    const poll = setInterval(sample, 2);
    const ctl = new AbortController();
    const run = net.run({ workers: 4, signal: ctl.signal, onEvent: sample });
    const outside = net.model.places.get('b')!;
    expect(outside.capacity).toBe(2);
    for (let i = 0; i < N; i++) await net.put('b', Buffer.from(`p${i}\n`), { key: `p${i}` });
    while ((await tokensIn(path.join(dir, 'places/c'))).length < 2 * N) await sleep(50);
    ctl.abort();
    await run;
    clearInterval(poll);
    expect(worst).toBeLessThanOrEqual(2);
    const keys = (await tokensIn(path.join(dir, 'places/c'))).map((t) => t.key);
    expect(new Set(keys).size).toBe(2 * N);
  }, 120_000);

  test('inhibitor: a transition inhibited by a non-empty pause place fires only after pause is emptied', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, pause: {} }
transitions:
  t: { in: a, out: b, run: [cat], inhibit: [pause] }
`);
    const p = await net.put('pause', Buffer.from('hold'));
    await net.put('a', Buffer.from('x'), { key: 'x' });
    const ctl = new AbortController();
    let firedWhilePaused = false;
    let emptied = false;
    let idleOnce!: () => void;
    const idle = new Promise<void>((r) => (idleOnce = r));
    const run = net.run({
      workers: 2,
      signal: ctl.signal,
      onEvent: (e) => {
        if (e.type === 'start' && !emptied) firedWhilePaused = true;
        if (e.type === 'idle') idleOnce();
        if (e.type === 'commit') ctl.abort();
      },
    });
    await idle;
    expect((await tokensIn(path.join(dir, 'places/b'))).length).toBe(0);
    emptied = true;
    fs.unlinkSync(path.join(dir, 'places/pause/jobs', p.filename));
    await run;
    expect(firedWhilePaused).toBe(false);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.payload)).toEqual(['x']);
    // With --drain and the pause place full, the token is left over, and says why.
    await net.put('pause', Buffer.from('hold'));
    await net.put('a', Buffer.from('y'), { key: 'y' });
    const s = await net.run({ drain: true });
    expect(s.leftovers.map((l) => l.key)).toEqual(['y']);
  }, 60_000);

  test('batches: 103 tokens with take 10 and max-wait 0.2 give ' +
    '10 batches of 10 and one of 3, in order, each one firing', async () => {
    const { dir, net } = makeNet(
      `
places: { a: {}, b: {} }
transitions:
  t: { in: { place: a, take: 10, max-wait: 0.2 }, out: b, ` +
        `workers: 2, run: 'echo "$FSPL_BATCH_SIZE $FSPL_BATCH_SEQS"; cat' }
`,
    );
    for (let i = 0; i < 103; i++) await net.put('a', Buffer.from(`${i};`), { key: `k${i}` });
    const commits: Array<{ inputs: number; outputs: number }> = [];
    const summary = await net.run({
      drain: true,
      workers: 2,
      onEvent: (e) =>
        e.type === 'commit' ? commits.push({ inputs: e.inputs.length, outputs: e.outputs.length }) : undefined,
    });
    expect(summary.leftovers).toEqual([]);
    expect(commits.map((c) => c.inputs)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 3]);
    expect(commits.every((c) => c.outputs === 1)).toBe(true);
    const out = await tokensIn(path.join(dir, 'places/b'));
    expect(out).toHaveLength(11);
    out.forEach((t, b) => {
      const n = b < 10 ? 10 : 3;
      const idx = Array.from({ length: n }, (_, i) => b * 10 + i);
      expect(t.payload).toBe(`${n} ${idx.map((i) => i + 1).join(' ')}\n${idx.map((i) => `${i};`).join('')}`);
    });
    expect(fs.readdirSync(path.join(dir, 'places/a/jobs'))).toEqual([]);
  }, 60_000);
});
