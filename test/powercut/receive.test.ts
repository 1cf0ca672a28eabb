/**
 * Power cuts under the receiver that NNCP feeds (`fspl queue-receive`, src/send/receive.ts), on
 * the power-cut file system (pcfs.c, harness.ts). The test plays NNCP: it offers batches of
 * framed packets, out of order and with copies of packets already taken, and keeps every batch
 * whose handle did not exit 0 to offer it again after the cut, as nncp-toss does; it also offers
 * a batch that was taken once more (a replayed transfer).
 *
 * After every cut: every packet of a batch the receiver acknowledged (exit 0) is in the queue,
 * whole, and no number is there twice. At the end every packet is there exactly once.
 *
 * FSPL_POWERCUT_CUTS sets the cuts (10 here in `npm run test:all`, 300 in `npm run test:powercut`). Without
 * the fsync of the parts' names before the ledger is written, this test loses acknowledged packets
 * within 30 cuts (tried).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { preparePacket, Queue, readPacket } from 'filespooler';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeIfPresent } from '../gate.js';
import { FSPL_BIN, rng } from '../helpers.js';
import { mountPowercut, type PowercutFs, powercutMissing, spawnWorkload } from './harness.js';

const CUTS = Number(process.env.FSPL_POWERCUT_CUTS ?? 10);
const SEED = Number(process.env.FSPL_POWERCUT_SEED ?? Date.now() % 100000);
const FSPL = `${JSON.stringify(process.execPath)} ${JSON.stringify(FSPL_BIN)}`;
const BATCH = 8;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function framed(seq: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of preparePacket({ seq: BigInt(seq), payload: Buffer.from(`job ${seq}\n`), seal: true }))
    chunks.push(c as Buffer);
  const packet = Buffer.concat(chunks);
  return Buffer.concat([Buffer.from(`id-${seq} ${seq} ${packet.length}\n`), packet]);
}

/** Job files already read whole (a job file never changes once it has its name). */
const checked = new Map<string, number>();

/** How many job files hold each number; each new file is read whole (its payload must be `job N`). */
async function stored(q: string): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  for (const name of fs.readdirSync(path.join(q, 'jobs'))) {
    if (!/^fspl-.*\.fspl$/.test(name)) continue;
    let seq = checked.get(`${q}/${name}`);
    if (seq === undefined) {
      const p = await readPacket({ path: path.join(q, 'jobs', name) });
      const chunks: Buffer[] = [];
      for await (const c of p.payload) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString(), `seed ${SEED}: ${name}`).toBe(`job ${p.seq}\n`);
      seq = Number(p.seq);
      checked.set(`${q}/${name}`, seq);
    }
    found.set(seq, (found.get(seq) ?? 0) + 1);
  }
  return found;
}

describeIfPresent(
  'power cuts under queue-receive',
  powercutMissing(),
  { what: 'power-cut tests', note: 'apt-get install fuse3 libfuse3-dev gcc' },
  () => {
    let pc: PowercutFs;
    beforeAll(async () => {
      pc = await mountPowercut();
    });
    afterAll(async () => {
      await pc?.unmount();
    });

    test(
      `queue-receive: over ${CUTS} cuts, every packet of an ` +
        `acknowledged batch is there once; offered again, none is doubled`,
      async () => {
        const inside = path.join(pc.root, 'receive');
        fs.mkdirSync(inside);
        const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-powercut-'));
        const q = path.join(inside, 'q');
        Queue.init(q);
        await pc.sync(); // the test's own setup is not under test
        const random = rng(SEED);
        const acks = path.join(outside, 'acks');
        const pending: number[] = []; // batches NNCP still holds (offered, not acknowledged)
        const acked = new Set<number>();
        const members = new Map<number, number[]>();
        let nextBatch = 0;
        let nextSeq = 1;
        let cuts = 0;
        const offer = (batches: number[], cut: boolean) => {
          const script = batches
            .map((b) => `${FSPL} queue-receive -q ${q} < ${outside}/batch-${b} && echo ${b} >> ${acks}`)
            .join('\n');
          const w = spawnWorkload(['sh', '-c', `set -e\n${script}`]);
          return { w, cut };
        };
        while (cuts < CUTS) {
          // New batches: their numbers shuffled, with a copy of a number taken before.
          for (let k = 0; k < 3; k++) {
            const seqs = Array.from({ length: BATCH }, (_, i) => nextSeq + i);
            nextSeq += BATCH;
            for (let i = seqs.length - 1; i > 0; i--) {
              const j = Math.floor(random() * (i + 1));
              [seqs[i], seqs[j]] = [seqs[j]!, seqs[i]!];
            }
            if (nextSeq > BATCH * 2)
              seqs.splice(Math.floor(random() * seqs.length), 0, 1 + Math.floor(random() * (nextSeq - BATCH - 1)));
            fs.writeFileSync(
              path.join(outside, `batch-${nextBatch}`),
              Buffer.concat(await Promise.all(seqs.map(framed))),
            );
            members.set(nextBatch, seqs);
            pending.push(nextBatch++);
          }
          // A batch taken before, replayed.
          const replay = acked.size > 0 ? [[...acked][Math.floor(random() * acked.size)]!] : [];
          const { w } = offer([...pending, ...replay], true);
          const r = await Promise.race([w.exited, sleep(100 + random() * 700).then(() => 'cut' as const)]);
          if (r === 'cut') {
            await pc.cut();
            cuts++;
          } else if (r.code !== 0) throw new Error(`seed ${SEED}: queue-receive failed: ${r.stderr}`);
          for (const line of fs.existsSync(acks) ? fs.readFileSync(acks, 'utf8').split('\n').filter(Boolean) : [])
            acked.add(Number(line));
          pending.splice(0, pending.length, ...pending.filter((b) => !acked.has(b)));
          const found = await stored(q);
          const lost = [...acked].flatMap((b) => members.get(b)!).filter((s) => !found.has(s));
          expect(lost, `seed ${SEED}: acknowledged packets lost after cut ${cuts}`).toEqual([]);
          for (const [s, n] of found) expect(n, `seed ${SEED}: number ${s} stored ${n} times`).toBe(1);
        }
        // The power stays on: NNCP's last toss takes what it still holds.
        const { w } = offer(pending, false);
        const end = await w.exited;
        expect(end.code, end.stderr).toBe(0);
        const found = await stored(q);
        expect([...found.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: nextSeq - 1 }, (_, i) => i + 1));
        console.log(
          `power cuts, queue-receive (seed ${SEED}): ${cuts} cuts, ${acked.size}` +
            ` batches acknowledged, ${nextSeq - 1} packets, 0 lost, 0 doubled`,
        );
      },
      120_000 + CUTS * 5_000,
    );
  },
);
