/**
 * The operator's moves under faults (the fault file system): `net retry` and `net set-aside` whose
 * move meets ENOSPC or EIO at a step of its commit (the part, `sendseq`, the journal's line, the
 * publish, the consume) end in one line with a non-zero exit; every token is in one place, once,
 * and no number is stranded; after clearing, the same command works.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Net } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { checkNumbers, keysOf } from '../net/fault-check.js';
import { type FaultRule, type FaultyFs, faultsMissing, mountFaulty, spawnWorkload } from './harness.js';
import { callsBetween, newTally, randomFault, type Tally } from './random-faults.js';

const RUNS = Number(process.env.FSPL_FAULT_RUNS ?? 2);
const SEED = Number(process.env.FSPL_FAULT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;

const fspl = (...args: string[]) =>
  spawnSync(process.execPath, [FSPL_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
let made = 0;

describeIfPresent(
  'operator moves under faults',
  faultsMissing(),
  { what: 'fault-injection tests', note: 'apt-get install fuse3 libfuse3-dev gcc' },
  () => {
    let ffs: FaultyFs;
    let tally: Tally | undefined;
    beforeAll(async () => {
      ffs = await mountFaulty();
    });
    afterAll(async () => {
      await ffs?.unmount();
      if (tally) console.log(`faults, net retry (seed ${SEED}): ${JSON.stringify(tally)}`);
    });

    /** A net on the faulty disk with three error tokens of `work` in `failed`. */
    async function netWithErrors(): Promise<{ dir: string; netFile: string }> {
      const dir = path.join(ffs.root, `op${made++}`);
      fs.mkdirSync(dir);
      const netFile = path.join(dir, 'net.yaml');
      fs.writeFileSync(
        netFile,
        'places: { in: {}, out: {}, failed: {} }\ntransitions:\n' +
          '  work: { in: in, out: out, error: failed, run: [cat] }\n',
      );
      const net = Net.load(netFile);
      net.init();
      for (let i = 0; i < 3; i++)
        await net.put('failed', Buffer.from(`p${i}\n`), {
          key: `k${i}`,
          env: { ERROR_TRANSITION: 'work', ERROR_PLACE: 'in' },
        });
      return { dir, netFile };
    }

    // After the journal's line, a move is recorded: a fault there leaves it for the next operator
    // command (or run) to finish, as after a crash; until then its token may show in both places.
    const steps: Array<[string, (dir: string) => FaultRule, boolean?]> = [
      [
        'the part cannot be written (ENOSPC)',
        (d) => ({ op: 'write', error: 'ENOSPC', when: { nth: 1 }, path: `${d}/places/in/jobs/*` }),
      ],
      [
        'sendseq cannot be renamed (EIO)',
        (d) => ({ op: 'rename', error: 'EIO', when: { nth: 1 }, path: `${d}/places/in/sendseq` }),
      ],
      [
        "sendseq's directory cannot be fsynced (EIO)",
        (d) => ({ op: 'fsync', error: 'EIO', when: { nth: 1 }, path: `${d}/places/in` }),
      ],
      [
        "the journal's line cannot be written (ENOSPC)",
        (d) => ({ op: 'write', error: 'ENOSPC', when: { nth: 1 }, path: `${d}/net.state/*journal*` }),
      ],
      [
        'the journal cannot be fsynced (EIO)',
        (d) => ({ op: 'fsync', error: 'EIO', when: { nth: 1 }, path: `${d}/net.state/*journal*` }),
      ],
      [
        'the token cannot be published (EIO)',
        (d) => ({ op: 'rename', error: 'EIO', when: { nth: 1 }, path: `${d}/places/in/jobs/fspl-*` }),
        true,
      ],
      [
        'the error token cannot be removed (EIO)',
        (d) => ({ op: 'unlink', error: 'EIO', when: { nth: 1 }, path: `${d}/places/failed/jobs/fspl-*` }),
        true,
      ],
    ];

    test.each(steps)(
      'net retry: %s: one line, non-zero; every token once, no number stranded; the same command works once cleared',
      async (_what, rule, recorded) => {
        const { dir, netFile } = await netWithErrors();
        await ffs.fault(rule(dir));
        const before = (await ffs.faultCounters()).faults;
        const r = fspl('net', 'retry', netFile, '--all', '-l', 'error');
        const fired = (await ffs.faultCounters()).faults - before;
        await ffs.clear();
        expect(fired, 'the fault fired').toBe(1);
        if (r.status === 0) {
          // A recorded move is carried out after its fault (a step after the journal's line).
          expect(await keysOf(path.join(dir, 'places/in'))).toEqual(['k0', 'k1', 'k2']);
        } else {
          expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
          expect(r.stderr).toMatch(/No space left on device|Input\/output error/);
          const keys = [
            ...(await keysOf(path.join(dir, 'places/in'))),
            ...(await keysOf(path.join(dir, 'places/failed'))),
          ].sort();
          if (!recorded) expect(keys, 'every token once').toEqual(['k0', 'k1', 'k2']);
          const again = fspl('net', 'retry', netFile, '--all', '-l', 'error');
          expect(again.status, again.stderr).toBe(0);
        }
        expect(await keysOf(path.join(dir, 'places/failed'))).toEqual([]);
        expect(await keysOf(path.join(dir, 'places/in'))).toEqual(['k0', 'k1', 'k2']);
        await checkNumbers(dir, [], ['in']);
      },
      60_000,
    );

    test.each(
      (process.env.FSPL_FAULT_RUNS ? steps.slice(0, 5) : [steps[0]!, steps[3]!]).map(
        ([w, f]) => [w, (d: string) => ({ ...f(d), path: f(d).path!.replace('/in', '/failed') })] as const,
      ),
    )(
      'net set-aside: %s (of the place it leaves): one line or ' +
        'done; every token once; the same command works once cleared',
      async (_what, rule) => {
        const { dir, netFile } = await netWithErrors();
        await ffs.fault(rule(dir));
        const r = fspl('net', 'set-aside', netFile, 'failed', '--key', 'k1', '--reason', 'test', '-l', 'error');
        await ffs.clear();
        if (r.status !== 0) {
          expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
          expect(await keysOf(path.join(dir, 'places/failed'))).toEqual(['k0', 'k1', 'k2']);
          const again = fspl('net', 'set-aside', netFile, 'failed', '--key', 'k1', '--reason', 'test', '-l', 'error');
          expect(again.status, again.stderr).toBe(0);
        }
        expect(await keysOf(path.join(dir, 'places/failed'))).toEqual(['k0', 'k2']);
        expect(await keysOf(path.join(dir, 'net.state/set-aside'))).toEqual(['k1']);
        await checkNumbers(dir, [], ['failed']);
      },
      60_000,
    );

    test('net retry: sendseq renamed but its directory not fsynced, ' +
      'then a power cut: the NOP that took its number keeps it alone', async () => {
      const { dir, netFile } = await netWithErrors();
      await ffs.sync();
      await ffs.fault({ op: 'fsync', error: 'EIO', when: { nth: 1 }, path: `${dir}/places/in` });
      const r = fspl('net', 'retry', netFile, '--all', '-l', 'error');
      expect(r.status).not.toBe(0);
      await ffs.cut();
      await ffs.clear();
      const again = fspl('net', 'retry', netFile, '--all', '-l', 'error');
      expect(again.status, again.stderr).toBe(0);
      expect(await keysOf(path.join(dir, 'places/in'))).toEqual(['k0', 'k1', 'k2']);
      await checkNumbers(dir, [], ['in']);
    }, 60_000);

    // The workload: each run, 3 error tokens; `net retry --all` with a fault at a random point (a
    // third of the runs cut while it holds); then cleared, and the same command run again, as the
    // operator would after its one-line error. Every key must end in `in` once, no number stranded.
    test(`net retry: ${RUNS} runs with a fault at a random ` +
      `point, cleared, and the same command run again`, async () => {
      const t = (tally = newTally());
      const { dir, netFile } = await netWithErrors();
      const net = Net.load(netFile);
      let total = 3;
      const retry = `exec ${FSPL} net retry ${JSON.stringify(netFile)} --all -l error`;
      const c0 = await ffs.faultCounters();
      const first = await spawnWorkload(['sh', '-c', retry]).exited;
      expect(first.code, first.stderr).toBe(0);
      const calls = callsBetween(c0, await ffs.faultCounters());
      const random = rng(SEED + 23);
      const under = dir.slice(ffs.root.length);
      for (let n = 0; n < RUNS; n++) {
        t.runs++;
        for (let i = total; i < total + 3; i++)
          await net.put('failed', Buffer.from(`p${i}\n`), {
            key: `k${i}`,
            env: { ERROR_TRANSITION: 'work', ERROR_PLACE: 'in' },
          });
        total += 3;
        t.tokens = total;
        await ffs.sync();
        const f = randomFault(random, calls, under);
        const label = `seed ${SEED}, run ${n} (${f.describe})`;
        const before = (await ffs.faultCounters()).faults;
        await ffs.fault({ op: f.op, error: f.error, when: f.when, path: f.path });
        const r = await spawnWorkload(['sh', '-c', retry]).exited;
        if (r.code !== 0) expect(r.stderr.trim().split('\n'), `${label}: one line`).toHaveLength(1);
        if (random() < 1 / 3) {
          await ffs.cut();
          t.cuts++;
        }
        t.faultsInjected += (await ffs.faultCounters()).faults - before;
        await ffs.clear();
        const again = await spawnWorkload(['sh', '-c', retry]).exited;
        // Nothing left to retry is an error of its own (exit 2, "no error token"); anything else is a manual step.
        if (again.code !== 0 && !/No error token|nothing to retry/i.test(again.stderr)) t.manualSteps++;
        const keys = await keysOf(path.join(dir, 'places/in'));
        const want = Array.from({ length: total }, (_, i) => `k${i}`).sort((a, b) =>
          a.localeCompare(b, 'en', { numeric: true }),
        );
        const lost = want.filter((k) => !keys.includes(k));
        const doubled = keys.filter((k, i) => keys.indexOf(k) !== i);
        t.lost += lost.length;
        t.doubled += doubled.length;
        expect(
          again.code === 0 || /No error token|nothing to retry/i.test(again.stderr),
          `${label}: the same command again: ${again.stderr}`,
        ).toBe(true);
        expect(lost, `${label}: lost`).toEqual([]);
        expect(doubled, `${label}: doubled`).toEqual([]);
        expect(await keysOf(path.join(dir, 'places/failed')), `${label}: left in failed`).toEqual([]);
        await checkNumbers(dir, [], ['in'], `${label}: `);
      }
    }, 1_800_000);
  },
);
