/**
 * Faults at random points: each workload runs on the fault file system (harness.ts) with one
 * fault injected at a random point (ENOSPC or EIO, on the Nth write, fsync, rename, create or
 * unlink, or at a random rate, or on every call from a point on), is cut (a power cut) half of
 * the time, and then the fault is cleared and the work finished as a user (or cron) would: by
 * running the same commands again, nothing else.
 *
 * Counted, per workload: acknowledged writes lost, jobs doubled, numbers stranded, runs that
 * needed a manual step; all must be 0. FSPL_FAULT_RUNS sets the runs per workload (3 in `npm
 * test`, 120 in `npm run test:faults`); FSPL_FAULT_SEED repeats a run. docs/reliability.md reports
 * the long run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeHeader, Queue } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import {
  FAULT_OPS,
  type FaultCounters,
  type FaultOp,
  type FaultRule,
  type FaultyFs,
  faultsMissing,
  mountFaulty,
} from './harness.js';

const RUNS = Number(process.env.FSPL_FAULT_RUNS ?? 3);
const SEED = Number(process.env.FSPL_FAULT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;

interface Tally {
  runs: number;
  /** queue-write: writes acknowledged; queue-process: jobs in the queues. */
  work: number;
  faultsInjected: number;
  failedCommands: number;
  cuts: number;
  ackLost: number;
  doubled: number;
  stranded: number;
  manualSteps: number;
  /** A job run again because its run failed before its record (its note) was written: at-least-once, allowed. */
  reRunUnrecorded: number;
}
const newTally = (): Tally => ({
  runs: 0,
  work: 0,
  faultsInjected: 0,
  failedCommands: 0,
  cuts: 0,
  ackLost: 0,
  doubled: 0,
  stranded: 0,
  manualSteps: 0,
  reRunUnrecorded: 0,
});

function lines(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function sh(script: string): { code: number; stderr: string } {
  const r = spawnSync('sh', ['-c', script], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, stderr: r.stderr };
}

/** The calls of each kind between two counts. */
const callsBetween = (a: FaultCounters, b: FaultCounters) =>
  Object.fromEntries(FAULT_OPS.map((op) => [op, b.calls[op] - a.calls[op]])) as Record<FaultOp, number>;

/**
 * A fault at a random point of a workload that makes `calls` calls of each kind: the Nth call of
 * one kind (most often), each call of a kind at a random rate, or every call from the Nth on.
 */
function randomFault(
  random: () => number,
  calls: Record<FaultOp, number>,
  under: string,
): FaultRule & { describe: string } {
  const ops = FAULT_OPS.filter((op) => calls[op] > 0);
  const total = ops.reduce((s, op) => s + calls[op], 0);
  let pick = random() * total;
  const op = ops.find((o) => (pick -= calls[o]) < 0) ?? ops[ops.length - 1]!;
  const error = random() < 0.5 ? 'ENOSPC' : 'EIO';
  const nth = 1 + Math.floor(random() * calls[op]);
  const kind = random();
  const when: FaultRule['when'] =
    kind < 0.6
      ? { nth }
      : kind < 0.85
        ? { rate: Math.round((0.02 + random() * 0.2) * 1000) / 1000, seed: Math.floor(random() * 1e9) }
        : { from: nth };
  return { op, error, when, path: `${under}/*`, describe: `${op} ${error} ${JSON.stringify(when)}` };
}

async function inject(ffs: FaultyFs, f: FaultRule & { describe: string }): Promise<void> {
  await ffs.fault({ op: f.op, error: f.error, when: f.when, path: f.path });
}

describeIfPresent(
  'faults at random points',
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

    test(`queue-write (with prepare -s on the same disk): ` +
      `${RUNS} runs with a fault, then cleared and finished`, async () => {
      const t = (report['queue-write'] = newTally());
      const inside = path.join(ffs.root, 'write');
      const q = path.join(inside, 'q');
      fs.mkdirSync(inside);
      Queue.init(q);
      const seqfile = path.join(inside, 'sender.seq');
      const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-faults-'));
      fs.writeFileSync(path.join(outside, 'payload'), 'x'.repeat(3000));
      await ffs.sync();
      const random = rng(SEED);
      const acks = path.join(outside, 'acks');
      /** Packets made (outside: the sender's disk) and not yet written into the queue. */
      const pending = new Set<string>();
      let made = 0;
      // One round: K packets prepared (number from the seqfile on the faulty disk) and written.
      const K = 4;
      const round = () => {
        const script = [];
        for (let i = 0; i < K; i++) {
          const pkt = path.join(outside, `p${made + i}`);
          script.push(
            `if ${FSPL} prepare -s ${seqfile} -i ${outside}/payload -- true > ` +
              `${pkt}.new; then mv ${pkt}.new ${pkt}; echo ${pkt} >> ${outside}/made;` +
              ` if ${FSPL} queue-write -q ${q} < ${pkt}; then echo ${pkt}` +
              ` >> ${acks}; else echo ${pkt} >> ${outside}/unwritten; fi;` +
              ` else rm -f ${pkt}.new; echo prep >> ${outside}/failed; fi`,
          );
        }
        made += K;
        return sh(script.join('\n'));
      };
      // Calibrate: the calls of one round without a fault.
      const c0 = await ffs.faultCounters();
      round();
      const calls = callsBetween(c0, await ffs.faultCounters());
      for (const p of lines(path.join(outside, 'made'))) pending.add(p);
      for (const p of lines(acks)) pending.delete(p);

      for (let run = 0; run < RUNS; run++) {
        t.runs++;
        const f = randomFault(random, calls, '/write');
        const before = (await ffs.faultCounters()).faults;
        await inject(ffs, f);
        const failedBefore = lines(path.join(outside, 'unwritten')).length + lines(path.join(outside, 'failed')).length;
        round();
        t.failedCommands +=
          lines(path.join(outside, 'unwritten')).length + lines(path.join(outside, 'failed')).length - failedBefore;
        t.faultsInjected += (await ffs.faultCounters()).faults - before;
        await ffs.clear();
        for (const p of lines(path.join(outside, 'made'))) pending.add(p);
        for (const p of lines(acks)) pending.delete(p);
        if (random() < 0.5) {
          await ffs.cut();
          t.cuts++;
        }
        // Finish: what the sender does anyway: send again what was not acknowledged. No other step.
        for (const p of [...pending]) {
          const r = sh(`${FSPL} queue-write -q ${q} < ${p} && echo ${p} >> ${acks}`);
          if (r.code !== 0) {
            t.manualSteps++;
            throw new Error(
              `seed ${SEED}, run ${run} (${f.describe}): queue-write after the fault was cleared: ${r.stderr}`,
            );
          }
          pending.delete(p);
        }
        // Every acknowledged packet is there once; the numbers are 1..N without a gap; nothing else in jobs/.
        const names = fs.readdirSync(path.join(q, 'jobs'));
        const stray = names.filter((n) => !/^fspl-.*\.fspl$/.test(n));
        if (stray.length > 0) t.manualSteps++;
        expect(stray, `seed ${SEED}, run ${run} (${f.describe}): files left in jobs/`).toEqual([]);
        const seqs = (await Queue.open(q).scan()).map((e) => e.header.seq);
        const count = new Map<bigint, number>();
        for (const s of seqs) count.set(s, (count.get(s) ?? 0) + 1);
        const doubled = [...count.values()].filter((n) => n > 1).length;
        const acked = lines(acks).length;
        // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
        const max = seqs.reduce((m, s) => (s > m ? s : m), 0n);
        const next = BigInt(fs.readFileSync(seqfile, 'utf8').trim());
        const gaps: bigint[] = [];
        for (let s = 1n; s < next; s++) if (!count.has(s)) gaps.push(s);
        t.doubled += doubled;
        t.stranded += gaps.length;
        t.ackLost += Math.max(0, acked - count.size);
        t.work = acked;
        expect(doubled, `seed ${SEED}, run ${run} (${f.describe}): numbers twice in the queue`).toBe(0);
        expect(
          gaps,
          `seed ${SEED}, run ${run} (${f.describe}): numbers the seqfile handed out that no packet holds (stranded)`,
        ).toEqual([]);
        expect(
          count.size,
          `seed ${SEED}, run ${run} (${f.describe}): acknowledged packets (${acked}) against jobs in the queue`,
        ).toBe(acked);
        expect(max).toBe(next - 1n);
      }
    }, 1_800_000);

    test(`queue-process (one queue, and three with --jobs 2): ` +
      `${RUNS} runs with a fault, then cleared and finished`, async () => {
      const t = (report['queue-process'] = newTally());
      const inside = path.join(ffs.root, 'process');
      fs.mkdirSync(inside);
      const queues = ['a', 'b', 'c'].map((n) => path.join(inside, n));
      for (const q of queues) Queue.init(q);
      const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-faults-'));
      const log = path.join(outside, 'log');
      // The command notes its queue and job outside the faulty disk.
      const cmd = path.join(outside, 'record.sh');
      fs.writeFileSync(
        cmd,
        `#!/bin/sh\ncat >/dev/null\necho "$(basename "$FSPL_JOB_QUEUEDIR") $FSPL_SEQ" >> ${log}\n`,
        { mode: 0o755 },
      );
      const total = new Map<string, number>(queues.map((q) => [q, 0]));
      const addJobs = async (n: number) => {
        for (const q of queues) {
          const queue = Queue.open(q);
          for (let i = 0; i < n; i++) {
            const seq = total.get(q)! + 1;
            total.set(q, seq);
            queue.writeBuffer(
              Buffer.concat([
                encodeHeader({
                  seq: BigInt(seq),
                  ctime: { secs: 1_700_000_000n, nanos: 0 },
                  cmd: { kind: 'Command', params: [], env: [] },
                }),
                Buffer.from(`job ${seq}\n`),
              ]),
            );
          }
        }
        await ffs.sync();
      };
      const one = `${FSPL} queue-process -q ${queues[0]} ${cmd}`;
      const many = `${FSPL} queue-process ${queues.map((q) => `-q ${q}`).join(' ')} --jobs 2 ${cmd}`;
      const runsOf = () => {
        const out = new Map<string, number[]>();
        for (const l of lines(log)) {
          const [q, s] = l.split(' ');
          out.set(q!, [...(out.get(q!) ?? []), Number(s)]);
        }
        return out;
      };
      const random = rng(SEED + 1);
      // Calibrate on both commands.
      await addJobs(4);
      const c0 = await ffs.faultCounters();
      for (const c of [one, many]) {
        const r = sh(c);
        expect(r.code, r.stderr).toBe(0);
      }
      const calls = callsBetween(c0, await ffs.faultCounters());
      for (const op of FAULT_OPS) calls[op] = Math.ceil(calls[op] / 2);

      for (let run = 0; run < RUNS; run++) {
        t.runs++;
        await addJobs(4);
        const before = runsOf();
        const f = randomFault(random, calls, '/process');
        const faults0 = (await ffs.faultCounters()).faults;
        await inject(ffs, f);
        const command = random() < 0.5 ? one : many;
        const r = sh(command);
        t.faultsInjected += (await ffs.faultCounters()).faults - faults0;
        if (r.code !== 0) {
          t.failedCommands++;
          // One clear line per failure (per queue stopped), never a stack trace.
          const errs = r.stderr.split('\n').filter((l) => l && !/^ *(ERROR|WARN|INFO) fspl::/.test(l));
          expect(errs.length, `seed ${SEED}, run ${run} (${f.describe}): ${r.stderr}`).toBeGreaterThan(0);
          for (const e of errs)
            expect(e, `seed ${SEED}, run ${run} (${f.describe}): ${r.stderr}`).toMatch(
              /^Error: .*(No space left on device|Input\/output error)/,
            );
        }
        await ffs.clear();
        const cut = random() < 0.5;
        if (cut) {
          await ffs.cut();
          t.cuts++;
        }
        // What the next run will read: a note naming a job means that job is recorded as done.
        const noted = new Map<string, number>();
        for (const q of queues) {
          const m = /^S (\d+) /.exec(fs.readFileSync(path.join(q, 'nextseq.lock'), 'utf8'));
          if (m) noted.set(path.basename(q), Number(m[1]));
        }
        const failedRun = runsOf();
        // Finish: the same command again (as cron would), all queues.
        const fin = sh(many);
        if (fin.code !== 0) {
          t.manualSteps++;
          throw new Error(
            `seed ${SEED}, run ${run} (${f.describe}): queue-process after the fault was cleared: ${fin.stderr}`,
          );
        }
        const after = runsOf();
        for (const q of queues) {
          const name = path.basename(q);
          const ran = after.get(name) ?? [];
          const seen = new Set(ran);
          // None skipped, in order, nothing left, nextseq past the last.
          for (let s = 1; s <= total.get(q)!; s++)
            expect(seen.has(s), `seed ${SEED}, run ${run} (${f.describe}): ${name} job ${s} never ran`).toBe(true);
          for (let i = 1; i < ran.length; i++)
            expect(ran[i]! >= ran[i - 1]!, `seed ${SEED}, run ${run}: ${name} job ${ran[i]} after ${ran[i - 1]}`).toBe(
              true,
            );
          const left = fs.readdirSync(path.join(q, 'jobs'));
          if (left.length > 0) t.manualSteps++;
          const state = () =>
            `${cut ? 'cut; ' : ''}nextseq ${fs.readFileSync(path.join(q, 'nextseq'), 'utf8').trim()}, notes ` +
            `before the finish ${JSON.stringify([...noted])}, the faulty run: exit ${r.code} ` +
            `${r.stderr.trim()}`;
          expect(left, `seed ${SEED}, run ${run} (${f.describe}): ${name}: files left in jobs/ (${state()})`).toEqual(
            [],
          );
          expect(fs.readFileSync(path.join(q, 'nextseq'), 'utf8')).toBe(`${total.get(q)! + 1}\n`);
          t.work = [...total.values()].reduce((a, b) => a + b, 0);
          // Run again in this round: only the job in flight when the faulty run stopped (the last it
          // ran), and only if nothing recorded it as done (no note naming it, and the run did not succeed).
          const earlier = before.get(name)?.length ?? 0;
          const inFailed = (failedRun.get(name) ?? []).slice(earlier);
          const inFinish = ran.slice(earlier + inFailed.length);
          const again = inFinish.filter((s) => inFailed.includes(s));
          for (const s of again) {
            const allowed = r.code !== 0 && s === inFailed[inFailed.length - 1] && noted.get(name) !== s;
            if (allowed) t.reRunUnrecorded++;
            else t.doubled++;
            expect(
              allowed,
              `seed ${SEED}, run ${run} (${f.describe}${cut ? ', cut' : ''}): ` +
                `${name} job ${s} ran again (note: ${noted.get(name)}, exit ${r.code})`,
            ).toBe(true);
          }
        }
      }
    }, 1_800_000);
  },
);
