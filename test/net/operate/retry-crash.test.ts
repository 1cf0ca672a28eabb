/**
 * Exactly-once under kill -9 of `net retry`: it is killed at random moments while it moves error
 * tokens back, 30 times; after each kill, once what it left is recovered (as the next operator
 * command or `net run` does), every token is either still in the error place or back upstream,
 * never both and never neither, with its payload, and the upstream numbering has no hole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { recoverOperations } from '../../../src/net/operate/operator.js';
import { readHeaderFileSync } from '../../../src/queue/job-headers.js';
import { rng } from '../../helpers.js';
import { makeNet, sleep, spawnFspl, tokensIn } from '../helpers.js';

const BATCH = 60;
const KILLS = 30;

/** The tokens of a place from their headers only (quick): number, key (none for a NOP), variables. */
function headersIn(jobs: string): Array<{ seq: bigint; key?: string; env: Map<string, string> }> {
  return fs
    .readdirSync(jobs)
    .filter((n) => n.endsWith('.fspl'))
    .map((n) => {
      const h = readHeaderFileSync(path.join(jobs, n));
      const env = new Map(
        h.cmd.kind === 'Command'
          ? h.cmd.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()])
          : [],
      );
      return { seq: h.seq, key: h.cmd.kind === 'Command' ? env.get('KEY') : undefined, env };
    })
    .sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
}

test('kill -9 of net retry at random points, 30 times: each token exactly once', async () => {
  const { dir, file, net } = makeNet(`
places: { in: {}, out: {}, failed: {} }
transitions:
  work: { in: in, out: out, error: failed }
`);
  const inJobs = path.join(dir, 'places/in/jobs');
  let total = 0;
  const putBatch = async (): Promise<void> => {
    for (let i = total; i < total + BATCH; i++) {
      await net.put('failed', Buffer.from(`p${i}\n`), {
        key: `k${i}`,
        env: { ERROR_TRANSITION: 'work', ERROR_PLACE: 'in', ERROR_REASON: 'exit 1' },
      });
    }
    total += BATCH;
  };
  await putBatch();
  const seed = Number(process.env.FSPL_CRASH_SEED ?? Date.now() % 100000);
  const random = rng(seed);
  let kills = 0;
  let midway = 0;
  for (let round = 0; kills < KILLS && round < 200; round++) {
    const before = fs.readdirSync(inJobs).length;
    const child = spawnFspl(['net', 'retry', file, '--all', '-l', 'error']);
    let exited = false;
    const done = new Promise<number | null>((resolve) => child.on('exit', (code) => ((exited = true), resolve(code))));
    // Kill once it has begun to move (a file appeared upstream), a random moment later.
    while (!exited && fs.readdirSync(inJobs).length === before) await sleep(2);
    if (!exited) await sleep(random() * 10);
    if (exited) {
      expect(await done, `seed ${seed}`).toBe(0);
      await putBatch(); // it finished first: more to move
      continue;
    }
    child.kill('SIGKILL');
    await done;
    kills++;
    await recoverOperations(net.model);
    const up = headersIn(inJobs);
    const err = headersIn(path.join(dir, 'places/failed/jobs'));
    const keys = [...up, ...err].flatMap((t) => (t.key === undefined ? [] : [t.key]));
    expect(keys.length, `seed ${seed}, kill ${kills}: tokens in both or in neither`).toBe(total);
    expect(new Set(keys).size, `seed ${seed}, kill ${kills}: a token in both places`).toBe(total);
    for (const t of up)
      if (t.key !== undefined)
        expect([t.env.get('RETRIED'), t.env.get('ERROR_PLACE')], `seed ${seed}`).toEqual(['1', undefined]);
    if (err.length > 0 && up.some((t) => t.key !== undefined)) midway++;
    // Upstream numbers, NOP fillers included, are 1..N: a sequence reader never waits on a hole.
    expect(
      up.map((t) => t.seq),
      `seed ${seed}`,
    ).toEqual(Array.from({ length: up.length }, (_, i) => BigInt(i + 1)));
    expect(
      fs.readdirSync(inJobs).filter((n) => n.endsWith('.part')),
      `seed ${seed}`,
    ).toEqual([]);
  }
  expect(kills).toBe(KILLS);
  process.stderr.write(
    `retry-crash: seed ${seed}, ${kills} kills, ${midway} with tokens on both sides, ${total} tokens\n`,
  );
  // What is left goes back, and the net delivers every key exactly once.
  await net.retry({ all: true });
  const summary = await net.run({ drain: true });
  expect(summary.leftovers).toEqual([]);
  const out = (await tokensIn(path.join(dir, 'places/out'))).filter((t) => t.kind === 'Command');
  expect(out.map((t) => t.key).sort()).toEqual(Array.from({ length: total }, (_, i) => `k${i}`).sort());
  for (const t of out) expect(t.payload).toBe(`p${t.key.slice(1)}\n`);
}, 120_000);
