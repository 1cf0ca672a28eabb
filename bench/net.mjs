#!/usr/bin/env node
/**
 * Benchmarks of `fspl net` (issue 11): Jefferson sharing of workers, jitter against place
 * capacity, per-hop overhead, and scale. Prints a markdown section on stdout; bench/run.mjs
 * calls it and puts the section into docs/benchmarks.md. Run alone:
 *
 *   node bench/net.mjs [--quick] [--rounds N] [--only targets,flat,jefferson,jitter,hop,scale] [--dir DIR]
 *                      [--disk-dir /var/tmp] [--ref /usr/bin/fspl] [--root DIR] [--splice docs/benchmarks.md]
 *
 * targets: the table of issue 20 (bench/net-targets.mjs), each figure against a floor measured in
 * the same run. flat: issue 30's net runner flat in the number of places (bench/net-flat.mjs).
 * --disk-dir: where the JavaScript moves run (a disk: fsync on tmpfs is free). --root: the
 * checkout (built) whose runner the flat section measures (default this one): another build's,
 * to compare it side by side.
 *
 * --splice replaces the section between its markers in that file (appends it when missing), its
 * tables there and its prose in FILE-notes.md (splice.mjs), so
 * these figures can be refreshed without the whole harness. Needs `npm run build` first.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEnv, median } from './common.mjs';
import { benchFlat } from './net-flat.mjs';
import { benchTargets } from './net-targets.mjs';
import { parseSectionArgs } from './section-args.mjs';
import { spliceSplit } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const NODE = process.execPath;
const TIME = '/usr/bin/time';
const BEGIN = '<!-- net-bench:begin -->';
const END = '<!-- net-bench:end -->';

const opts = parseSectionArgs(
  process.argv.slice(2),
  import.meta.url,
  { diskDir: '/var/tmp', root: undefined },
  {
    '--disk-dir': (o, v) => (o.diskDir = v),
    '--root': (o, v) => (o.root = path.resolve(v)),
  },
);
const want = (id) => !opts.only || opts.only.has(id);
const log = (m) => process.stderr.write(`[net-bench] ${m}\n`);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sec = (ms) => `${(ms / 1000).toFixed(2)} s`;
const x = (v) => `${v.toFixed(2)}×`;
// A net's command in shell form runs `$SHELL -c` (docs/nets.md), and every floor here runs its
// commands with `sh -c`: the nets run with SHELL=/bin/sh too, so that both sides start the same
// shell (with a login shell's SHELL=/bin/bash, each of our commands started bash and each of the
// floor's dash: about 0.5 ms more a command here, charged to the runner).
process.env.SHELL = '/bin/sh';
const ENV = benchEnv();

const lib = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
const { Net } = lib;
const { simulate } = await import(pathToFileURL(path.join(ROOT, 'dist', 'net-tools.js')).href);

let WORK;
let counter = 0;
function freshDir(name) {
  const d = path.join(WORK, `${name}-${counter++}`);
  fs.mkdirSync(d, { recursive: true });
  return d;
}

function table(headers, rows) {
  return [
    `| ${headers.join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** Run a command under GNU time: wall ms, CPU s (user+sys, children included), max RSS KiB. */
function timed(argv, { cwd, env = ENV } = {}) {
  const tf = path.join(WORK, `time-${counter++}`);
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TIME, ['-f', '%e %U %S %M', '-o', tf, ...argv], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr.toString().slice(-2000)}`);
  const [, u, s, m] = fs.readFileSync(tf, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  return { wall, cpu: u + s, rssKiB: m, stdout: r.stdout.toString() };
}

function writeNet(dir, yaml) {
  const file = path.join(dir, 'net.yaml');
  fs.writeFileSync(file, yaml);
  const net = Net.load(file);
  net.init();
  return { file, net };
}

async function fill(net, place, n, payload = (i) => `${i}\n`) {
  for (let i = 0; i < n; i++) await net.put(place, Buffer.from(payload(i)), { key: `k${i}` });
}

function jobsIn(dir) {
  return fs.readdirSync(path.join(dir, 'jobs')).filter((n) => /^fspl-.*\.fspl$/.test(n)).length;
}

function expectAll(dir, n, what) {
  const got = jobsIn(dir);
  if (got !== n) throw new Error(`${what}: ${got} tokens arrived, expected ${n}`);
}

/**
 * Run a net to the end in this process (the runner of `fspl net run`): makespan from the first
 * start to the last commit, and the mean firing duration of each transition.
 */
async function inProcessRun(net, workers) {
  let first;
  let last = 0;
  const times = {};
  await net.run({
    drain: true,
    workers,
    onEvent: (e) => {
      const now = performance.now();
      if (e.type === 'start' && first === undefined) first = now;
      if (e.type === 'commit') {
        last = now;
        (times[e.transition] ??= []).push(e.ms);
      }
    },
  });
  return { makespan: last - first, svc: Object.fromEntries(Object.entries(times).map(([t, xs]) => [t, mean(xs)])) };
}

// ---------------------------------------------------------------- Jefferson

/**
 * What a stage's command costs on this machine with no fspl at all: `concurrency` shell loops at
 * once, each running it `n` times back to back (stdin from /dev/null); ms per run, the median of
 * the loops. The floor for any runner of these commands here, process starts included.
 */
async function standaloneMs(command, concurrency, n) {
  const loop = `i=0; while [ $i -lt ${n} ]; do sh -c '${command}' </dev/null >/dev/null; i=$((i+1)); done`;
  const one = () =>
    new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      spawn('sh', ['-c', loop], { stdio: 'ignore' })
        .on('error', reject)
        .on('exit', () => resolve(Number(process.hrtime.bigint() - t0) / 1e6 / n));
    });
  return median(await Promise.all(Array.from({ length: concurrency }, one)));
}

async function benchJefferson() {
  const N = opts.quick ? 10 : 200;
  const stages = [
    ['s10', 10],
    ['s20', 20],
    ['s40', 40],
  ];
  const yaml = (cap) => `places: { a: {}, b: {}, c: {}, d: {} }
transitions:
  s10: { in: a, out: b, workers: ${cap}, run: "sleep 0.01; cat" }
  s20: { in: b, out: c, workers: ${cap}, run: "sleep 0.02; cat" }
  s40: { in: c, out: d, workers: ${cap}, run: "sleep 0.04; cat" }
`;
  const nominal = Object.fromEntries(stages.map(([t, ms]) => [t, { mean: ms, jitter: 0 }]));
  const rows = [];
  const realRun = async (cap, workers) => {
    const dir = freshDir('jefferson');
    const { net } = writeNet(dir, yaml(cap));
    await fill(net, 'a', N);
    const r = await inProcessRun(net, workers);
    expectAll(path.join(dir, 'places/d'), N, 'jefferson');
    fs.rmSync(dir, { recursive: true, force: true });
    return { ...r, model: net.model };
  };
  for (const W of [2, 4]) {
    log(`Jefferson: ${N} tokens, stages 10/20/40 ms, --workers ${W} (${opts.rounds} rounds)`);
    const runs = [];
    for (let i = 0; i < opts.rounds; i++) runs.push(await realRun(W, W));
    const wall = median(runs.map((r) => r.makespan));
    const model = runs[0].model;
    const svc = Object.fromEntries(stages.map(([t]) => [t, { mean: median(runs.map((r) => r.svc[t])), jitter: 0 }]));
    const simNom = simulate(model, { tokens: N, workers: W, service: nominal });
    const simMeas = simulate(model, { tokens: N, workers: W, service: svc });
    const slowNom = 40;
    const slowMeas = svc.s40.mean;
    // A static equal split gives each stage W/3 of the pool for the whole run: the slowest stage
    // then needs N x its time / (W/3), after the first token reached it.
    const staticNom = (N * slowNom * 3) / W + 10 + 20;
    const staticMeas = (N * slowMeas * 3) / W + svc.s10.mean + svc.s20.mean;
    // The commands alone, W at once (as W workers run them), no fspl: the work the bound should count here.
    const alone = {};
    for (const [t, ms] of stages)
      alone[t] = { mean: await standaloneMs(`sleep 0.0${ms / 10}; cat`, W, opts.quick ? 5 : 40), jitter: 0 };
    const simAlone = simulate(model, { tokens: N, workers: W, service: alone });
    rows.push({ W, wall, simNom, simMeas, staticNom, staticMeas, svc, alone, simAlone });
  }
  log(`Jefferson: one worker per stage (caps 1, --workers 3)`);
  const one = [];
  for (let i = 0; i < opts.rounds; i++) one.push(await realRun(1, 3));
  const oneWall = median(one.map((r) => r.makespan));
  const oneSim = simulate(one[0].model, { tokens: N, workers: 3, service: nominal });

  const t = table(
    [
      '--workers',
      'real run (median makespan)',
      '`net simulate`, measured service times',
      'real / simulated',
      'lower bound, nominal times',
      'real / bound',
      'lower bound, the commands alone',
      'real / bound',
      'lower bound, measured times',
      'real / bound',
      'static equal split (W/3 per stage), nominal / measured',
    ],
    rows.map((r) => [
      String(r.W),
      sec(r.wall),
      sec(r.simMeas.makespan),
      x(r.wall / r.simMeas.makespan),
      sec(r.simNom.lowerBound),
      x(r.wall / r.simNom.lowerBound),
      sec(r.simAlone.lowerBound),
      x(r.wall / r.simAlone.lowerBound),
      sec(r.simMeas.lowerBound),
      x(r.wall / r.simMeas.lowerBound),
      `${sec(r.staticNom)} / ${sec(r.staticMeas)}`,
    ]),
  );
  const aloneLine = rows
    .map(
      (r) =>
        `${r.W} at once: ${Object.entries(r.alone)
          .map(([k, v]) => `${k} ${v.mean.toFixed(1)} ms`)
          .join(', ')}`,
    )
    .join('; ');
  const svcLine = rows
    .map(
      (r) =>
        `--workers ${r.W}: ${Object.entries(r.svc)
          .map(([k, v]) => `${k} ${v.mean.toFixed(1)} ms`)
          .join(', ')}`,
    )
    .join('; ');
  const met = (v) => (v <= 1.15 ? 'met' : 'missed');
  const targets = rows
    .map(
      (r) =>
        `W=${r.W}: ${x(r.wall / r.simAlone.lowerBound)} the bound with the commands' own times (` +
        `${met(r.wall / r.simAlone.lowerBound)}), ${x(r.wall / r.simMeas.lowerBound)} with the times ` +
        `measured in the run (${met(r.wall / r.simMeas.lowerBound)}), ${x(r.wall / r.simNom.lowerBound)} ` +
        `with nominal times (${met(r.wall / r.simNom.lowerBound)}); static split ` +
        `${r.wall < r.staticMeas ? 'beaten' : 'not beaten'} with measured times, ` +
        `${r.wall < r.staticNom ? 'beaten' : 'not beaten'} with nominal times; real and simulated within ` +
        `${(Math.abs(r.wall / r.simMeas.makespan - 1) * 100).toFixed(0)}%`,
    )
    .join('; ');
  return (
    `### Jefferson: sharing the workers among the stages

Three stages whose commands sleep 10, 20 and 40 ms (\`sleep 0.0N; cat\`), ${N} tokens put into the
first place before the run, then the net run to the end by the runner of \`fspl net run\`
(\`Net.run({ drain: true, workers: W })\`, in the benchmark's process) with \`workers: W\` on every
transition (so only the allocation limits them). Makespan: from the first firing's start to
the last commit (the CLI's start-up left out). Median of ${opts.rounds} runs.

${t}

- The measured service times (a firing's duration as the runner sees it: spawn of \`sh\`, \`sleep\`,
  \`cat\`, exit; mean over all firings of each stage, median over the runs): ${svcLine}.
  The difference from the nominal 10/20/40 ms is the cost of starting processes on this machine.
- The commands alone (no fspl at all: W shell loops at once, each running the stage's command
  back to back with \`sh -c\`; ms per run, median of the loops): ${aloneLine}. Even from a
  shell, \`sleep 0.01; cat\` takes well over 10 ms here: \`sleep\` and \`cat\` are started each
  time, and on 2 cores W of them at once slow one another down.
- Lower bound: the larger of the total work over the pool and, for each stage, its own work over
  the workers it may use plus the time one token needs before and after it (\`lowerBound\` in
  src/net/plan/simulate.ts). "Nominal" uses 10/20/40 ms; "the commands alone" the times just above
  (the floor for any runner on this machine); "measured" the service times the run itself saw.
- \`net simulate\` is run with the measured mean service times (no jitter): the same scheduler in
  virtual time. Its makespans with the nominal times: ` +
    `${rows.map((r) => `${sec(r.simNom.makespan)} (W=${r.W})`).join(', ')}.
- Static equal split: each stage has W/3 of the pool for the whole run (fluid: W=2 cannot be
  split into whole workers), so the 40 ms stage alone needs N × 40 ms × 3 / W.
- Targets (≤ 1.15× the lower bound, better than the static split, real and simulated within 10%): ${targets}.
  Against nominal times the bound assumes a firing costs only its \`sleep\`, which no runner can
  reach here: the commands alone already exceed it (above). The bound with the commands' own
  times is the one that counts the work that is really there; the runner starts each command
  through the native addon's clone and exec (native/child_start.c), not a fork of the whole runner.
- One worker per stage (\`workers: 1\` on each, \`--workers 3\`): real ${sec(oneWall)}, ` +
    `simulated ${sec(oneSim.makespan)} with nominal times (the 40 ms stage alone: ${sec(N * 40)}).
`
  );
}

// ---------------------------------------------------------------- jitter and capacity

function chainNet(dir, cap, runFor) {
  const places = { p0: {} };
  const transitions = {};
  for (let i = 1; i <= 8; i++) {
    places[`p${i}`] = i < 8 && cap !== undefined ? { capacity: cap } : {};
    transitions[`s${i}`] = { in: `p${i - 1}`, out: `p${i}`, ...runFor(i) };
  }
  return { places, transitions, dir };
}

async function benchJitter() {
  const N = opts.quick ? 30 : 300;
  const NREAL = opts.quick ? 8 : N;
  const seeds = opts.quick ? [1, 2] : [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const caps = [1, 2, 4, 8, undefined];
  const capName = (c) => (c === undefined ? 'unbounded' : String(c));
  log(`jitter: simulated, 8 stages of 20 ms, ${N} tokens, ${seeds.length} seeds`);
  const sim = new Map();
  for (const cap of caps) {
    const model = lib.defineNet(chainNet(WORK, cap, () => ({ run: null })));
    for (const j of [0, 1]) {
      const ms = seeds.map(
        (seed) => simulate(model, { tokens: N, workers: 8, seed, defaultService: { mean: 20, jitter: j } }).makespan,
      );
      sim.set(`${capName(cap)}/${j}`, mean(ms));
    }
  }
  const pen = (cap) => sim.get(`${capName(cap)}/1`) / sim.get(`${capName(cap)}/0`) - 1;
  const simRows = caps.map((cap) => [
    capName(cap),
    sec(sim.get(`${capName(cap)}/0`)),
    sec(sim.get(`${capName(cap)}/1`)),
    `${(pen(cap) * 100).toFixed(1)}%`,
    x(pen(cap) / pen(1)),
  ]);
  const zero = caps.map((c) => sim.get(`${capName(c)}/0`));
  const spread0 = Math.max(...zero) / Math.min(...zero) - 1;

  // Real runs: each token carries its 8 service times (uniform 0-40 ms for ±100%, 20 ms for 0%);
  // stage i sleeps the i-th with shell built-ins and \`sleep\`, and passes the payload on.
  const realCaps = opts.quick ? [1, 2] : [1, 2, undefined];
  let rnd = 12345;
  const rand = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  /** Median makespans by `cap/jitter` of real runs of the nets `make(dir, cap)` builds. */
  const realRuns = async (caps, what, make) => {
    const out = new Map();
    for (const cap of caps) {
      for (const j of [0, 1]) {
        log(`jitter: real run, ${what}, capacity ${capName(cap)}, jitter ${j * 100}%`);
        const walls = [];
        for (let r = 0; r < (opts.quick ? 1 : Math.min(2, opts.rounds)); r++) {
          rnd = 12345; // every capacity sees the same service times
          const dir = freshDir('jitter');
          const net = make(dir, cap);
          await fill(
            net,
            'p0',
            NREAL,
            () => `${Array.from({ length: 8 }, () => (j ? (0.04 * rand()).toFixed(4) : '0.02')).join(' ')}\n`,
          );
          const t = await inProcessRun(net, 8);
          expectAll(path.join(dir, 'places/p8'), NREAL, `jitter (${what})`);
          walls.push(t.makespan);
          fs.rmSync(dir, { recursive: true, force: true });
        }
        out.set(`${capName(cap)}/${j}`, median(walls));
      }
    }
    return out;
  };
  const real = await realRuns(realCaps, 'commands', (dir, cap) => {
    const yamlT = Array.from(
      { length: 8 },
      (_, k) =>
        `  s${k + 1}: { in: p${k}, out: p${k + 1}, env: { I: "${k + 1}" ` +
        `}, run: 'read l; set -- $l; eval "sleep \\\${$I}"; echo "$l"' }`,
    ).join('\n');
    const yamlP = Array.from(
      { length: 9 },
      (_, k) => `  p${k}: {${k > 0 && k < 8 && cap !== undefined ? ` capacity: ${cap} ` : ''}}`,
    ).join('\n');
    return writeNet(dir, `places:\n${yamlP}\ntransitions:\n${yamlT}\n`).net;
  });
  // The same in real time with JavaScript transitions (\`fn\`): real places, files, journal and
  // commits, the runner's scheduling, and no process started per firing, which is what the
  // command runs above mostly measure on 2 cores (8 stages starting processes at once).
  const jsCaps = opts.quick ? [1, 2] : [1, 2, 8, undefined];
  const fnFor = (i) => ({
    fn: async (ctx) => {
      let text = '';
      for await (const c of ctx.inputs[0].payload()) text += c;
      await new Promise((resolve) => setTimeout(resolve, Number(text.trim().split(' ')[i - 1]) * 1000));
      return text;
    },
  });
  const js = await realRuns(jsCaps, 'JavaScript transitions', (dir, cap) => {
    const net = Net.define(chainNet(dir, cap, fnFor));
    net.init();
    return net;
  });
  const rowsOf = (m, caps, label) =>
    caps.map((cap) => {
      const p = m.get(`${capName(cap)}/1`) / m.get(`${capName(cap)}/0`) - 1;
      const p1 = m.get('1/1') / m.get('1/0') - 1;
      return [
        `${capName(cap)} (${label})`,
        sec(m.get(`${capName(cap)}/0`)),
        sec(m.get(`${capName(cap)}/1`)),
        `${(p * 100).toFixed(1)}%`,
        x(p / p1),
      ];
    });
  const realRows = [
    ...rowsOf(js, jsCaps, 'real run, JavaScript transitions'),
    ...rowsOf(real, realCaps, 'real run, commands'),
  ];
  const penOf = (m, c) => m.get(`${capName(c)}/1`) / m.get(`${capName(c)}/0`) - 1;
  const spreadOf = (m, caps) =>
    Math.max(...caps.map((c) => m.get(`${capName(c)}/0`))) / Math.min(...caps.map((c) => m.get(`${capName(c)}/0`))) - 1;
  return (
    `### Jitter and place capacity (the thesis's experiment)

A chain of 8 stages of 20 ms nominal, ${N} tokens, one worker per stage (\`workers: 1\`, a pool
of 8), capacity 1, 2, 4, 8 or unbounded on the 7 places between stages. Jitter ±100%: each
service time uniform in 0–40 ms; 0%: exactly 20 ms. Penalty: makespan with jitter over the
makespan without, minus 1. The upper rows are \`net simulate\` (the scheduler in virtual time;
mean over ${seeds.length} seeds); the "real run" rows run the ` +
    `net (the runner, in the benchmark's process, 8 workers) with
commands sleeping each token's own service times (${NREAL} tokens; ` +
    `median of ${opts.quick ? 1 : Math.min(2, opts.rounds)} runs).

${table(
  ['capacity', 'makespan, 0% jitter', 'makespan, ±100%', 'penalty', 'penalty / penalty at capacity 1'],
  [...simRows, ...realRows],
)}

- Target: penalty(capacity 2) ≤ 0.6 × penalty(capacity 1) at ±100%: simulated ` +
    `${x(pen(2) / pen(1))}; real, JavaScript transitions ${x(penOf(js, 2) / penOf(js, 1))}` +
    `${real.has('2/1') ? `; real, commands ${x(penOf(real, 2) / penOf(real, 1))}` : ''}.
- Target: at 0% jitter all capacities agree within 3%: simulated spread ${(spread0 * 100).toFixed(2)}` +
    `%; real, JavaScript transitions ${(spreadOf(js, jsCaps) * 100).toFixed(1)}%` +
    `${real.has('2/0') ? `; real, commands ${(spreadOf(real, realCaps) * 100).toFixed(1)}%` : ''}.
- Capacity counts every token in a place, also one its reader is working on; a stage may start
  while its output place is full, and its commit waits until the reader has committed (the
  thesis's "blocking after service"). Every run of a row gets the same service times.
- The JavaScript rows are real runs of the runner (files, journal, commits, real time) whose
  transitions are JavaScript functions that sleep, so no process is started: they show the
  scheduling itself. The command rows start ${2 * 8 * NREAL} processes (\`sh\` and \`sleep\`)
  on 2 shared cores. With capacity 1 the stages move in step, so the 8 of them start their
  processes at the same moments and queue for the 2 cores; with more room they drift apart and
  the starts overlap with other stages' sleeping. That, not the scheduling, is why capacity 1
  is slower there even without jitter.
- A negative penalty (more room, JavaScript transitions) means the run with jitter was the
  faster: without jitter the 8 stages finish at the same moments and their commits (about 45
  system calls each, 5 of them fsyncs) queue on the runner's one thread; jitter spreads them out.
`
  );
}

// ---------------------------------------------------------------- per-hop overhead

async function benchHop() {
  const N = opts.quick ? 10 : 1000;
  const M = opts.quick ? 1 : 20; // tokens for the queue-process chains: 3 processes per token per hop
  const hops = 5;
  const lines = [];
  for (const workers of [1, 2]) {
    log(`hop: net chain of ${hops} cat, ${N} tokens, --workers ${workers}`);
    const walls = [];
    const cpus = [];
    for (let r = 0; r < opts.rounds; r++) {
      const dir = freshDir('hop');
      const yaml =
        `places: { ${Array.from({ length: hops + 1 }, (_, i) => `q${i}: {}`).join(', ')} }\n` +
        `transitions:\n${Array.from(
          { length: hops },
          (_, i) => `  t${i}: { in: q${i}, out: q${i + 1}, run: [cat] }`,
        ).join('\n')}\n`;
      const { file, net } = writeNet(dir, yaml);
      await fill(net, 'q0', N);
      const t = timed([NODE, BIN, 'net', 'run', '--drain', '--workers', String(workers), file], { cwd: dir });
      expectAll(path.join(dir, `places/q${hops}`), N, 'hop');
      walls.push(t.wall);
      cpus.push(t.cpu);
      fs.rmSync(dir, { recursive: true, force: true });
    }
    lines.push([
      `\`fspl net run --workers ${workers}\`, ${hops} transitions \`cat\``,
      String(N),
      (median(walls) / (N * hops)).toFixed(2),
      ((median(cpus) * 1000) / (N * hops)).toFixed(2),
    ]);
  }
  const sides = [
    ['ours', [NODE, BIN]],
    ['reference', [opts.ref]],
  ];
  for (const [name, argv] of sides) {
    if (name === 'reference' && !fs.existsSync(opts.ref)) continue;
    log(`hop: queue-process chain (${name}), ${M} tokens`);
    const walls = [];
    const cpus = [];
    for (let r = 0; r < opts.rounds; r++) {
      const dir = freshDir('qp');
      const q = (i) => path.join(dir, `q${i}`);
      const fsplCmd = argv.map((a) => `'${a}'`).join(' ');
      for (let i = 0; i <= hops; i++) spawnSync(argv[0], [...argv.slice(1), 'queue-init', '-q', q(i)], { env: ENV });
      // Tokens for the first queue: prepared by the same side (not timed).
      for (let i = 0; i < M; i++) {
        const s = spawnSync(
          'sh',
          [
            '-c',
            `printf '%s\\n' ${i} | ${fsplCmd} prepare -s '${dir}/seq0' -i - | ${fsplCmd} queue-write -q '${q(0)}'`,
          ],
          { env: ENV },
        );
        if (s.status !== 0) throw new Error(`queue-write: ${s.stderr}`);
      }
      let wall = 0;
      let cpu = 0;
      for (let i = 0; i < hops; i++) {
        const script =
          `cat | ${fsplCmd} prepare -s '${dir}/seq${i + 1}' -i - ` + `| ${fsplCmd} queue-write -q '${q(i + 1)}'`;
        const t = timed([...argv, 'queue-process', '-q', q(i), 'sh', '--', '-c', script]);
        wall += t.wall;
        cpu += t.cpu;
      }
      expectAll(q(hops), M, `queue-process chain (${name})`);
      walls.push(wall);
      cpus.push(cpu);
      fs.rmSync(dir, { recursive: true, force: true });
    }
    lines.push([
      `\`queue-process\` → \`sh -c 'cat \\| fspl prepare \\| fspl ` +
        `queue-write'\`, ${name}, ${hops} hops one after the other`,
      String(M),
      (median(walls) / (M * hops)).toFixed(2),
      ((median(cpus) * 1000) / (M * hops)).toFixed(2),
    ]);
  }
  const netMs = Number(lines[0][2]);
  const oursQp = lines.find((l) => l[0].includes(', ours,'));
  return (
    `### Per-hop overhead

A chain of ${hops} transitions running \`cat\` (one process per firing), small tokens; against the
same chain built from Filespooler commands: each hop a \`queue-process\` whose command pipes the
payload through \`cat\`, \`fspl prepare\` and \`fspl queue-write\` into the next queue (so 3 more
processes per token and hop, two of them \`fspl\`). Milliseconds per token per hop: wall time,
and CPU (user+sys of the whole process tree) — the better measure on a shared machine. Median
of ${opts.rounds} runs.

${table(['chain', 'tokens', 'ms per token per hop (wall)', 'CPU ms per token per hop'], lines)}

- Target: no slower than our own \`queue-process\` chain: ` +
    `${oursQp ? `${netMs} ms against ${oursQp[2]} ms (${x(netMs / Number(oursQp[2]))})` : 'not measured'}.
`
  );
}

// ---------------------------------------------------------------- scale

const CAPPED_MIB = 128;

async function benchScale() {
  const sizes = opts.quick ? [300, 1000] : [10_000, 30_000, 100_000];
  const rows = [];
  for (const n of sizes) {
    log(`scale: ${n} tokens through 2 moves`);
    const dir = freshDir('scale');
    const { file, net } = writeNet(
      dir,
      `places: { a: {}, b: {}, c: {} }\ntransitions:\n` +
        `  m1: { in: a, out: b, run: null }\n  m2: { in: b, out: c, run: null }\n`,
    );
    const t0 = Date.now();
    await fill(net, 'a', n, () => 'x');
    const putMs = Date.now() - t0;
    fs.cpSync(dir, `${dir}-copy`, { recursive: true });
    const t = timed([NODE, BIN, 'net', 'run', '--drain', file], { cwd: dir });
    expectAll(path.join(dir, 'places/c'), n, 'scale');
    fs.rmSync(dir, { recursive: true, force: true });
    // The same with V8's old generation capped: what the run retains, rather than the garbage V8 lets pile up.
    fs.renameSync(`${dir}-copy`, dir);
    const c = timed([NODE, BIN, 'net', 'run', '--drain', file], {
      cwd: dir,
      env: { ...ENV, NODE_OPTIONS: `--max-old-space-size=${CAPPED_MIB}` },
    });
    expectAll(path.join(dir, 'places/c'), n, 'scale (capped heap)');
    rows.push({ n, ...t, putMs, capped: c });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const last = rows[rows.length - 1];
  return (
    `### Scale: many tokens through moves

${sizes.map((n) => n.toLocaleString('en')).join(', ')} tokens (1-byte payloads) through a chain of two
transitions with \`run: null\` (tokens are moved, no process runs); \`fspl net run --drain\` with
the default pool. One run each.

${table(
  [
    'tokens',
    'wall',
    'tokens per second (each moved twice)',
    'CPU (user+sys)',
    'peak RSS',
    `peak RSS, \`--max-old-space-size=${CAPPED_MIB}\``,
    'putting them first (library `put`)',
  ],
  rows.map((r) => [
    r.n.toLocaleString('en'),
    sec(r.wall),
    Math.round(r.n / (r.wall / 1000)).toLocaleString('en'),
    `${r.cpu.toFixed(2)} s`,
    `${(r.rssKiB / 1024).toFixed(0)} MiB`,
    `${(r.capped.rssKiB / 1024).toFixed(0)} MiB (wall ${sec(r.capped.wall)})`,
    sec(r.putMs),
  ]),
)}

- Peak RSS ${(last.rssKiB / rows[0].rssKiB).toFixed(2)}× for ${(last.n / rows[0].n).toFixed(0)}` +
    `× the tokens by default, ${(last.capped.rssKiB / rows[0].capped.rssKiB).toFixed(2)}× with ` +
    `V8's old generation capped at ${CAPPED_MIB} MiB; from ${rows[1].n.toLocaleString('en')} to ` +
    `${last.n.toLocaleString('en')} tokens (both beyond the index window): ` +
    `${(last.rssKiB / rows[1].rssKiB).toFixed(2)}× and ` +
    `${(last.capped.rssKiB / rows[1].capped.rssKiB).toFixed(2)}×.
- Why it is flat: the runner indexes at most a window of each place it reads (its 16,384 lowest numbers; ` +
    `tokens written by a net carry their number in their file name, so a streamed directory scan finds them ` +
    `without opening the files), and reads the next window in once three quarters of it have been consumed. ` +
    `Places the run only writes (sinks, error places) are not indexed at all. What still varies is garbage: by ` +
    `default V8 lets it pile up longer in a longer run before a full collection; capped, the run keeps to ` +
    `what it retains.
- Before the window (the whole place indexed; same machine, 2026-11-23): ` +
    `10,000 tokens 125 MiB, 100,000 tokens 300 MiB (211 MiB capped).
`
  );
}

// ---------------------------------------------------------------- main

WORK = fs.mkdtempSync(path.join(opts.dir, 'fspl-net-bench-'));
const t0 = Date.now();
let md = '';
try {
  const load = os.loadavg()[0].toFixed(2);
  const parts = [];
  // A failing section is reported in its place; the others still count.
  const section = async (id, title, fn) => {
    if (!want(id)) return;
    try {
      parts.push(await fn());
    } catch (err) {
      log(`${id} FAILED: ${err.message}`);
      parts.push(`### ${title}\n\n**Failed**: ${String(err.message).split('\n')[0]}\n`);
      process.exitCode = 1;
    }
  };
  await section('targets', "Targets of issue 20: the runner against the machine's floor", () =>
    benchTargets({
      opts: { ...opts, rounds: opts.quick ? 1 : 3 },
      log,
      median,
      table,
      freshDir,
      writeNet,
      fill,
      timed,
      Net,
      NODE,
      BIN,
      expectAll,
      diskDir: fs.existsSync(opts.diskDir) ? opts.diskDir : os.tmpdir(),
    }),
  );
  await section('flat', 'Issue 30: the net runner flat in the number of places', () =>
    benchFlat({ opts, log, median, table, freshDir, timed, NODE, Net, root: opts.root ?? ROOT, self: ROOT }),
  );
  await section('jefferson', 'Jefferson: sharing the workers among the stages', benchJefferson);
  await section('jitter', 'Jitter and place capacity', benchJitter);
  await section('hop', 'Per-hop overhead', benchHop);
  await section('scale', 'Scale: many tokens through moves', benchScale);
  md =
    `${BEGIN}
## Nets (\`fspl net\`)

Generated by \`bench/net.mjs\`${opts.quick ? ' in **quick mode** (tiny sizes: numbers mean nothing)' : ''}` +
    ` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, ${os.cpus().length} cores,
places in \`${opts.dir}\`; load average ${load} at the start, ${os.loadavg()[0].toFixed(2)} at the end (the machine was
shared with other work: wall times are noisy, CPU times less so). ${((Date.now() - t0) / 1000).toFixed(0)} s in all.

${parts.join('\n')}${END}
`;
} finally {
  fs.rmSync(WORK, { recursive: true, force: true });
}
if (opts.splice) {
  spliceSplit(opts.splice, md, BEGIN, END);
  log(`wrote the section into ${opts.splice}`);
}
process.stdout.write(md);
