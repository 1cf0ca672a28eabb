/**
 * Exactly-once under kill -9: a net with an and-branch and an and-merge, its runner killed at
 * random moments and restarted until drained. Every key must reach the sink exactly once, with
 * the right payload, and no place may hold a partial or duplicate token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { rng } from '../../helpers.js';
import { makeNet, sleep, spawnFspl, tokensIn } from '../helpers.js';

const TOKENS = 200;
const KILLS = 30;

function netYaml(workers: number): string {
  return `
places: { src: {}, l: {}, r: {}, l2: {}, r2: {}, sink: {} }
transitions:
  split: { in: src, run: 'tee "$FSPL_OUT_l" > "$FSPL_OUT_r"', out: [l, r], workers: ${workers} }
  tl: { in: l, run: "sleep 0.0$(( RANDOM % 10 ))$(( RANDOM % 10 )); sed s/^/L:/", out: l2, workers: ${workers} }
  tr: { in: r, run: "sleep 0.0$(( RANDOM % 10 ))$(( RANDOM % 10 )); sed s/^/R:/", out: r2, workers: ${workers} }
  join: { in: [l2, r2], run: 'cat "$FSPL_IN_l2" "$FSPL_IN_r2"', out: sink, workers: ${workers} }
`;
}

async function crashRun(workers: number): Promise<void> {
  const { dir, file, net } = makeNet(netYaml(workers));
  // Tokens are put in batches of TOKENS: if the net drains before it has been killed KILLS times
  // (a quick machine, or lucky kill times), another batch goes in, so the test always gets its
  // kills, each while work is under way, whatever the speed of the machine.
  let total = 0;
  const putBatch = async (): Promise<void> => {
    for (let i = total; i < total + TOKENS; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
    total += TOKENS;
  };
  await putBatch();
  const seed = Number(process.env.FSPL_CRASH_SEED ?? Date.now() % 100000);
  const random = rng(seed);
  let kills = 0;
  let clean = 0;
  for (let round = 0; round < 200; round++) {
    const child = spawnFspl(['net', 'run', '--drain', '--workers', String(Math.max(2, workers)), '-l', 'error', file]);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    if (kills < KILLS) {
      // Kill times of 100-600 ms: the commands sleep 0-99 ms, so each kill lands mid-work.
      const delay = 100 + random() * 500;
      const code = await Promise.race([exited, sleep(delay).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        child.kill('SIGKILL');
        await exited;
        kills++;
        continue;
      }
      expect(code, `seed ${seed}: ${stderr}`).toBe(0);
      clean++;
      await putBatch();
      continue;
    } else {
      const code = await exited;
      expect(code, `seed ${seed}: ${stderr}`).toBe(0);
      clean++;
    }
    if (
      kills >= KILLS &&
      (await tokensIn(path.join(dir, 'places/sink'))).filter((t) => t.kind === 'Command').length >= total
    )
      break;
  }
  const sink = await tokensIn(path.join(dir, 'places/sink'));
  // A number that a killed commit had taken is filled with a NOP by recovery: the rest are tokens.
  const tokens = sink.filter((t) => t.kind === 'Command');
  const keys = tokens.map((t) => t.key);
  expect(new Set(keys).size, `seed ${seed}: duplicate keys`).toBe(keys.length);
  expect(keys.sort(), `seed ${seed}`).toEqual(Array.from({ length: total }, (_, i) => `k${i}`).sort());
  for (const t of tokens) {
    const i = t.key.slice(1);
    expect(t.payload, `seed ${seed}`).toBe(`L:p${i}\nR:p${i}\n`);
  }
  // Sequence numbers in the sink, NOP fillers included, are 1..N with no gap and no duplicate
  // (tokensIn sorts by number).
  expect(
    sink.map((t) => t.seq),
    `seed ${seed}: the sink's numbers`,
  ).toEqual(Array.from({ length: sink.length }, (_, i) => BigInt(i + 1)));
  for (const p of ['src', 'l', 'r', 'l2', 'r2']) {
    // Drained, the inner places hold nothing at all: every token moved on, and NOP fillers are
    // consumed in their turn like tokens.
    expect(fs.readdirSync(path.join(dir, 'places', p, 'jobs')), `seed ${seed}: ${p}`).toEqual([]);
  }
  const parts = fs.readdirSync(path.join(dir, 'places/sink/jobs')).filter((n) => !/^fspl-.*\.fspl$/.test(n));
  expect(parts).toEqual([]);
  console.log(
    `kill -9 test (workers ${workers}, seed ${seed}): ${kills} kills, ${clean} clean exits, ` +
      `${tokens.length} tokens and ${sink.length - tokens.length} NOP fillers in the sink`,
  );
  expect(kills).toBeGreaterThanOrEqual(KILLS);
}

describe('exactly once under kill -9', () => {
  test(
    `${KILLS} kills of net run over ${TOKENS} tokens (and-branch, and-merge): every key reaches the sink once`,
    () => crashRun(1),
    600_000,
  );
  test(`the same with workers: 4 on every transition`, () => crashRun(4), 600_000);
});
