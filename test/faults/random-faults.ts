/**
 * The random faults of the net workloads (net-workloads.test.ts, outbox-workloads.test.ts) and
 * what they count per workload.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  FAULT_OPS,
  type FaultCounters,
  type FaultOp,
  type FaultRule,
  type FaultyFs,
  spawnWorkload,
  type WorkloadExit,
} from './harness.js';

export interface Tally {
  runs: number;
  tokens: number;
  faultsInjected: number;
  cuts: number;
  lost: number;
  doubled: number;
  stranded: number;
  manualSteps: number;
  /** The longest a run took to drain after its fault was cleared, ms. */
  slowestResumeMs: number;
}
export const newTally = (): Tally => ({
  runs: 0,
  tokens: 0,
  faultsInjected: 0,
  cuts: 0,
  lost: 0,
  doubled: 0,
  stranded: 0,
  manualSteps: 0,
  slowestResumeMs: 0,
});

export const callsBetween = (a: FaultCounters, b: FaultCounters) =>
  Object.fromEntries(FAULT_OPS.map((op) => [op, b.calls[op] - a.calls[op]])) as Record<FaultOp, number>;

export function randomFault(
  random: () => number,
  calls: Record<FaultOp, number>,
  under: string,
): FaultRule & { describe: string } {
  const ops = FAULT_OPS.filter((op) => calls[op] > 0 && op !== 'mkdir');
  const total = ops.reduce((s, op) => s + calls[op], 0);
  let pick = random() * total;
  const op = ops.find((o) => (pick -= calls[o]) < 0) ?? ops[ops.length - 1]!;
  const error = random() < 0.5 ? 'ENOSPC' : 'EIO';
  const nth = 1 + Math.floor(random() * Math.max(1, calls[op] / 2));
  const kind = random();
  const when: FaultRule['when'] =
    kind < 0.5
      ? { nth }
      : kind < 0.8
        ? { rate: Math.round((0.05 + random() * 0.3) * 1000) / 1000, seed: Math.floor(random() * 1e9) }
        : { from: nth };
  return { op, error, when, path: `${under}/*`, describe: `${op} ${error} ${JSON.stringify(when)}` };
}

/**
 * One run of a workload under a fault: `run` (a shell command) started, the fault set at a random
 * moment, then either a power cut and a restart (a third of the runs) or the fault cleared while
 * it goes on. Counts into `t` the faults injected, the cuts, the slowest resume and a run that
 * did not end well (a manual step); returns how the run (or its restart) ended.
 */
export async function faultedRun(
  ffs: FaultyFs,
  t: Tally,
  random: () => number,
  f: FaultRule,
  run: string,
): Promise<WorkloadExit> {
  const before = (await ffs.faultCounters()).faults;
  const w = spawnWorkload(['sh', '-c', run]);
  await sleep(random() * 300);
  await ffs.fault({ op: f.op, error: f.error, when: f.when, path: f.path });
  await sleep(200 + random() * 600);
  let r: WorkloadExit;
  if (random() < 1 / 3) {
    await ffs.cut();
    t.cuts++;
    await ffs.clear();
    r = await spawnWorkload(['sh', '-c', run]).exited; // the restart (systemd's, or the user's)
  } else {
    await ffs.clear();
    const cleared = Date.now();
    r = await w.exited;
    t.slowestResumeMs = Math.max(t.slowestResumeMs, Date.now() - cleared);
  }
  t.faultsInjected += (await ffs.faultCounters()).faults - before;
  if (r.code !== 0) t.manualSteps++;
  return r;
}

/**
 * A sink's tokens against what was put and numbered: the keys k0..k(keys-1) missing or there more
 * than once, and the numbers 1..end-1 (its writers' sendseq) not held by exactly one token.
 */
export function deliveryCount(
  got: ReadonlyArray<{ seq: bigint; key?: string }>,
  keys: number,
  end: bigint,
): { lost: string[]; doubled: string[]; stranded: number } {
  const count = new Map<string, number>();
  const seqs = new Map<bigint, number>();
  for (const p of got) {
    seqs.set(p.seq, (seqs.get(p.seq) ?? 0) + 1);
    if (p.key !== undefined) count.set(p.key, (count.get(p.key) ?? 0) + 1);
  }
  const lost = Array.from({ length: keys }, (_, i) => `k${i}`).filter((k) => !count.has(k));
  const doubled = [...count].filter(([, n]) => n > 1).map(([k]) => k);
  let stranded = 0;
  for (let s = 1n; s < end; s++) if (seqs.get(s) !== 1) stranded++;
  return { lost, doubled, stranded };
}
