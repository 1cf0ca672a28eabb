/**
 * `fspl net run` scenarios (the spec of issue 10): chains, merges by key, branches, failures,
 * big outputs, timeouts and drain. Each runs a real net with real commands.
 */

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { NetEvent } from 'filespooler';
import { describe, expect, test } from 'vitest';
import { makeHeader, writePacketSync } from '../../../src/packet/prepare.js';
import { SeqFile } from '../../../src/sys/seqfile.js';
import { holdElsewhere } from '../../helpers.js';
import { fnNet, makeNet, runFspl, strayFiles, tokensIn } from '../helpers.js';

describe('net run', () => {
  test('a chain of 3 transitions moves 1,000 tokens to the ' +
    'sink exactly once, in order, leaving no stray files', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, c: {}, d: {} }
transitions:
  t1: { in: a, run: [cat], out: b }
  t2: { in: b, run: "tr a-z A-Z", out: c }
  t3: { in: c, run: null, out: d }
`);
    for (let i = 0; i < 1000; i++) await net.put('a', Buffer.from(`token ${i}\n`), { key: `k${i}` });
    const summary = await net.run({ drain: true, workers: 2 });
    expect(summary.leftovers).toEqual([]);
    expect(summary.fired).toBe(3000);
    const out = await tokensIn(path.join(dir, 'places/d'));
    expect(out.map((t) => t.key)).toEqual(Array.from({ length: 1000 }, (_, i) => `k${i}`));
    expect(out.map((t) => t.payload)).toEqual(Array.from({ length: 1000 }, (_, i) => `TOKEN ${i}\n`));
    expect(out.map((t) => t.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)));
    for (const p of ['a', 'b', 'c']) expect(fs.readdirSync(path.join(dir, 'places', p, 'jobs'))).toEqual([]);
    expect(strayFiles(dir)).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  }, 300_000);

  test('an index window far smaller than the place (264 of 800 waiting tokens, some ' +
    'from other writers named without their number): all arrive once, in order', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, c: {} }
transitions:
  t1: { in: a, run: null, out: b, workers: 2 }
  t2: { in: b, run: cat, out: c, workers: 2 }
`);
    const foreign = (i: number) => {
      // As `fspl prepare -s places/a/sendseq | fspl queue-write` would: the next number, a UUID name.
      SeqFile.with(path.join(dir, 'places/a/sendseq'), {}, (sf) => {
        const seq = sf.read();
        const fd = fs.openSync(path.join(dir, `places/a/jobs/fspl-${randomUUID()}.fspl`), 'w');
        writePacketSync(
          fd,
          makeHeader({ seq, cmd: { kind: 'Command', params: [], env: [[Buffer.from('KEY'), Buffer.from(`k${i}`)]] } }),
        );
        fs.writeSync(fd, `token ${i}\n`);
        fs.closeSync(fd);
        sf.write(seq + 1n);
      });
    };
    for (let i = 0; i < 800; i++) {
      if (i % 8 === 3) foreign(i);
      else await net.put('a', Buffer.from(`token ${i}\n`), { key: `k${i}` });
    }
    // The window is at least 4 times what the readers may look at (2 workers + 64): 264.
    const summary = await net.run({ drain: true, workers: 2, indexWindow: 16 });
    expect(summary.leftovers).toEqual([]);
    const out = await tokensIn(path.join(dir, 'places/c'));
    expect(out.map((t) => t.key)).toEqual(Array.from({ length: 800 }, (_, i) => `k${i}`));
    expect(out.map((t) => t.payload)).toEqual(Array.from({ length: 800 }, (_, i) => `token ${i}\n`));
    for (const p of ['a', 'b']) expect(fs.readdirSync(path.join(dir, 'places', p, 'jobs'))).toEqual([]);
  }, 120_000);

  test('an and-merge pairs A(k) with B(k) for 1,000 keys arriving out of order; ' +
    'a token with no partner stays, is reported, and blocks no other key', async () => {
    const { dir, net } = makeNet(`
places: { inA: {}, inB: {}, outA: {}, outB: {}, merged: {} }
transitions:
  ta: { in: inA, run: [cat], out: outA }
  tb: { in: inB, run: "sleep 0.0$(( RANDOM % 20 )); cat", out: outB, workers: 4, order: none }
  mux: { in: [outA, outB], run: 'cat "$FSPL_IN_outA" "$FSPL_IN_outB"', out: merged }
`);
    await net.put('inA', Buffer.from('A(lonely)'), { key: 'lonely' });
    for (let i = 0; i < 1000; i++) {
      await net.put('inA', Buffer.from(`A(${i})`), { key: `${i}` });
      await net.put('inB', Buffer.from(`B(${i})`), { key: `${i}` });
    }
    const commitsOfB: number[] = [];
    const summary = await net.run({
      drain: true,
      workers: 6,
      onEvent: (e: NetEvent) => {
        if (e.type === 'commit' && e.transition === 'tb') commitsOfB.push(Number(e.key));
      },
    });
    const merged = await tokensIn(path.join(dir, 'places/merged'));
    expect(merged).toHaveLength(1000);
    for (const t of merged) expect(t.payload).toBe(`A(${t.key})B(${t.key})`);
    expect(new Set(merged.map((t) => t.key)).size).toBe(1000);
    // tb really did finish out of order.
    expect(commitsOfB).not.toEqual([...commitsOfB].sort((x, y) => x - y));
    // The lonely token waits in outA, reported with its reason.
    expect(summary.leftovers).toHaveLength(1);
    expect(summary.leftovers[0]).toMatchObject({ place: 'outA', key: 'lonely' });
    expect(summary.leftovers[0]!.reason).toMatch(/no partner.*outB/);
    const status = await net.status();
    expect(status.state).toBe('stuck');
    expect(status.transitions.find((t) => t.name === 'mux')!.waitingMerges).toBe(1);
  }, 300_000);

  test('xor-branch: writing 0 or 2 of the one-of files fails the ' +
    'firing, writing 1 commits it; any-of accepts any subset', async () => {
    const { dir, net } = makeNet(`
places: { in: {}, left: {}, right: {}, failed: {}, in2: {}, x: {}, y: {}, z: {} }
transitions:
  pick:
    in: in
    run: |
      case "$(cat)" in
        none) ;;
        both) echo l > "$FSPL_OUT_left"; echo r > "$FSPL_OUT_right" ;;
        left) echo l > "$FSPL_OUT_left" ;;
        right) echo r > "$FSPL_OUT_right" ;;
      esac
    out: { one-of: [left, right] }
    error: failed
  some:
    in: in2
    run: 'for p in $(cat); do echo "$p" > "$(printenv FSPL_OUT_$p)"; done'
    out: { any-of: [x, y, z] }
`);
    for (const k of ['none', 'both', 'left', 'right']) await net.put('in', Buffer.from(k), { key: k });
    for (const k of ['x', 'x z', '', 'x y z']) await net.put('in2', Buffer.from(k), { key: k || 'empty' });
    const summary = await net.run({ drain: true });
    expect(summary.leftovers).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/left'))).map((t) => [t.key, t.payload])).toEqual([['left', 'l\n']]);
    expect((await tokensIn(path.join(dir, 'places/right'))).map((t) => [t.key, t.payload])).toEqual([['right', 'r\n']]);
    const failed = await tokensIn(path.join(dir, 'places/failed'));
    expect(failed.map((t) => t.key)).toEqual(['none', 'both']);
    expect(failed[0]!.env.ERROR_REASON).toMatch(/wrote none of its one-of outputs/);
    expect(failed[1]!.env.ERROR_REASON).toMatch(/wrote 2 of its one-of outputs/);
    expect(failed[1]!.payload).toBe('both'); // the input token, unchanged
    expect((await tokensIn(path.join(dir, 'places/x'))).map((t) => t.key)).toEqual(['x', 'x z', 'x y z']);
    expect((await tokensIn(path.join(dir, 'places/y'))).map((t) => t.key)).toEqual(['x y z']);
    expect((await tokensIn(path.join(dir, 'places/z'))).map((t) => t.key)).toEqual(['x z', 'x y z']);
  }, 120_000);

  test('an and-branch that leaves one of its files unwritten fails', async () => {
    const { dir, net } = makeNet(`
places: { in: {}, a: {}, b: {}, failed: {} }
transitions:
  split: { in: in, run: 'echo a > "$FSPL_OUT_a"', out: [a, b], error: failed }
`);
    await net.put('in', Buffer.from('x'), { key: 'k' });
    await net.run({ drain: true });
    expect(await tokensIn(path.join(dir, 'places/a'))).toEqual([]);
    const failed = await tokensIn(path.join(dir, 'places/failed'));
    expect(failed[0]!.env.ERROR_REASON).toBe('wrote no output for b');
  });

  test('failure isolation: token 3 of 10 fails, is retried, goes to ' +
    'the error place with its status and stderr tail; 4..10 go on', async () => {
    const { dir, net } = makeNet(
      `
places: { in: {}, out: {}, failed: {} }
transitions:
  work: { in: in, run: [./work.sh], out: out, error: failed, retries: 2 }
`,
      {
        'work.sh': `#!/bin/sh
echo "attempt for $FSPL_SET_KEY" >> attempts.log
if [ "$FSPL_SET_KEY" = k3 ]; then
  i=0; while [ $i -lt 400 ]; do echo "noise line $i of a long complaint"; i=$((i+1)); done >&2
  echo "the last words of k3" >&2
  exit 7
fi
cat
`,
      },
    );
    for (let i = 1; i <= 10; i++) await net.put('in', Buffer.from(`p${i}`), { key: `k${i}` });
    const events: NetEvent[] = [];
    const summary = await net.run({ drain: true, onEvent: (e) => events.push(e) });
    expect(summary.leftovers).toEqual([]);
    expect((await tokensIn(path.join(dir, 'places/out'))).map((t) => t.key)).toEqual([
      'k1',
      'k2',
      'k4',
      'k5',
      'k6',
      'k7',
      'k8',
      'k9',
      'k10',
    ]);
    const [err, ...more] = await tokensIn(path.join(dir, 'places/failed'));
    expect(more).toEqual([]);
    expect(err!.key).toBe('k3');
    expect(err!.payload).toBe('p3');
    expect(err!.env.ERROR_STATUS).toBe('7');
    expect(err!.env.ERROR_TRANSITION).toBe('work');
    expect(err!.env.ERROR_STDERR.endsWith('the last words of k3\n')).toBe(true);
    expect(err!.env.ERROR_STDERR.length).toBeLessThanOrEqual(2048);
    const log = fs.readFileSync(err!.env.ERROR_LOG!, 'utf8');
    expect(log).toContain('noise line 0 of a long complaint');
    expect(log).toContain('the last words of k3');
    const attempts = fs
      .readFileSync(path.join(dir, 'attempts.log'), 'utf8')
      .split('\n')
      .filter((l) => l === 'attempt for k3');
    expect(attempts).toHaveLength(3);
    expect(events.filter((e) => e.type === 'fail').map((e) => (e as { willRetry: boolean }).willRetry)).toEqual([
      true,
      true,
      false,
    ]);
  }, 60_000);

  test('without an error place a failing transition stops, ' +
    'its token stays, and the other transitions keep going', async () => {
    const { dir, file, net } = makeNet(`
places: { in: {}, out: {}, side: {}, sideout: {} }
transitions:
  bad: { in: in, run: "exit 1", out: out }
  good: { in: side, run: [cat], out: sideout }
`);
    for (let i = 0; i < 3; i++) await net.put('in', Buffer.from('x'), { key: `bad${i}` });
    for (let i = 0; i < 5; i++) await net.put('side', Buffer.from('y'), { key: `good${i}` });
    const r = await runFspl(['net', 'run', '--drain', file]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/bad stopped/);
    expect(r.stderr).toMatch(/3 tokens can never fire/);
    expect(r.stderr).toMatch(/in #1 key bad0: held by bad, stopped after a failure/);
    expect(await tokensIn(path.join(dir, 'places/sideout'))).toHaveLength(5);
    expect(await tokensIn(path.join(dir, 'places/in'))).toHaveLength(3);
  }, 60_000);

  test('10 MB on stdout and 10 MB on stderr never block; a command ' +
    'reading 10 bytes of a 1 MB payload is judged by its status', async () => {
    const { dir, net } = makeNet(`
places: { in: {}, out: {}, in2: {}, out2: {} }
transitions:
  loud: { in: in, run: "head -c 10485760 /dev/zero; head -c 10485760 /dev/zero >&2", out: out }
  sip: { in: in2, run: "head -c 10", out: out2 }
`);
    await net.put('in', Buffer.from('x'), { key: 'loud' });
    await net.put('in2', Buffer.alloc(1 << 20, 0x61), { key: 'sip' });
    const summary = await net.run({ drain: true });
    expect(summary.leftovers).toEqual([]);
    const [loud] = await tokensIn(path.join(dir, 'places/out'));
    expect(loud!.payload.length).toBe(10485760);
    const [sip] = await tokensIn(path.join(dir, 'places/out2'));
    expect(sip!.payload).toBe('aaaaaaaaaa');
  }, 60_000);

  test("a transition's timeout kills its whole process group", async () => {
    const { dir, net } = makeNet(
      `
places: { in: {}, out: {}, failed: {} }
transitions:
  slow: { in: in, run: [./slow.sh], out: out, error: failed, timeout: 1 }
`,
      { 'slow.sh': '#!/bin/sh\nsleep 60 &\necho $! > child.pid\nsleep 60\n' },
    );
    await net.put('in', Buffer.from('x'), { key: 'k' });
    const summary = await net.run({ drain: true });
    expect(summary.leftovers).toEqual([]);
    const [err] = await tokensIn(path.join(dir, 'places/failed'));
    expect(err!.env.ERROR_REASON).toBe('timed out after 1 s');
    const pid = Number(fs.readFileSync(path.join(dir, 'child.pid'), 'utf8'));
    let alive = true;
    for (let i = 0; i < 50 && alive; i++) {
      try {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      } catch {
        alive = false;
      }
    }
    expect(alive).toBe(false);
  }, 30_000);

  test('--drain exits 0 only once nothing runs and nothing ' +
    'can fire (100 runs with random delays never exit early)', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {}, c: {} }
transitions:
  t1: { in: a, run: "sleep 0.0$(( RANDOM % 3 ))$(( RANDOM % 10 )); cat", out: b, workers: 2 }
  t2: { in: b, run: "sleep 0.0$(( RANDOM % 3 ))$(( RANDOM % 10 )); cat", out: c }
`);
    let total = 0;
    for (let round = 0; round < 100; round++) {
      const n = 1 + (round % 3);
      for (let i = 0; i < n; i++) await net.put('a', Buffer.from(`${round}.${i}`), { key: `${round}.${i}` });
      total += n;
      const summary = await net.run({ drain: true, workers: 2 });
      expect(summary.leftovers).toEqual([]);
      expect(fs.readdirSync(path.join(dir, 'places/c/jobs'))).toHaveLength(total);
      expect(fs.readdirSync(path.join(dir, 'places/a/jobs'))).toHaveLength(0);
      expect(fs.readdirSync(path.join(dir, 'places/b/jobs'))).toHaveLength(0);
    }
  }, 300_000);

  test('two runs of one net exclude each other with a clear error', async () => {
    const { file, net } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: a, run: [cat], out: b }
`);
    const controller = new AbortController();
    const running = net.run({ signal: controller.signal });
    await new Promise((r) => setTimeout(r, 300));
    const r = await runFspl(['net', 'run', '--drain', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^Error: The net .* is already running/);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    controller.abort();
    await running;
  }, 30_000);

  test('a run.lock held a moment longer, as a command a killed runner was starting holds it, is waited out', async () => {
    const { dir, file, net } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: a, run: [cat], out: b }
`);
    await net.put('a', Buffer.from('x\n'), { key: 'k' });
    fs.mkdirSync(net.model.stateDir, { recursive: true });
    // Holds a copy of the lock's open file, as a child between fork and exec does, for 0.6 s.
    await holdElsewhere(path.join(net.model.stateDir, 'run.lock'), 0.6);
    const r = await runFspl(['net', 'run', '--drain', file]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readdirSync(path.join(dir, 'places/b/jobs'))).toHaveLength(1);
  }, 30_000);

  test('a JavaScript transition: an async function instead of a command', async () => {
    const { dir, net } = makeNet(`
places: { a: {}, b: {} }
transitions:
  t: { in: a, run: null, out: b }
`);
    const js = fnNet(dir, async (ctx) => {
      let text = '';
      for await (const c of ctx.inputs[0]!.payload()) text += c;
      return `${ctx.key}:${text.toUpperCase()}`;
    });
    await net.put('a', Buffer.from('hello'), { key: 'k1', params: ['p'] });
    await js.run({ drain: true });
    const [t] = await tokensIn(path.join(dir, 'places/b'));
    expect(t!.payload).toBe('k1:HELLO');
  });
});

describe('net run: stopping', () => {
  test('SIGTERM lets a short firing finish and commit, abandons a long one after --grace, and exits 0', async () => {
    const { dir, file, net } = makeNet(`
places: { a: {}, b: {}, c: {}, d: {} }
transitions:
  quick: { in: a, run: "sleep 1; cat", out: b }
  slow: { in: c, run: "sleep 60; cat", out: d }
`);
    await net.put('a', Buffer.from('q'), { key: 'q' });
    await net.put('c', Buffer.from('s'), { key: 's' });
    const { spawnFspl } = await import('../helpers.js');
    const child = spawnFspl(['net', 'run', '--grace', '2', file]);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    // Wait until both firings run.
    const staging = path.join(dir, 'net.state/staging');
    // A firing's files are named by it (transition-id-attempt.what): count the firings.
    const running = () =>
      fs.existsSync(staging) ? new Set(fs.readdirSync(staging).map((n) => n.split('.')[0])).size : 0;
    for (let i = 0; i < 200 && running() < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(running()).toBe(2);
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code, stderr).toBe(0);
    expect((await tokensIn(path.join(dir, 'places/b'))).map((t) => t.key)).toEqual(['q']);
    expect((await tokensIn(path.join(dir, 'places/c'))).map((t) => t.key)).toEqual(['s']);
    expect(await tokensIn(path.join(dir, 'places/d'))).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'net.state/staging'))).toEqual([]);
  }, 30_000);
});
