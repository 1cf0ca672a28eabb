/**
 * The ssh outbox under faults at random points (as net-workloads.test.ts does for a net on one
 * host): a net on two hosts, a and b (this machine, b reached through a real sshd), whose
 * transition on a ships tokens into a place on b, so through a's outbox and the receiver on b.
 * Both sides live on the fault file system. Each run puts tokens, starts `net run --host a
 * --drain`, injects one fault (ENOSPC or EIO, on the Nth write, fsync, rename, create or unlink of
 * either side, at a random rate, or on every call from a point on) at a random moment, clears it
 * a moment later, and then only waits: the run must drain by itself. A third of the runs are cut
 * (a power cut) while the fault holds, and the same command is run again.
 *
 * Counted: tokens lost, doubled, numbers stranded (the place on b must hold every number its
 * outbox gave, once), runs that needed a manual step (a run that exited non-zero, or a file left
 * in the outbox or the place); all must be 0. FSPL_FAULT_RUNS: runs (2 in `npm run test:all`, 120 in
 * `npm run test:faults`); FSPL_FAULT_SEED repeats a run. docs/reliability.md reports the long run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { onPath } from '../harness/proc.js';
import { SSHD_BIN, type Sshd, startSshd } from '../harness/sshd.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { tokens } from '../net/fault-check.js';
import { type FaultyFs, faultsMissing, mountFaulty, spawnWorkload } from './harness.js';
import { callsBetween, deliveryCount, faultedRun, newTally, randomFault, type Tally } from './random-faults.js';

const RUNS = Number(process.env.FSPL_FAULT_RUNS ?? 2);
const SEED = Number(process.env.FSPL_FAULT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;
const PER_RUN = 4;
const seqOf = (file: string) => BigInt(fs.readFileSync(file, 'utf8').trim());

const missing = [
  ...[SSHD_BIN, 'ssh', 'ssh-keygen', 'flock']
    .filter((c) => !onPath(c))
    .map((c) => `${c} (apt-get install openssh-server openssh-client util-linux)`),
  ...faultsMissing(),
];

/** What the place on b and a's side hold after a drain: counted into the tally. */
async function judge(t: Tally, dir: string, keys: number, label: string): Promise<void> {
  const place = path.join(dir, 'places/mid');
  const outbox = path.join(dir, 'net.state/a/outbox/mid');
  const got = await tokens(place);
  // The outbox numbers the place: every number it gave is on b once (a token or a NOP).
  const counted = deliveryCount(got, keys, seqOf(path.join(outbox, 'sendseq')));
  const { lost, doubled } = counted;
  let stranded = counted.stranded;
  const src = path.join(dir, 'places/src');
  stranded += Number(seqOf(path.join(src, 'sendseq')) - seqOf(path.join(src, 'nextseq')));
  const left = [
    ...fs
      .readdirSync(path.join(place, 'jobs'))
      .filter((n) => !/^fspl-.*\.fspl$/.test(n))
      .map((n) => `mid/${n}`),
    ...fs.readdirSync(path.join(outbox, 'jobs')).map((n) => `outbox/${n}`),
    ...fs.readdirSync(path.join(src, 'jobs')).map((n) => `src/${n}`),
  ];
  t.lost += lost.length;
  t.doubled += doubled.length;
  t.stranded += stranded;
  if (left.length > 0) t.manualSteps++;
  expect(lost, `${label}: tokens lost`).toEqual([]);
  expect(doubled, `${label}: tokens doubled`).toEqual([]);
  expect(stranded, `${label}: numbers stranded`).toBe(0);
  expect(left, `${label}: files left`).toEqual([]);
}

describeIfPresent(
  'the ssh outbox under faults at random points',
  missing,
  { what: 'ssh outbox fault workloads', note: 'apt-get install openssh-server fuse3 libfuse3-dev gcc' },
  () => {
    let ffs: FaultyFs;
    let sshd: Sshd;
    let tally: Tally | undefined;
    beforeAll(async () => {
      ffs = await mountFaulty();
      sshd = await startSshd({ aliases: ['a', 'b'] });
    });
    afterAll(async () => {
      await sshd?.stop();
      await ffs?.unmount();
      if (tally) console.log(`faults, ssh outbox (seed ${SEED}): ${JSON.stringify(tally)}`);
    });

    test(`the ssh outbox: ${RUNS} runs with a fault at a random ` +
      `moment on either side, cleared, and the run drains by itself`, async () => {
      const t = (tally = newTally());
      const dir = path.join(ffs.root, 'onet');
      fs.mkdirSync(dir);
      const netFile = path.join(dir, 'net.yaml');
      const ssh = (alias: string) => JSON.stringify([...sshd.argv, alias]);
      fs.writeFileSync(
        netFile,
        `hosts:\n  a: { ssh: ${ssh('a')} }\n  b: { ssh: ${ssh('b')} }\nplaces:\n  src: { host: a }\n` +
          `  mid: { host: b }\ntransitions:\n  ship: { host: a, in: src, out: mid }\n`,
      );
      for (const h of ['a', 'b']) {
        const r = spawnWorkload(['sh', '-c', `exec ${FSPL} net init ${JSON.stringify(netFile)} --host ${h}`]);
        const e = await r.exited;
        expect(e.code, e.stderr).toBe(0);
      }
      const net = Net.load(netFile);
      let total = 0;
      const put = async (n: number) => {
        for (let i = total; i < total + n; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
        total += n;
        t.tokens = total;
      };
      const run = `exec ${FSPL} net run --drain --host a -l error ${JSON.stringify(netFile)}`;
      // Calibrate: the calls of one run without a fault.
      await put(PER_RUN);
      const c0 = await ffs.faultCounters();
      const first = await spawnWorkload(['sh', '-c', run]).exited;
      expect(first.code, first.stderr).toBe(0);
      const calls = callsBetween(c0, await ffs.faultCounters());
      const random = rng(SEED + 17);
      for (let n = 0; n < RUNS; n++) {
        t.runs++;
        await put(PER_RUN);
        await ffs.sync();
        const f = randomFault(random, calls, '/onet');
        const label = `seed ${SEED}, run ${n} (${f.describe})`;
        const r = await faultedRun(ffs, t, random, f, run);
        expect(r.code, `${label}: net run --drain --host a: ${r.stderr}`).toBe(0);
        await judge(t, dir, total, label);
      }
    }, 3_600_000);
  },
);
