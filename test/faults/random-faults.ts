/**
 * The random faults of the net workloads (net-workloads.test.ts, outbox-workloads.test.ts) and
 * what they count per workload.
 */
import { FAULT_OPS, type FaultCounters, type FaultOp, type FaultRule } from './harness.js';

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
export const newTally = (): Tally => ({ runs: 0, tokens: 0, faultsInjected: 0, cuts: 0, lost: 0, doubled: 0, stranded: 0, manualSteps: 0, slowestResumeMs: 0 });

export const callsBetween = (a: FaultCounters, b: FaultCounters) =>
  Object.fromEntries(FAULT_OPS.map((op) => [op, b.calls[op] - a.calls[op]])) as Record<FaultOp, number>;

export function randomFault(random: () => number, calls: Record<FaultOp, number>, under: string): FaultRule & { describe: string } {
  const ops = FAULT_OPS.filter((op) => calls[op] > 0 && op !== 'mkdir');
  const total = ops.reduce((s, op) => s + calls[op], 0);
  let pick = random() * total;
  const op = ops.find((o) => (pick -= calls[o]) < 0) ?? ops[ops.length - 1]!;
  const error = random() < 0.5 ? 'ENOSPC' : 'EIO';
  const nth = 1 + Math.floor(random() * Math.max(1, calls[op] / 2));
  const kind = random();
  const when: FaultRule['when'] =
    kind < 0.5 ? { nth } : kind < 0.8 ? { rate: Math.round((0.05 + random() * 0.3) * 1000) / 1000, seed: Math.floor(random() * 1e9) } : { from: nth };
  return { op, error, when, path: `${under}/*`, describe: `${op} ${error} ${JSON.stringify(when)}` };
}
