/**
 * Power cuts under a signed queue (issue 39): `queue-process --allowed-signers` over signed jobs
 * among forgeries of the same numbers, planted as an attacker who may write jobs/ would. Each
 * refusal moves a forgery to refused/ with its note (queue/refused.ts: the note made durable
 * before the rename, refused/ and jobs/ fsynced after). After every cut, each forgery is in
 * jobs/ or in refused/ (never neither; both only as the same file, left by a cut between the two
 * fsyncs, and never copied twice) and one in refused/ has its note; at the end every signed job
 * ran, in order, re-runs ≤ cuts, no forgery ran, and all sit in refused/.
 *
 * FSPL_POWERCUT_CUTS and FSPL_POWERCUT_SEED as in workloads.test.ts.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { preparePacket, Queue } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { makeKey, pubLine, MISSING as SSH_MISSING } from '../sign/keys.js';
import { mountPowercut, type PowercutFs, powercutMissing, spawnWorkload } from './harness.js';

const CUTS = Number(process.env.FSPL_POWERCUT_CUTS ?? 30);
const SEED = Number(process.env.FSPL_POWERCUT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;
const FORGE_EVERY = 10;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function lines(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describeIfPresent(
  'power cuts, signed queue',
  [...powercutMissing(), ...SSH_MISSING],
  { what: 'power-cut tests of a signed queue' },
  () => {
    let pc: PowercutFs;
    let outside: string;
    beforeAll(async () => {
      pc = await mountPowercut();
      outside = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-powercut-signed-'));
    });
    afterAll(async () => {
      await pc?.unmount();
      if (outside) fs.rmSync(outside, { recursive: true, force: true });
    });

    test(`queue-process --allowed-signers among forgeries: over ${CUTS} ` +
      `cuts no forgery runs or is lost, every signed job runs in order`, async () => {
      // Keys and signers live outside the cut file system: they are the owner's, not under test.
      const alice = makeKey(outside, 'alice', ['-t', 'ed25519']);
      const mallory = makeKey(outside, 'mallory', ['-t', 'ed25519']);
      const signers = path.join(outside, 'allowed_signers');
      fs.writeFileSync(signers, `alice ${pubLine(alice)}\n`);
      const runs = path.join(outside, 'runs');
      const inside = path.join(pc.root, 'signed');
      fs.mkdirSync(inside);
      const qdir = path.join(inside, 'q');
      const queue = Queue.init(qdir);
      const forgeries: string[] = [];
      let total = 0;
      const addJobs = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const seq = BigInt(++total);
          await queue.write(preparePacket({ seq, payload: Buffer.from(`job ${seq}\n`), sign: { key: alice } }));
          if (total % FORGE_EVERY !== 0) continue;
          // The same number, twice: unsigned (CRC recomputed) and signed by a key nobody allowed.
          for (const how of [{ seal: true }, { sign: { key: mallory } }]) {
            const chunks: Buffer[] = [];
            for await (const c of preparePacket({ seq, payload: Buffer.from('PWNED\n'), ...how }))
              chunks.push(c as Buffer);
            const name = `fspl-${crypto.randomUUID()}.fspl`;
            fs.writeFileSync(path.join(qdir, 'jobs', name), Buffer.concat(chunks));
            forgeries.push(name);
          }
        }
      };
      await addJobs(200);
      await pc.sync(); // the setup is not under test: queue.write is durable, the planted files are made so here

      const random = rng(SEED + 7);
      let cuts = 0;
      const script =
        `exec ${FSPL} queue-process -q ${qdir} --allowed-signers ` +
        `${signers} sh -- -c 'echo "$FSPL_SEQ $(cat)" >> ${runs}'`;
      const checkForgeries = () => {
        const jobs = new Set(fs.readdirSync(path.join(qdir, 'jobs')));
        const refusedDir = path.join(qdir, 'refused');
        const refused = new Set(fs.existsSync(refusedDir) ? fs.readdirSync(refusedDir) : []);
        for (const name of forgeries) {
          // Both names after a cut are allowed (the same file: refused/ was fsynced, jobs/ not yet); the next run drops
          // the one in jobs/.
          expect(jobs.has(name) || refused.has(name), `seed ${SEED}: forgery ${name} lost`).toBe(true);
          if (refused.has(name))
            expect(refused.has(`${name}.why`), `seed ${SEED}: ${name} refused without its note`).toBe(true);
        }
      };
      for (let round = 0; round < 10 * CUTS + 50; round++) {
        const w = spawnWorkload(['sh', '-c', script]);
        const delay = cuts < CUTS ? 200 + random() * 800 : Infinity;
        const r = await Promise.race([
          w.exited,
          ...(delay === Infinity ? [] : [sleep(delay).then(() => 'timeout' as const)]),
        ]);
        if (r === 'timeout') {
          await pc.cut();
          cuts++;
        } else if (r.code !== 0)
          throw new Error(`seed ${SEED}: queue-process exited ${r.code ?? r.signal}: ${r.stderr}`);
        checkForgeries();
        if (r !== 'timeout' && cuts >= CUTS) break;
        if (r !== 'timeout') {
          await addJobs(50);
          await pc.sync(); // the planted forgeries too: the attacker's files are not under test, the run's moves are
        }
      }

      const ran = lines(runs);
      expect(
        ran.filter((l) => l.includes('PWNED')),
        `seed ${SEED}: a forgery ran`,
      ).toEqual([]);
      const seqs = ran.map((l) => BigInt(l.split(' ')[0]!));
      const distinct = new Set(seqs);
      for (let s = 1n; s <= BigInt(total); s++) expect(distinct.has(s), `seed ${SEED}: job ${s} never ran`).toBe(true);
      for (let i = 1; i < seqs.length; i++)
        expect(seqs[i]! >= seqs[i - 1]!, `seed ${SEED}: job ${seqs[i]} ran after ${seqs[i - 1]}`).toBe(true);
      const reruns = seqs.length - distinct.size;
      expect(reruns, `seed ${SEED}: re-runs`).toBeLessThanOrEqual(cuts);
      const refused = fs.readdirSync(path.join(qdir, 'refused')).filter((n) => !n.endsWith('.why'));
      expect(refused.sort()).toEqual([...forgeries].sort());
      expect(fs.readdirSync(path.join(qdir, 'jobs')), `seed ${SEED}: files left in jobs/`).toEqual([]);
      console.log(
        `power cuts, signed queue (seed ${SEED}): ${cuts} cuts, ${total} ` +
          `signed jobs, ${forgeries.length} forgeries refused, ${reruns} re-runs`,
      );
    }, 900_000);
  },
);
