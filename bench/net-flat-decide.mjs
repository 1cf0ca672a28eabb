#!/usr/bin/env node
/**
 * The cost of one decision of the scheduler, with N transitions, each reading a place of its own
 * that always holds tokens (every transition has work: the allocation weighs them all), for
 * bench/net-flat.mjs. In a fresh process, in steady state: each round one firing ends (its
 * transition records a service time, its token is consumed, a new token arrives in its place)
 * and the scheduler decides with one free worker, which starts one firing.
 *
 *   node bench/net-flat-decide.mjs ROOT N W ROUNDS   prints {"decideUs", "allocateUs", "incremental"}
 *
 * decideUs: microseconds per decision, what the runner pays per start: the incremental
 * Scheduler's decide(), told what changed; or, in a build without it (ROOT an older checkout),
 * schedule() over the whole marking. allocateUs: allocateWorkers over all N transitions, once per
 * decision (what the scheduler called per start before it was incremental). Service times are
 * drawn (seeded) between 10 and 50 ms, so that the weights differ.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [ROOT, N0, W0 = '4', R0 = '2000'] = process.argv.slice(2);
const N = Number(N0);
const W = Number(W0);
const ROUNDS = Number(R0);
const plan = await import(pathToFileURL(path.join(ROOT, 'dist', 'net', 'plan', 'scheduler.js')).href);
const { allocateWorkers } = await import(pathToFileURL(path.join(ROOT, 'dist', 'net', 'plan', 'allocate.js')).href);

let seed = 12345;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const TOKENS = 3;
const places = new Map();
const transitions = new Map();
const nextSeq = [];
for (let i = 0; i < N; i++) {
  const tokens = [];
  for (let k = 1; k <= TOKENS; k++)
    tokens.push({ filename: `p${i}-${k}`, seq: BigInt(k), key: `k${k}`, seen: 0, nop: false });
  nextSeq.push(TOKENS + 1);
  places.set(`p${i}`, { name: `p${i}`, order: 'sequence', next: 1n, tokens, count: TOKENS, incoming: 0, claimed: 0 });
  const serviceTimes = Array.from({ length: 5 }, () => 10 + Math.round(40 * rand()));
  transitions.set(`t${i}`, {
    name: `t${i}`,
    inputs: [{ place: `p${i}`, take: 1 }],
    outputs: [],
    inhibit: [],
    workers: 1,
    running: 0,
    stopped: false,
    serviceTimes,
  });
}
const source = { place: (n) => places.get(n), transition: (n) => transitions.get(n) };
const incremental = typeof plan.Scheduler === 'function';
const scheduler = incremental ? new plan.Scheduler([...transitions.values()], places.values(), source) : undefined;
let rotation = 0;
const running = [];
let busy = 0;

/** A start: its token claimed, its transition running. */
function begin(s) {
  const t = transitions.get(s.transition);
  const p = places.get(s.tokens[0].place);
  transitions.set(t.name, { ...t, running: t.running + 1 });
  places.set(p.name, {
    ...p,
    tokens: p.tokens.filter((x) => x !== s.tokens[0].token),
    claimed: p.claimed + 1,
    next: s.tokens[0].token.seq + 1n,
  });
  running.push(s);
  busy++;
  scheduler?.placeChanged(p.name);
  scheduler?.transitionChanged(t.name);
}

/** The oldest firing ends: a service time, its token consumed, a new one in its place. */
function end() {
  const s = running.shift();
  const t = transitions.get(s.transition);
  const p = places.get(s.tokens[0].place);
  const i = Number(p.name.slice(1));
  const tok = { filename: `${p.name}-${nextSeq[i]}`, seq: BigInt(nextSeq[i]++), key: 'k', seen: 0, nop: false };
  transitions.set(t.name, {
    ...t,
    running: t.running - 1,
    serviceTimes: [...t.serviceTimes.slice(1), 10 + Math.round(40 * rand())],
  });
  places.set(p.name, { ...p, tokens: [...p.tokens, tok], claimed: p.claimed - 1 });
  busy--;
  scheduler?.placeChanged(p.name);
  scheduler?.transitionChanged(t.name);
}

function decide() {
  const pool = { totalWorkers: W, freeWorkers: W - busy, now: 0 };
  if (scheduler) return scheduler.decide(pool);
  const r = plan.schedule({ places, transitions, ...pool, rotation });
  rotation = r.rotation;
  return r;
}

// Fill the pool (the first decision reads everything: not timed), then warm up.
for (const s of decide().starts) begin(s);
const round = () => {
  end();
  const t0 = performance.now();
  const r = decide();
  const ms = performance.now() - t0;
  for (const s of r.starts) begin(s);
  return ms;
};
/** Mean ms of fn over `rounds` calls, or fewer once BUDGET_MS has passed (at least 20): a slow build takes its time. */
const BUDGET_MS = 4000;
function timeIt(rounds, fn) {
  let total = 0;
  let k = 0;
  const t0 = performance.now();
  for (; k < rounds && (k < 20 || performance.now() - t0 < BUDGET_MS); k++) total += fn();
  return total / k;
}
timeIt(Math.min(200, ROUNDS), round); // warm-up
const decideMs = timeIt(ROUNDS, round);
const stats = new Map(
  [...transitions.values()].map((t) => [
    t.name,
    { queueLength: places.get(t.inputs[0].place).tokens.length + t.running, serviceTimes: t.serviceTimes },
  ]),
);
const allocateMs = timeIt(Math.max(20, Math.round(ROUNDS / 20)), () => {
  const a0 = performance.now();
  allocateWorkers(W, stats, new Set());
  return performance.now() - a0;
});
process.stdout.write(`${JSON.stringify({ decideUs: decideMs * 1000, allocateUs: allocateMs * 1000, incremental })}\n`);
