/**
 * Nets under faults at random points: each run starts `net run --drain` on the fault file system
 * (harness.ts), injects one fault (ENOSPC or EIO, on the Nth write, fsync, rename, create or
 * unlink, at a random rate, or on every call from a point on) at a random moment, clears it a
 * moment later, and then only waits: the run must get through by itself and drain. A third of
 * the runs are cut (a power cut) while the fault holds; then the same command is run again, as
 * systemd would restart it.
 *
 * Counted, per workload: tokens lost, tokens doubled, numbers stranded (a number a place's
 * sendseq handed out that is neither a token, a NOP, nor consumed), runs that needed a manual
 * step (a run that exited non-zero, or a file left behind); all must be 0. FSPL_FAULT_RUNS sets the
 * runs per workload (3 in `npm run test:all`, 120 in `npm run test:faults`); FSPL_FAULT_SEED repeats a
 * run. docs/reliability.md reports the long run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net, readPacket } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { type FaultyFs, faultsMissing, mountFaulty, spawnWorkload } from './harness.js';
import { callsBetween, deliveryCount, faultedRun, newTally, randomFault, type Tally } from './random-faults.js';

const RUNS = Number(process.env.FSPL_FAULT_RUNS ?? 3);
const SEED = Number(process.env.FSPL_FAULT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;

/** Every packet of a place: its number and key (undefined for a NOP). */
async function packets(dir: string): Promise<Array<{ seq: bigint; key?: string }>> {
  const out: Array<{ seq: bigint; key?: string }> = [];
  for (const name of fs.readdirSync(path.join(dir, 'jobs'))) {
    if (!/^fspl-.*\.fspl$/.test(name)) continue;
    const p = await readPacket({ path: path.join(dir, 'jobs', name) });
    p.payload.destroy();
    const key = p.env.find(([k]) => Buffer.from(k).toString() === 'KEY');
    out.push({ seq: p.seq, key: p.kind === 'NOP' ? undefined : Buffer.from(key![1]).toString() });
  }
  return out;
}

const seqOf = (file: string) => BigInt(fs.readFileSync(file, 'utf8').trim());

/** What a net's places hold after a drain, against the keys put: counted into the tally. */
async function judge(
  t: Tally,
  placesDir: string,
  inner: string[],
  sink: string,
  keys: number,
  label: string,
): Promise<void> {
  const got = await packets(path.join(placesDir, sink));
  const counted = deliveryCount(got, keys, seqOf(path.join(placesDir, sink, 'sendseq')));
  const { lost, doubled } = counted;
  let stranded = counted.stranded;
  // An inner place read in sequence order: its reader's nextseq has reached its writers' sendseq
  // (a place read in arrival order, an and-merge's inputs, keeps no nextseq: a gap there strands
  // nothing, and what is left shows in `left`).
  for (const p of inner) {
    const next = seqOf(path.join(placesDir, p, 'nextseq'));
    if (next > 1n) stranded += Number(seqOf(path.join(placesDir, p, 'sendseq')) - next);
  }
  const left = [...inner, sink].flatMap((p) =>
    fs
      .readdirSync(path.join(placesDir, p, 'jobs'))
      .filter((n) => !/^fspl-.*\.fspl$/.test(n) || inner.includes(p))
      .map((n) => `${p}/${n}`),
  );
  t.lost += lost.length;
  t.doubled += doubled.length;
  t.stranded += stranded;
  if (left.length > 0) t.manualSteps++;
  expect(lost, `${label}: tokens lost`).toEqual([]);
  expect(doubled, `${label}: tokens doubled`).toEqual([]);
  expect(stranded, `${label}: numbers stranded`).toBe(0);
  expect(left, `${label}: files left in the places`).toEqual([]);
}

describeIfPresent(
  'nets under faults at random points',
  faultsMissing(),
  { what: 'fault-injection tests', note: 'apt-get install fuse3 libfuse3-dev gcc' },
  () => {
    let ffs: FaultyFs;
    const report: Record<string, Tally> = {};
    beforeAll(async () => {
      ffs = await mountFaulty();
    });
    afterAll(async () => {
      await ffs?.unmount();
      for (const [name, t] of Object.entries(report))
        console.log(`faults, ${name} (seed ${SEED}): ${JSON.stringify(t)}`);
    });

    test(`a net (chain, and-branch, and-merge): ${RUNS} runs with a ` +
      `fault at a random moment, cleared, and the run drains by itself`, async () => {
      const t = (report.net = newTally());
      const inside = path.join(ffs.root, 'net');
      fs.mkdirSync(inside);
      const netFile = path.join(inside, 'net.yaml');
      // Retries: a command whose output write met an injected fault fails (the disk is not really
      // full, so nothing tells it from the command's own failure); its retries get it through.
      fs.writeFileSync(
        netFile,
        `
places: { src: {}, a: {}, l: {}, r: {}, l2: {}, r2: {}, sink: {} }
transitions:
  first: { in: src, run: 'sed s/^/A:/', out: a, retries: 8 }
  split: { in: a, run: 'tee "$FSPL_OUT_l" > "$FSPL_OUT_r"', out: [l, r], workers: 2, retries: 8 }
  tl: { in: l, run: 'sed s/^/L:/', out: l2, retries: 8 }
  tr: { in: r, run: 'sed s/^/R:/', out: r2, retries: 8 }
  join: { in: [l2, r2], run: 'cat "$FSPL_IN_l2" "$FSPL_IN_r2"', out: sink, retries: 8 }
`,
      );
      const net = Net.load(netFile);
      net.init();
      let total = 0;
      const put = async (n: number) => {
        for (let i = total; i < total + n; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
        total += n;
        t.tokens = total;
      };
      const run = `exec ${FSPL} net run --drain -l error ${netFile}`;
      const places = path.join(inside, 'places');
      const inner = ['src', 'a', 'l', 'r', 'l2', 'r2'];
      // Calibrate: the calls of one run of 6 tokens without a fault.
      await put(6);
      const c0 = await ffs.faultCounters();
      const first = await spawnWorkload(['sh', '-c', run]).exited;
      expect(first.code, first.stderr).toBe(0);
      const calls = callsBetween(c0, await ffs.faultCounters());
      const random = rng(SEED + 11);
      for (let n = 0; n < RUNS; n++) {
        t.runs++;
        await put(6);
        await ffs.sync();
        const f = randomFault(random, calls, '/net');
        const label = `seed ${SEED}, run ${n} (${f.describe})`;
        const r = await faultedRun(ffs, t, random, f, run);
        expect(r.code, `${label}: net run --drain: ${r.stderr}`).toBe(0);
        await judge(t, places, inner, 'sink', total, label);
      }
    }, 1_800_000);
  },
);
