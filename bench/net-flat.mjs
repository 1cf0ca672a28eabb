/**
 * Issue 30, part 2: the net runner flat in the number of places and transitions. Called by
 * bench/net.mjs (section `flat`), which puts the markdown into docs/benchmarks.md. Each figure is
 * a ratio measured in the same run, rounds interleaved, with the machine's load around each row:
 *
 * - the runner's CPU per firing over nets of 10, 1,000 and 10,000 places (one transition with no
 *   output each, the same 1,000 firings), against itself at 10 places;
 * - one decision of the scheduler with 10,000 transitions, each with work, against itself with 50.
 * `fspl net run --drain` over 1,000 queues made by the reference is bench/cost.mjs's (against the
 * commands' own floor).
 *
 * ROOT (ctx.root, `--root` of bench/net.mjs) is the checkout whose build runs the nets and the
 * scheduler: another checkout's to measure it side by side with this one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { manyQueues } from './common.mjs';
import { load } from './net-targets.mjs';

const RUN = fileURLToPath(new URL('./net-flat-run.mjs', import.meta.url));
const DECIDE = fileURLToPath(new URL('./net-flat-decide.mjs', import.meta.url));

export async function benchFlat(ctx) {
  const { opts, log, median, table, freshDir, timed, NODE, Net } = ctx;
  const root = ctx.root;
  const Q = opts.quick;
  const rounds = opts.rounds;
  const rows = [];
  const notes = [];
  const json = (argv) => JSON.parse(timed(argv, {}).stdout.trim().split('\n').pop());
  const span = (l0) => `${l0.toFixed(2)}–${load().toFixed(2)}`;

  // ---- The runner's CPU per firing, 10 / 1,000 / 10,000 places, the same firings.
  const sizes = Q ? [10, 100, 1000] : [10, 1000, 10_000];
  const FIRINGS = Q ? 100 : 1000;
  /** The places with tokens, at every size: the others stay idle (the places the runner must not pay for). */
  const ACTIVE = 10;
  const seeds = new Map();
  for (const n of sizes) {
    const dir = freshDir(`flat-seed-${n}`);
    const file = path.join(dir, 'net.yaml');
    fs.writeFileSync(file, manyQueues(n, '[cat]'));
    const net = Net.load(file);
    log(`flat: making a net of ${n} places, ${FIRINGS} tokens`);
    net.init();
    for (let i = 0; i < FIRINGS; i++) await net.put(`q${i % ACTIVE}`, Buffer.from(`${i}\n`), { key: `k${i}` });
    seeds.set(n, dir);
  }
  const per = new Map(sizes.map((n) => [n, []]));
  const l0 = load();
  for (let r = 0; r < rounds; r++) {
    for (const n of sizes) {
      log(`flat: runner CPU per firing, ${n} places (round ${r + 1} of ${rounds})`);
      const dir = `${seeds.get(n)}-run`;
      fs.cpSync(seeds.get(n), dir, { recursive: true });
      const m = json([NODE, RUN, root, path.join(dir, 'net.yaml'), '2']);
      if (m.firings !== FIRINGS) throw new Error(`${n} places: ${m.firings} firings, expected ${FIRINGS}`);
      per.get(n).push(m);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  for (const dir of seeds.values()) fs.rmSync(dir, { recursive: true, force: true });
  const perFiring = (n) => median(per.get(n).map((m) => m.firingMs / m.firings));
  const base = perFiring(sizes[0]);
  const loadPer = span(l0);
  for (const n of sizes.slice(1)) {
    const ratio = perFiring(n) / base;
    const last = n === sizes.at(-1);
    rows.push([
      `the runner's CPU per firing, ${n.toLocaleString('en')} places (one ` +
        `transition each, no output), ${FIRINGS.toLocaleString('en')} firings`,
      `itself at ${sizes[0]} places`,
      `${perFiring(n).toFixed(2)} ms`,
      `${base.toFixed(2)} ms`,
      `${ratio.toFixed(2)}×`,
      last ? '≤ 1.2×' : '—',
      last ? (ratio <= 1.2 ? 'met' : '**missed**') : '',
      loadPer,
    ]);
  }
  const ms = (n, k) => `${median(per.get(n).map((m) => m[k])).toFixed(0)} ms`;
  notes.push(
    `Of the firings' CPU, the native spawner thread's (the addon's clone and exec; the child ` +
      `makes a table of open files of its own, not a copy of the run's, which holds one consumer ` +
      `lock open per place it reads), medians: ${sizes.map((n) => ms(n, 'spawnerMs')).join(' / ')} at ` +
      `${sizes.map((n) => n.toLocaleString('en')).join(' / ')} places (from /proc, 10 ms ticks).`,
  );
  notes.push(
    `What a run costs once, whatever its firings (the runner's CPU, medians at ` +
      `${sizes.map((n) => n.toLocaleString('en')).join(' / ')} places): its open (before the first ` +
      `firing: locks, recovery, the first scan of every place, the watches) ` +
      `${sizes.map((n) => ms(n, 'openMs')).join(' / ')}; the drain's end (after the last commit: a ` +
      `last look at every place, the leftovers) ${sizes.map((n) => ms(n, 'endMs')).join(' / ')}; the ` +
      `whole run, ${sizes
        .map((n) => `${(median(per.get(n).map((m) => m.openMs + m.firingMs + m.endMs)) / 1000).toFixed(2)} s`)
        .join(' / ')}` +
      `. Peak RSS ${sizes.map((n) => `${median(per.get(n).map((m) => m.rssMiB)).toFixed(0)} MiB`).join(' / ')}.`,
  );

  // ---- One decision, 50 / 1,000 / 10,000 transitions with work.
  const dsizes = [50, 1000, 10_000];
  const dec = new Map(dsizes.map((n) => [n, []]));
  const l1 = load();
  for (let r = 0; r < rounds; r++) {
    for (const n of dsizes) {
      log(`flat: one decision, ${n} transitions (round ${r + 1} of ${rounds})`);
      dec.get(n).push(json([NODE, DECIDE, root, String(n), '4', Q ? '300' : '2000']));
    }
  }
  const decUs = (n) => median(dec.get(n).map((m) => m.decideUs));
  const allocUs = (n) => median(dec.get(n).map((m) => m.allocateUs));
  const dRatio = decUs(10_000) / decUs(50);
  const how = dec.get(50)[0].incremental
    ? 'the incremental scheduler told what changed'
    : 'schedule() over the whole marking';
  rows.push([
    `one decision of the scheduler (${how}), 10,000 transitions with work, 4 workers`,
    'itself with 50',
    `${decUs(10_000).toFixed(0)} µs`,
    `${decUs(50).toFixed(0)} µs`,
    `${dRatio.toFixed(2)}×`,
    '≤ 2×',
    dRatio <= 2 ? 'met' : '**missed**',
    span(l1),
  ]);
  notes.push(
    `Decisions: ${dsizes.map((n) => `${n.toLocaleString('en')} transitions ${decUs(n).toFixed(0)} µs`).join(', ')}` +
      `; allocateWorkers over every transition once (what each start cost before the scheduler was ` +
      `incremental): ${dsizes.map((n) => `${allocUs(n).toFixed(0)} µs`).join(', ')}.`,
  );

  return (
    `### Issue 30: the net runner flat in the number of places

Each figure is the median of ${rounds} run(s), the rows' runs interleaved round by round; the last
column is the 1-minute load average (/proc/loadavg) before and after the row (2 cores, shared
with other work).${root !== ctx.self ? ` Build measured: \`${root}\`.` : ''}

${table(['measure', 'against', 'ours', 'against', 'ratio', 'target', '', 'load'], rows)}

- CPU per firing: a net of N places, each read by a transition with no output running \`cat\`
  (argv form: no shell), the same ${FIRINGS.toLocaleString('en')} tokens ` +
    `put before into the same ${ACTIVE} places (${FIRINGS / ACTIVE} each),
  the other N - ${ACTIVE} places idle. Each run in a fresh process (\`bench/net-flat-run.mjs\`):
  the runner of \`fspl net run\` through the library, \`Net.run({ drain: true, workers: 2 })\`; its
  own CPU (\`process.cpuUsage\`, user + system; the \`cat\`s' CPU is their own) from the first
  firing's start to the last commit, over the firings. What a run pays once (its open, the
  drain's end), which grows with the places, is in the notes below.
- One decision: \`bench/net-flat-decide.mjs\`, in a fresh process, N transitions each reading a place
  of its own that always holds tokens (so that every transition is weighed by the allocation), service
  times drawn between 10 and 50 ms, 4 workers; in steady state, each round one firing ends (a
  service time recorded, its token consumed, a new one in its place) and the scheduler decides,
  starting one firing; microseconds per decision, the first decision (which reads everything) and
  200 warm-up rounds left out.
${notes.map((n) => `- ${n}`).join('\n')}
`
  );
}
