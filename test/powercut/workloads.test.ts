/**
 * Power cuts: each workload runs on the power-cut file system (pcfs.c, harness.ts), is cut at
 * random moments (every process killed, and every write that no fsync made durable forgotten),
 * and is then simply run again, as a user would after the machine comes back.
 *
 * FSPL_POWERCUT_CUTS sets the cuts per workload (30 in `npm run test:all`, 300 in `npm run test:powercut`);
 * FSPL_POWERCUT_SEED repeats a run. Each test prints what it saw; docs/reliability.md reports
 * the 300-cut run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeHeader, Net, preparePacket, Queue, readPacket } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent, IN_CI } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { mountPowercut, type PowercutFs, powercutMissing, spawnWorkload } from './harness.js';

const CUTS = Number(process.env.FSPL_POWERCUT_CUTS ?? 30);
const SEED = Number(process.env.FSPL_POWERCUT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the workload knows for sure, kept outside the cut file system (the sender's own disk). */
function outsideDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-powercut-'));
}

function lines(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

async function payloadOf(file: string): Promise<string> {
  const p = await readPacket({ path: file });
  const chunks: Buffer[] = [];
  for await (const c of p.payload) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}

/**
 * Run `script` (sh) as a workload until a random moment `minMs`..`maxMs` later, then cut the
 * power. Returns 'cut', or 0 if it finished first (any other exit status fails the test).
 * With maxMs Infinity: no cut, run to the end.
 */
async function runUntilCut(
  pc: PowercutFs,
  script: string,
  random: () => number,
  minMs: number,
  maxMs: number,
): Promise<'cut' | number> {
  const w = spawnWorkload(['sh', '-c', script]);
  const delay = minMs + random() * (maxMs - minMs);
  const r = await Promise.race([
    w.exited,
    ...(delay === Infinity ? [] : [sleep(delay).then(() => 'timeout' as const)]),
  ]);
  if (r === 'timeout') {
    await pc.cut();
    return 'cut';
  }
  if (r.code !== 0) throw new Error(`workload exited ${r.code ?? r.signal}: ${r.stderr}`);
  return 0;
}

describeIfPresent(
  'power cuts',
  powercutMissing(),
  { what: 'power-cut tests', note: 'apt-get install fuse3 libfuse3-dev gcc' },
  () => {
    let pc: PowercutFs;
    let outside: string;
    beforeAll(async () => {
      pc = await mountPowercut();
    });
    afterAll(async () => {
      await pc?.unmount();
    });

    function fresh(name: string): { inside: string; outside: string } {
      outside = outsideDir();
      const inside = path.join(pc.root, name);
      fs.mkdirSync(inside);
      return { inside, outside };
    }

    test(`queue-write: every acknowledged job survives ${CUTS} cuts, whole`, async () => {
      const { inside, outside } = fresh('write');
      const q = path.join(inside, 'q');
      Queue.init(q);
      // Packets are prepared outside (the sender's disk), so that the loop is all queue-write.
      const packets = path.join(outside, 'packets');
      fs.mkdirSync(packets);
      const acks = path.join(outside, 'acks');
      await pc.sync(); // the test's own setup (its directories) is not under test
      const random = rng(SEED);
      let next = 0;
      let cuts = 0;
      while (cuts < CUTS) {
        const batch = 20;
        for (let i = next; i < next + batch; i++) {
          const chunks: Buffer[] = [];
          for await (const c of preparePacket({ seq: BigInt(i + 1), payload: Buffer.from(`job ${i}\n`) }))
            chunks.push(c as Buffer);
          fs.writeFileSync(`${packets}/${i}`, Buffer.concat(chunks));
        }
        const script =
          `i=${next}; while [ $i -lt ${next + batch} ]; do ${FSPL} queue-write ` +
          `-q ${q} < ${packets}/$i && echo $i >> ${acks}; i=$((i+1)); done`;
        const r = await runUntilCut(pc, script, random, 150, 800);
        if (r === 'cut') cuts++;
        next += batch;
        // Every write acknowledged so far is there, whole, after every cut.
        const found = new Map<string, number>();
        for (const name of fs.readdirSync(path.join(q, 'jobs'))) {
          if (!/^fspl-.*\.fspl$/.test(name)) continue;
          const text = await payloadOf(path.join(q, 'jobs', name));
          found.set(text, (found.get(text) ?? 0) + 1);
        }
        const acked = lines(acks);
        const lost = acked.filter((i) => !found.has(`job ${i}\n`));
        expect(lost, `seed ${SEED}: acknowledged jobs lost after cut ${cuts}`).toEqual([]);
        for (const [text, n] of found) expect(n, `seed ${SEED}: ${text} twice`).toBe(1);
      }
      console.log(
        `power cuts, queue-write (seed ${SEED}): ${cuts} cuts, ${lines(acks).length} writes acknowledged, 0 lost`,
      );
    }, 600_000);

    test('for comparison, the reference (Filespooler 1.2.2) loses jobs its queue-write acknowledged', async () => {
      const ref = '/usr/bin/fspl';
      if (!fs.existsSync(ref)) {
        if (IN_CI) throw new Error(`${ref} is missing (apt-get install filespooler)`);
        console.warn(`!!! ${ref} missing: the comparison with the reference is skipped`);
        return;
      }
      const { inside, outside } = fresh('reference');
      const q = path.join(inside, 'q');
      Queue.init(q);
      const pkt = path.join(outside, 'packet');
      const prep = await spawnWorkload(['sh', '-c', `echo job | ${FSPL} prepare -s - -i - > ${pkt}`]).exited;
      expect(prep.code, prep.stderr).toBe(0);
      await pc.sync();
      const w = await spawnWorkload([
        'sh',
        '-c',
        `for i in 1 2 3 4 5; do ${ref} queue-write -q ${q} < ${pkt} || exit 1; done`,
      ]).exited;
      expect(w.code, w.stderr).toBe(0); // five writes acknowledged...
      await pc.cut();
      const left = fs.readdirSync(path.join(q, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n));
      // ...and none survives: it never fsyncs jobs/ after its rename (docs/compatibility.md).
      console.log(`power cuts, reference queue-write: 5 writes acknowledged, ${5 - left.length} lost`);
      expect(left.length).toBe(0);
    });

    test(`queue-process: over ${CUTS} cuts no job is skipped, jobs ` +
      `run in order, and each cut re-runs at most the job in flight`, async () => {
      const { inside, outside } = fresh('process');
      const qdir = path.join(inside, 'q');
      const queue = Queue.init(qdir);
      const runs = path.join(outside, 'runs');
      let total = 0;
      const addJobs = async (n: number) => {
        for (let i = 0; i < n; i++)
          await queue.write(preparePacket({ seq: BigInt(++total), payload: Buffer.from(`job ${total}\n`) }));
      };
      await addJobs(300);
      await pc.sync();
      const random = rng(SEED + 1);
      let cuts = 0;
      // The command notes its job outside the cut file system, where a note is never lost.
      const script =
        `exec ${FSPL} queue-process -q ${qdir} ` +
        `sh -- -c 'cat >/dev/null; sleep 0.005; ` +
        `echo $FSPL_SEQ >> ${runs}'`;
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const r = await runUntilCut(pc, script, random, 300, cuts < CUTS ? 1000 : Infinity);
        if (r === 'cut') cuts++;
        else if (cuts < CUTS)
          await addJobs(100); // drained before its cuts: more work, so every cut lands mid-run (queue.write is durable)
        else break;
      }
      const ran = lines(runs).map(BigInt);
      const distinct = new Set(ran);
      // None skipped: every job ran, and every job file is gone.
      expect(distinct.size, `seed ${SEED}`).toBe(total);
      for (let s = 1; s <= total; s++) expect(distinct.has(BigInt(s)), `seed ${SEED}: job ${s} never ran`).toBe(true);
      // In order: a job runs only after every job before it (a re-run repeats the last, never an earlier one).
      for (let i = 1; i < ran.length; i++)
        expect(ran[i]! >= ran[i - 1]!, `seed ${SEED}: job ${ran[i]} ran after ${ran[i - 1]}`).toBe(true);
      const reruns = ran.length - distinct.size;
      expect(reruns, `seed ${SEED}: re-runs`).toBeLessThanOrEqual(cuts);
      const left = fs.readdirSync(path.join(qdir, 'jobs'));
      console.log(
        `power cuts, queue-process (seed ${SEED}): ${cuts} cuts, ${total} jobs, ` +
          `${reruns} re-runs, ${left.length} spent job files left below nextseq`,
      );
      // The note queue-process makes durable before it finishes a job lets the next run delete a
      // spent file that a cut brought back (finishInterrupted): none is left.
      expect(left, `seed ${SEED}: spent job files left`).toEqual([]);
    }, 600_000);

    test(`queue-process --retries 1 --failed-to F (one job in ten always fails): ` +
      `over ${CUTS} cuts no job is lost or doubled, each failing one in F once`, async () => {
      const { inside, outside } = fresh('failed');
      const qdir = path.join(inside, 'q');
      const F = path.join(inside, 'F');
      const queue = Queue.init(qdir);
      const runs = path.join(outside, 'runs');
      let total = 0;
      const addJobs = async (n: number) => {
        for (let i = 0; i < n; i++)
          await queue.write(preparePacket({ seq: BigInt(++total), payload: Buffer.from(`job ${total}\n`) }));
      };
      await addJobs(200);
      await pc.sync();
      const random = rng(SEED + 7);
      let cuts = 0;
      const script =
        `exec ${FSPL} queue-process -q ${qdir} --retries 1 --retry-delay 0 --failed-to ${F} sh -- ` +
        `-c 'cat >/dev/null; sleep 0.005; echo $FSPL_SEQ >> ${runs}; [ $((FSPL_SEQ % 10)) != 0 ]'`;
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const r = await runUntilCut(pc, script, random, 300, cuts < CUTS ? 1000 : Infinity);
        if (r === 'cut') cuts++;
        else if (cuts < CUTS) await addJobs(100);
        else break;
      }
      const ran = lines(runs).map(Number);
      const distinct = new Set(ran);
      const failing = Array.from({ length: Math.floor(total / 10) }, (_, i) => (i + 1) * 10);
      expect(distinct.size, `seed ${SEED}`).toBe(total);
      for (let i = 1; i < ran.length; i++)
        expect(ran[i]! >= ran[i - 1]!, `seed ${SEED}: job ${ran[i]} ran after ${ran[i - 1]}`).toBe(true);
      // Each failing job is tried twice; a cut adds at most the try in flight.
      const extra = ran.length - total - failing.length;
      expect(extra, `seed ${SEED}: extra runs`).toBeGreaterThanOrEqual(0);
      expect(extra, `seed ${SEED}: extra runs`).toBeLessThanOrEqual(cuts);
      const moved = await Queue.open(F).list();
      expect(
        moved.map((j) => Number(j.header.failure?.seq)),
        `seed ${SEED}: each failing job in F once`,
      ).toEqual(failing);
      expect(moved.map((j) => Number(j.header.seq))).toEqual(failing.map((_, i) => i + 1));
      expect(fs.readdirSync(path.join(qdir, 'jobs')), `seed ${SEED}: job files left`).toEqual([]);
      console.log(
        `power cuts, queue-process --failed-to (seed ${SEED}): ${cuts} ` +
          `cuts, ${total} jobs, ${failing.length} moved, ${extra} extra runs`,
      );
    }, 600_000);

    test(`queue-process over many queues (--queues-in, --jobs 3): over ${CUTS} cuts no queue ` +
      `skips a job, each runs in its order, and a cut re-runs at most the jobs in flight`, async () => {
      const { inside, outside } = fresh('many');
      const parent = path.join(inside, 'queues');
      fs.mkdirSync(parent);
      const QUEUES = 5;
      const WORKERS = 3;
      const queues = Array.from({ length: QUEUES }, (_, i) => Queue.init(path.join(parent, `q${i}`)));
      const runs = path.join(outside, 'runs');
      const totals = queues.map(() => 0);
      const addJobs = async (n: number) => {
        for (const [i, q] of queues.entries()) {
          for (let k = 0; k < n; k++)
            await q.write(preparePacket({ seq: BigInt(++totals[i]!), payload: Buffer.from(`job ${totals[i]}\n`) }));
        }
      };
      await addJobs(60);
      await pc.sync();
      const random = rng(SEED + 4);
      let cuts = 0;
      const script =
        `exec ${FSPL} queue-process --queues-in ${parent} --jobs ${WORKERS} sh -- -c 'cat ` +
        `>/dev/null; sleep 0.005; echo "$(basename $FSPL_JOB_QUEUEDIR) $FSPL_SEQ" >> ${runs}'`;
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const r = await runUntilCut(pc, script, random, 300, cuts < CUTS ? 1000 : Infinity);
        if (r === 'cut') cuts++;
        else if (cuts < CUTS) await addJobs(20);
        else break;
      }
      let reruns = 0;
      for (const [i, q] of queues.entries()) {
        const ran = lines(runs)
          .filter((l) => l.startsWith(`q${i} `))
          .map((l) => BigInt(l.split(' ')[1]!));
        const distinct = new Set(ran);
        for (let s = 1; s <= totals[i]!; s++)
          expect(distinct.has(BigInt(s)), `seed ${SEED}: queue ${i}, job ${s} never ran`).toBe(true);
        for (let k = 1; k < ran.length; k++)
          expect(ran[k]! >= ran[k - 1]!, `seed ${SEED}: queue ${i}, job ${ran[k]} ran after ${ran[k - 1]}`).toBe(true);
        expect(ran.length - distinct.size, `seed ${SEED}: queue ${i} re-runs`).toBeLessThanOrEqual(cuts);
        reruns += ran.length - distinct.size;
        expect(fs.readdirSync(q.jobsDir), `seed ${SEED}: queue ${i}, spent job files left`).toEqual([]);
      }
      // A cut re-runs at most the jobs that were running: --jobs of them.
      expect(reruns, `seed ${SEED}: re-runs`).toBeLessThanOrEqual(WORKERS * cuts);
      console.log(
        `power cuts, queue-process over ${QUEUES} queues (seed ${SEED}): ${cuts} cuts, ` +
          `${totals.reduce((a, b) => a + b, 0)} jobs, ${reruns} re-runs, 0 spent job files left`,
      );
    }, 600_000);

    test(`queue-process over runs of NOPs (each run recorded as one): over ${CUTS} cuts no command is ` +
      `skipped or run out of order, each cut re-runs at ` +
      `most the job in flight, no spent NOP file is left`, async () => {
      const { inside, outside } = fresh('nops');
      const qdir = path.join(inside, 'q');
      const queue = Queue.init(qdir);
      const runs = path.join(outside, 'runs');
      const random = rng(SEED + 5);
      const commands = new Set<bigint>();
      let total = 0n;
      // Runs of 1 to 80 NOPs between commands: most cuts land in a run's record or between two.
      const addJobs = (n: number) => {
        for (let i = 0; i < n; i++) {
          for (let k = Math.floor(random() * 80) + 1; k > 0; k--)
            queue.writeBuffer(
              encodeHeader({ seq: ++total, ctime: { secs: 1700000000n, nanos: 0 }, cmd: { kind: 'NOP' } }),
            );
          commands.add(++total);
          queue.writeBuffer(
            encodeHeader({
              seq: total,
              ctime: { secs: 1700000000n, nanos: 0 },
              cmd: { kind: 'Command', params: [], env: [] },
            }),
          );
        }
      };
      addJobs(40);
      await pc.sync();
      let cuts = 0;
      const script = `exec ${FSPL} queue-process -q ${qdir} sh -- -c 'echo $FSPL_SEQ >> ${runs}'`;
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const r = await runUntilCut(pc, script, random, 100, cuts < CUTS ? 600 : Infinity);
        if (r === 'cut') cuts++;
        else if (cuts < CUTS) {
          addJobs(20); // drained before its cuts: more work (writeBuffer is durable)
          await pc.sync();
        } else break;
      }
      const ran = lines(runs).map(BigInt);
      const distinct = new Set(ran);
      // Only commands ran (a NOP runs nothing), every one of them, in order; a re-run repeats the last.
      expect(
        [...distinct].filter((s) => !commands.has(s)),
        `seed ${SEED}`,
      ).toEqual([]);
      expect(distinct.size, `seed ${SEED}: commands run`).toBe(commands.size);
      for (let i = 1; i < ran.length; i++)
        expect(ran[i]! >= ran[i - 1]!, `seed ${SEED}: job ${ran[i]} ran after ${ran[i - 1]}`).toBe(true);
      const reruns = ran.length - distinct.size;
      expect(reruns, `seed ${SEED}: re-runs`).toBeLessThanOrEqual(cuts);
      const left = fs.readdirSync(path.join(qdir, 'jobs'));
      expect(fs.readFileSync(path.join(qdir, 'nextseq'), 'utf8'), `seed ${SEED}`).toBe(`${total + 1n}\n`);
      console.log(
        `power cuts, queue-process over runs of NOPs (seed ${SEED}): ${cuts} cuts, ${total} ` +
          `jobs (${commands.size} commands), ${reruns} re-runs, ${left.length} spent job files left`,
      );
      // The note of a run of NOPs (N FIRST LAST) lets the next run delete the spent NOPs a cut brought back.
      expect(left, `seed ${SEED}: spent job files left`).toEqual([]);
    }, 900_000);

    test(`a net (chain, and-branch, and-merge): over ${CUTS} cuts every key reaches ` +
      `the sink exactly once, nothing is stranded, no number is used twice`, async () => {
      const { inside } = fresh('net');
      const netFile = path.join(inside, 'net.yaml');
      fs.writeFileSync(
        netFile,
        `
places: { src: {}, a: {}, l: {}, r: {}, l2: {}, r2: {}, sink: {} }
transitions:
  first: { in: src, run: 'sed s/^/A:/', out: a }
  split: { in: a, run: 'tee "$FSPL_OUT_l" > "$FSPL_OUT_r"', out: [l, r], workers: 2 }
  tl: { in: l, run: "sleep 0.0$(( RANDOM % 5 )); sed s/^/L:/", out: l2, workers: 2 }
  tr: { in: r, run: "sleep 0.0$(( RANDOM % 5 )); sed s/^/R:/", out: r2, workers: 2 }
  join: { in: [l2, r2], run: 'cat "$FSPL_IN_l2" "$FSPL_IN_r2"', out: sink }
`,
      );
      const init = await spawnWorkload(['sh', '-c', `${FSPL} net init ${netFile}`]).exited;
      expect(init.code, init.stderr).toBe(0);
      const random = rng(SEED + 2);
      let total = 0;
      const net = Net.load(netFile);
      // Tokens are put by the library in this process (a put is durable before it returns).
      const putBatch = async (n: number) => {
        for (let i = total; i < total + n; i++) await net.put('src', Buffer.from(`p${i}\n`), { key: `k${i}` });
        total += n;
      };
      await putBatch(60);
      await pc.sync();
      let cuts = 0;
      const run = `exec ${FSPL} net run --drain -l error ${netFile}`;
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const r = await runUntilCut(pc, run, random, 400, cuts < CUTS ? 1400 : Infinity);
        if (r === 'cut') cuts++;
        else if (cuts < CUTS) await putBatch(30);
        else break;
      }
      // The last run was a clean --drain (exit 0, or runUntilCut would have thrown).
      const sink = path.join(inside, 'places/sink/jobs');
      const keys = new Map<string, number>();
      const seqs = new Set<bigint>();
      for (const name of fs.readdirSync(sink)) {
        expect(name, `seed ${SEED}: a stray file in the sink`).toMatch(/^fspl-.*\.fspl$/);
        const p = await readPacket({ path: path.join(sink, name) });
        expect(seqs.has(p.seq), `seed ${SEED}: number ${p.seq} used twice in the sink`).toBe(false);
        seqs.add(p.seq);
        if (p.kind === 'NOP') continue; // a filler for a number a cut undid before its token was published
        const env = Object.fromEntries(p.env.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]));
        keys.set(env.KEY, (keys.get(env.KEY) ?? 0) + 1);
        const i = env.KEY.slice(1);
        expect(await payloadOf(path.join(sink, name)), `seed ${SEED}`).toBe(`L:A:p${i}\nR:A:p${i}\n`);
      }
      const doubled = [...keys].filter(([, n]) => n > 1).map(([k]) => k);
      expect(doubled, `seed ${SEED}: keys that arrived twice`).toEqual([]);
      const missing = Array.from({ length: total }, (_, i) => `k${i}`).filter((k) => !keys.has(k));
      expect(missing, `seed ${SEED}: keys lost`).toEqual([]);
      for (const p of ['src', 'a', 'l', 'r', 'l2', 'r2']) {
        const left = fs.readdirSync(path.join(inside, 'places', p, 'jobs'));
        expect(left, `seed ${SEED}: stranded in ${p}`).toEqual([]);
      }
      console.log(`power cuts, net (seed ${SEED}): ${cuts} cuts, ${total} keys, each in the sink once`);
    }, 900_000);
    test(
      `net retry: over ${CUTS} cuts each error token is either still ` +
        `in the error place or back upstream, never both, never neither`,
      async () => {
        const { inside } = fresh('retry');
        const netFile = path.join(inside, 'net.yaml');
        fs.writeFileSync(
          netFile,
          'places: { in: {}, out: {}, failed: {} }\ntransitions:\n  work: { in: in, out: out, error: failed }\n',
        );
        const init = await spawnWorkload(['sh', '-c', `${FSPL} net init ${netFile}`]).exited;
        expect(init.code, init.stderr).toBe(0);
        const net = Net.load(netFile);
        let total = 0;
        // Error tokens as a failed firing leaves them, put by the library (durable before it returns).
        const putBatch = async (n: number) => {
          for (let i = total; i < total + n; i++)
            await net.put('failed', Buffer.from(`p${i}\n`), {
              key: `k${i}`,
              env: { ERROR_TRANSITION: 'work', ERROR_PLACE: 'in' },
            });
          total += n;
        };
        await putBatch(200);
        await pc.sync();
        const random = rng(SEED + 3);
        const keysOf = async (place: string) => {
          const out: string[] = [];
          const jobs = path.join(inside, 'places', place, 'jobs');
          for (const name of fs.readdirSync(jobs)) {
            if (!/^fspl-.*\.fspl$/.test(name)) continue;
            const p = await readPacket({ path: path.join(jobs, name) });
            p.payload.destroy(); // only the header is read: the file's descriptor goes now, not at GC
            if (p.kind === 'NOP') continue; // a filler for a number a cut undid before its token was published
            out.push(Buffer.from(p.env.find(([k]) => Buffer.from(k).toString() === 'KEY')![1]).toString());
          }
          return out;
        };
        let cuts = 0;
        const retry = `exec ${FSPL} net retry ${netFile} --all -l error`;
        for (let round = 0; round < 10 * CUTS + 50; round++) {
          const r = await runUntilCut(pc, retry, random, 250, cuts < CUTS ? 800 : Infinity);
          if (r !== 'cut') {
            if (cuts >= CUTS) break;
            await putBatch(100); // it finished before its cut: more to move, so every cut lands mid-run
            continue;
          }
          cuts++;
          // After the cut, the next operator command finishes what was begun (here a retry of a
          // transition the net does not have: it recovers, then exits 2), and each token is in one place.
          const check = await spawnWorkload(['sh', '-c', `${FSPL} net retry ${netFile} --transition none-such`]).exited;
          expect(check.code, check.stderr).toBe(2);
          const keys = [...(await keysOf('in')), ...(await keysOf('failed'))];
          expect(keys.length, `seed ${SEED}, cut ${cuts}: tokens in both places or in neither`).toBe(total);
          expect(new Set(keys).size, `seed ${SEED}, cut ${cuts}: a token in both places`).toBe(total);
        }
        // The last retry ran to the end: everything is upstream, and a drain delivers each key once.
        expect(await keysOf('failed'), `seed ${SEED}`).toEqual([]);
        const drain = await spawnWorkload(['sh', '-c', `${FSPL} net run --drain -l error ${netFile}`]).exited;
        expect(drain.code, drain.stderr).toBe(0);
        const out = await keysOf('out');
        expect(out.sort(), `seed ${SEED}`).toEqual(Array.from({ length: total }, (_, i) => `k${i}`).sort());
        console.log(
          `power cuts, net retry (seed ${SEED}): ${cuts} cuts, ${total} error tokens, each back exactly once`,
        );
        // Its time grows faster than the cuts: a retry that finishes before its cut gets 100 tokens
        // more, and after each cut every token is read and the file system rebuilt. The faster the
        // retries, the more tokens (4,200 at 100 cuts in 317 s on 2026-11-25; at 300 cuts it passed
        // 900 s): a limit per cut, not one for every number of cuts.
      },
      Math.max(900_000, CUTS * 6_000),
    );
  },
);
