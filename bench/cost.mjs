#!/usr/bin/env node
/**
 * The remaining cost per queue and per firing, against the commands' own floor: each figure of
 * the issue's table measured side by side in one run, several rounds, with the spread. Rows
 * (`--only` picks them):
 *
 *   pass   1,000 queues made by the reference, one job each (`sh -c 'cat >> F'`): the reference's
 *          cron loop (one `fspl queue-process` per queue), the commands alone (a C loop), ours
 *          (`queue-process --queues-in`, one pass): CPU of the process tree (GNU time)
 *   drain  the same queues as places of a net run by `fspl net run --drain` (measured in the same
 *          rounds as pass when both are asked for)
 *   watch  10,000 empty queues under `queue-process --watch --queues-in`: idle CPU over 30 s
 *   start  `queue-process` of an empty queue against `node -e 0`, wall
 *   typed  a person's commands, one small job or token each: `prepare | queue-write` against
 *          `node -e 0 | node -e 0` and the reference's pipeline, `net put` against `node -e 0`, wall
 *   true   one queue of 1,000 `/bin/true` jobs: ours, the reference, and a C loop making the
 *          same spawns and fsyncs (bench/floor-loop.c), wall
 *
 * Prints a markdown section on stdout; bench/run.mjs calls it (`--only C`). Run alone:
 *
 *   node bench/cost.mjs [--quick] [--rounds N] [--only pass,drain,watch,start,typed,true] [--dir DIR]
 *                       [--ref /usr/bin/fspl] [--splice docs/benchmarks.md]
 *
 * Default 5 rounds (--quick: 1, with 50 queues, 100 jobs, 200 watched queues, 3 s idle). Needs
 * `npm run build` first, GNU time, and cc for the floor rows (without it they are skipped).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchEnv, manyQueues, median, refQueuesScript, shq, underTime } from './common.mjs';
import { watchIdle } from './many.mjs';
import { parseSectionArgs } from './section-args.mjs';
import { spliceSplit } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const NODE = process.execPath;
const TIME = '/usr/bin/time';
const FLOOR_SRC = fileURLToPath(new URL('./floor-loop.c', import.meta.url));
const BEGIN = '<!-- cost-bench:begin -->';
const END = '<!-- cost-bench:end -->';
const ROWS = ['pass', 'drain', 'watch', 'start', 'typed', 'true'];

const argv = process.argv.slice(2);
const opts = parseSectionArgs(argv, import.meta.url);
if (!argv.includes('--rounds')) opts.rounds = opts.quick ? 1 : 5;
const want = (id) => !opts.only || opts.only.has(id);
const log = (m) => process.stderr.write(`[cost-bench] ${m}\n`);
function die(msg) {
  process.stderr.write(`bench/cost.mjs: ${String(msg).split('\n')[0].slice(0, 400)}\n`);
  process.exit(1);
}
for (const id of opts.only ?? []) if (!ROWS.includes(id)) die(`unknown row ${id} (rows: ${ROWS.join(',')})`);
if (!(opts.rounds >= 1)) die('--rounds wants a number ≥ 1');
if (!fs.existsSync(opts.ref)) die(`the reference ${opts.ref} is missing`);
if (!fs.existsSync(TIME)) die(`${TIME} is missing: apt-get install -y time`);

const Q = opts.quick;
const QUEUES = Q ? 50 : 1000;
const JOBS = Q ? 100 : 1000;
const WATCHED = Q ? 200 : 10_000;
const IDLE = Q ? 3 : 30;
// V8's memory reducer collects start-up's garbage once, 30 s after the last full collection of the
// start (docs/benchmarks-notes.md, "Idle CPU, and the collection 30 s after start"): idle is after it.
const SETTLE = Q ? 2 : 60;
const STARTS = Q ? 5 : 15;

process.env.SHELL = '/bin/sh';
const ENV = benchEnv();
const WORK = fs.mkdtempSync(path.join(opts.dir, 'fspl-cost-bench-'));
process.on('exit', () => fs.rmSync(WORK, { recursive: true, force: true }));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

const load = () => os.loadavg()[0].toFixed(2);
const n = (v) => v.toLocaleString('en-US');
/** A median with its spread over rounds: `0.62× (0.55×–0.71×)`. */
const spread = (xs, f, unit = '') =>
  `${f(median(xs))}${unit} (${f(Math.min(...xs))}${unit}–${f(Math.max(...xs))}${unit})`;
const sec = (xs) => spread(xs, (v) => v.toFixed(2), ' s');
const msec = (xs) => spread(xs, (v) => v.toFixed(1), ' ms');
const times = (xs) => spread(xs, (v) => v.toFixed(2), '×');
const pct = (xs) => spread(xs, (v) => (v * 100).toFixed(2), ' %');

// ------------------------------------------------------------------------------------------------
// Running and checking

/** argv under GNU time: wall seconds, CPU (user+sys) of it and its children. */
function timed(args, what, { cwd = WORK } = {}) {
  return underTime(args, { dir: WORK, cwd, env: ENV, fail: (why) => die(`${what}: ${why}`) });
}

function sh(script, what, cwd = WORK) {
  const r = spawnSync('sh', ['-c', script], { cwd, env: ENV, encoding: 'utf8' });
  if (r.status !== 0) die(`${what} failed: ${r.stderr.trim().split('\n').pop()}`);
  return r.stdout;
}

/** A fresh copy (cp -a) of a template, untimed. */
function fresh(template, name) {
  const d = path.join(WORK, name);
  fs.rmSync(d, { recursive: true, force: true });
  sh(`cp -a ${shq(template)} ${shq(d)}`, 'cp -a');
  return d;
}

const nextseq = (q) => fs.readFileSync(path.join(q, 'nextseq'), 'utf8').trim();

/** Every queue's nextseq is `seq` and its jobs/ empty. */
function checkQueues(queues, seq, what) {
  for (const q of queues) {
    if (nextseq(q) !== String(seq)) die(`${what}: ${q} has nextseq ${nextseq(q)}, expected ${seq}`);
    const left = fs.readdirSync(path.join(q, 'jobs'));
    if (left.length) die(`${what}: ${q}/jobs holds ${left.length} file(s), expected none`);
  }
}

function checkLines(file, count, what) {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  if (lines !== count) die(`${what}: ${file} holds ${lines} lines, expected ${count}`);
}

/** bench/floor-loop.c compiled with cc -O2 into WORK, or undefined (said loudly) without cc. */
function compileFloor() {
  const exe = path.join(WORK, 'floor-loop');
  const r = spawnSync('cc', ['-O2', '-o', exe, FLOOR_SRC], { encoding: 'utf8' });
  if (r.error?.code === 'ENOENT') {
    log('!!! cc is missing: the floor rows are SKIPPED (install a C compiler to measure them) !!!');
    return undefined;
  }
  if (r.status !== 0) die(`cc -O2 ${FLOOR_SRC} failed: ${r.stderr.trim().split('\n')[0]}`);
  return exe;
}

// ------------------------------------------------------------------------------------------------
// The table

const rows = [];
const notes = [];
/** One row: cells in order; `ratios` per round and `target` (ratio ≤ target) make the verdicts. */
function row(measure, figure, against, ratios, target, loads) {
  const targetText = target ? `≤ ${target.toFixed(1)}×` : '—';
  if (!ratios || !target) {
    rows.push([measure, figure, against, ratios ? times(ratios) : '—', targetText, '', '', loads]);
    return;
  }
  const met = ratios.filter((r) => r <= target).length;
  rows.push([
    measure,
    figure,
    against,
    times(ratios),
    targetText,
    median(ratios) <= target ? 'met' : '**missed**',
    `${met} of ${ratios.length}`,
    loads,
  ]);
}

// ------------------------------------------------------------------------------------------------
// pass and drain: 1,000 queues, one job each

function benchQueues(floorExe) {
  const doPass = want('pass');
  const doDrain = want('drain');
  log(`queues: making ${n(QUEUES)} queues with the reference, one job each`);
  const template = path.join(WORK, 'queues');
  fs.mkdirSync(template);
  sh(refQueuesScript(opts.ref, QUEUES), 'making the queues', template);
  const names = Array.from({ length: QUEUES }, (_, i) => `q${i}`);
  const m = { floor: [], ref: [], pass: [], drain: [] };
  const l0 = load();
  for (let round = 1; round <= opts.rounds; round++) {
    const out = (side) => {
      const f = path.join(WORK, `F-${side}`);
      fs.writeFileSync(f, '');
      return f;
    };
    // The floor: the same commands over the same job files, started by the C loop.
    if (floorExe) {
      log(`queues: the floor, round ${round} of ${opts.rounds}`);
      const dir = fresh(template, 'floor');
      const list = path.join(WORK, 'list');
      const files = names.flatMap((q) =>
        fs.readdirSync(path.join(dir, q, 'jobs')).map((j) => path.join(dir, q, 'jobs', j)),
      );
      fs.writeFileSync(list, `${files.join('\n')}\n`);
      const F = out('floor');
      m.floor.push(timed([floorExe, 'cat-loop', list, `cat >> ${F}`], 'the floor (C loop)').cpu);
      checkLines(F, QUEUES, 'the floor (C loop)');
    }
    if (doPass) {
      log(`queues: ours, queue-process --queues-in, round ${round} of ${opts.rounds}`);
      const dir = fresh(template, 'pass');
      const F = out('pass');
      const args = [NODE, BIN, 'queue-process', '--queues-in', dir, 'sh', '--', '-c', `cat >> ${F}`];
      m.pass.push(timed(args, 'ours (queue-process --queues-in)').cpu);
      checkQueues(
        names.map((q) => path.join(dir, q)),
        2,
        'ours (queue-process --queues-in)',
      );
      checkLines(F, QUEUES, 'ours (queue-process --queues-in)');
    }
    if (doDrain) {
      log(`queues: ours, net run --drain, round ${round} of ${opts.rounds}`);
      const dir = fresh(template, 'drain');
      const F = out('drain');
      const net = path.join(dir, 'net.yaml');
      fs.writeFileSync(
        net,
        manyQueues(QUEUES, JSON.stringify(`cat >> ${F}`), (i) => JSON.stringify(path.join(dir, names[i]))),
      );
      m.drain.push(timed([NODE, BIN, 'net', 'run', '--drain', net], 'ours (net run --drain)', { cwd: dir }).cpu);
      checkQueues(
        names.map((q) => path.join(dir, q)),
        2,
        'ours (net run --drain)',
      );
      checkLines(F, QUEUES, 'ours (net run --drain)');
    }
    log(`queues: the reference's loop, round ${round} of ${opts.rounds}`);
    const dir = fresh(template, 'ref');
    const F = out('ref');
    const command = shq(`cat >> ${F}`);
    const loop = `for q in ${shq(dir)}/q*; do ${shq(opts.ref)} queue-process -q "$q" sh -- -c ${command} || exit 1; done`;
    m.ref.push(timed(['sh', '-c', loop], "the reference's loop").cpu);
    checkQueues(
      names.map((q) => path.join(dir, q)),
      2,
      "the reference's loop",
    );
    checkLines(F, QUEUES, "the reference's loop");
    for (const d of ['floor', 'pass', 'drain', 'ref']) fs.rmSync(path.join(WORK, d), { recursive: true, force: true });
  }
  const loads = `${l0}–${load()}`;
  const q = n(QUEUES);
  row(
    `${q} queues, one job each (\`sh -c 'cat >> F'\`): the reference's cron loop, CPU`,
    sec(m.ref),
    '—',
    undefined,
    undefined,
    loads,
  );
  if (!floorExe) {
    row('the commands alone (the floor): **not measured, cc is missing**', '—', '—', undefined, undefined, loads);
  } else {
    row(
      'the floor: the same commands by a C loop (`posix_spawn`, `waitpid`)',
      sec(m.floor),
      "the reference's loop",
      m.floor.map((f, i) => f / m.ref[i]),
      undefined,
      loads,
    );
  }
  const above = (side) => m[side].map((c, i) => c - m.floor[i]);
  const refAbove = floorExe ? above('ref') : [];
  const sides = [
    ['pass', 'ours, `queue-process --queues-in`, one pass', 0.5],
    ['drain', 'ours, `net run --drain` over a net of these queues', 1.0],
  ];
  for (const [side, what, target] of sides) {
    if (!m[side].length) continue;
    if (!floorExe) {
      row(
        `${what}: CPU, whole`,
        sec(m[side]),
        "the reference's loop",
        m[side].map((c, i) => c / m.ref[i]),
        undefined,
        loads,
      );
      continue;
    }
    row(
      `${what}: CPU whole / above the floor`,
      `${sec(m[side])} / ${sec(above(side))}`,
      `the reference's, above the floor: ${sec(refAbove)}`,
      above(side).map((a, i) => a / refAbove[i]),
      target,
      loads,
    );
  }
}

// ------------------------------------------------------------------------------------------------
// watch: 10,000 queues idle

async function benchWatch() {
  const idle = [];
  const settle = [];
  const l0 = load();
  for (let round = 1; round <= opts.rounds; round++) {
    log(`watch: ${n(WATCHED)} queues, round ${round} of ${opts.rounds}`);
    const r = await watchIdle({
      n: WATCHED,
      idleSeconds: IDLE,
      settleSeconds: SETTLE,
      samples: 0,
      work: WORK,
      ref: opts.ref,
      log,
      die,
    });
    idle.push(r.idleCpu);
    settle.push(r.settleCpu);
  }
  const met = idle.filter((v) => v <= 0.01).length;
  rows.push([
    `${n(WATCHED)} queues under \`queue-process --watch --queues-in\`: idle CPU over ${IDLE} s`,
    `${pct(idle)} of a core`,
    '—',
    '—',
    '≤ 1 %',
    median(idle) <= 0.01 ? 'met' : '**missed**',
    `${met} of ${idle.length}`,
    `${l0}–${load()}`,
  ]);
  rows.push([
    `the ${SETTLE} s before that window (start-up's garbage collected)`,
    `${pct(settle)} of a core`,
    '—',
    '—',
    '(information)',
    '',
    '',
    `${l0}–${load()}`,
  ]);
}

// ------------------------------------------------------------------------------------------------
// start: queue-process of an empty queue against node -e 0

function wallOf(args, what) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(args[0], args.slice(1), { cwd: WORK, env: ENV, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) die(`${what} failed (${r.status}): ${r.stderr.trim().split('\n').pop()}`);
  if (r.stdout || r.stderr) die(`${what} printed something: ${(r.stdout + r.stderr).trim().split('\n')[0]}`);
  return ms;
}

/**
 * Medians of each side's wall over STARTS runs a round, the sides interleaved (A B A B); `sides`:
 * argv by name. Each side runs once first, untimed, to warm the page cache.
 */
function interleaved(sides, what) {
  const run = (k) => wallOf(sides[k], `${what}, ${k}`);
  for (const k of Object.keys(sides)) run(k);
  const m = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (let round = 1; round <= opts.rounds; round++) {
    log(`${what}: ${STARTS} runs each, round ${round} of ${opts.rounds}`);
    const t = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
    for (let i = 0; i < STARTS; i++) for (const k of Object.keys(sides)) t[k].push(run(k));
    for (const k of Object.keys(sides)) m[k].push(median(t[k]));
  }
  return m;
}

function benchStart() {
  const empty = path.join(WORK, 'empty');
  sh(`${shq(opts.ref)} queue-init -q ${shq(empty)}`, 'queue-init of the empty queue');
  const l0 = load();
  const { ours, node } = interleaved(
    { ours: [NODE, BIN, 'queue-process', '-q', empty, 'true'], node: [NODE, '-e', '0'] },
    'start',
  );
  checkQueues([empty], 1, 'the empty queue');
  row(
    '`queue-process` of an empty queue, wall',
    msec(ours),
    `\`node -e 0\`, interleaved: ${msec(node)}`,
    ours.map((v, i) => v / node[i]),
    1.1,
    `${l0}–${load()}`,
  );
}

// ------------------------------------------------------------------------------------------------
// typed: a person's commands, one small job or token each, against as many `node -e 0`

/** interleaved() over `sh -c` scripts. */
const interleavedScripts = (scripts, what) =>
  interleaved(Object.fromEntries(Object.entries(scripts).map(([k, sc]) => [k, ['sh', '-c', sc]])), what);

function benchTyped() {
  const small = path.join(WORK, 'small-job');
  fs.writeFileSync(small, 'a small job\n');
  const [ours, theirs] = ['typed-ours', 'typed-ref'].map((d) => path.join(WORK, d));
  for (const q of [ours, theirs]) sh(`${shq(opts.ref)} queue-init -q ${shq(q)}`, 'queue-init');
  const fspl = `${shq(NODE)} ${shq(BIN)}`;
  const zero = `${shq(NODE)} -e 0`;
  const l0 = load();
  const pipe = interleavedScripts(
    {
      ours: `${fspl} prepare -s - -i ${shq(small)} | ${fspl} queue-write -q ${shq(ours)}`,
      floor: `${zero} | ${zero}`,
      ref: `${shq(opts.ref)} prepare -s - -i ${shq(small)} | ${shq(opts.ref)} queue-write -q ${shq(theirs)}`,
    },
    'typed: prepare | queue-write',
  );
  const written = fs.readdirSync(path.join(ours, 'jobs')).length;
  if (written !== opts.rounds * STARTS + 1)
    die(`prepare | queue-write: ${written} jobs written, expected ${opts.rounds * STARTS + 1}`);
  row(
    'a small job, as typed: `prepare -i F | queue-write -q Q`, wall',
    msec(pipe.ours),
    `\`node -e 0 | node -e 0\`: ${msec(pipe.floor)}; the reference: ${msec(pipe.ref)}`,
    pipe.ours.map((v, i) => v / pipe.floor[i]),
    undefined,
    `${l0}–${load()}`,
  );
  const netDir = path.join(WORK, 'typed-net');
  fs.mkdirSync(netDir);
  const net = path.join(netDir, 'net.yaml');
  fs.writeFileSync(net, `places:\n  inbox: { dir: ${JSON.stringify(path.join(netDir, 'inbox'))} }\n`);
  sh(`${fspl} net init ${shq(net)}`, 'net init');
  const l1 = load();
  const put = interleavedScripts(
    { ours: `${fspl} net put ${shq(net)} inbox -i ${shq(small)} > /dev/null`, floor: zero },
    'typed: net put',
  );
  row(
    'a small token, as typed: `net put NET P -i F`, wall',
    msec(put.ours),
    `\`node -e 0\`: ${msec(put.floor)}`,
    put.ours.map((v, i) => v / put.floor[i]),
    undefined,
    `${l1}–${load()}`,
  );
}

// ------------------------------------------------------------------------------------------------
// true: one queue of 1,000 /bin/true jobs

function benchTrue(floorExe) {
  log(`true: making one queue of ${n(JOBS)} jobs with the reference`);
  const template = path.join(WORK, 'true-queue');
  const ref = shq(opts.ref);
  const seq = shq(path.join(WORK, 'true-sendseq'));
  sh(`${ref} queue-init -q ${shq(template)}`, 'queue-init');
  sh(
    `i=0; while [ $i -lt ${JOBS} ]; do echo "job $i" | ${ref} prepare -s ${seq} -i - ` +
      `| ${ref} queue-write -q ${shq(template)} || exit 1; i=$((i+1)); done`,
    'making the jobs',
  );
  const m = { floor: [], ours: [], ref: [] };
  const sides = {
    floor: (q) => [floorExe, 'true-loop', q],
    ours: (q) => [NODE, BIN, 'queue-process', '-q', q, '/bin/true'],
    ref: (q) => [opts.ref, 'queue-process', '-q', q, '/bin/true'],
  };
  const l0 = load();
  for (let round = 1; round <= opts.rounds; round++) {
    for (const side of ['floor', 'ours', 'ref']) {
      if (side === 'floor' && !floorExe) continue;
      log(`true: ${side}, round ${round} of ${opts.rounds}`);
      const q = fresh(template, `true-${side}`);
      m[side].push(timed(sides[side](q), `${side} over the /bin/true queue`).wall);
      checkQueues([q], JOBS + 1, `${side} over the /bin/true queue`);
      fs.rmSync(q, { recursive: true, force: true });
    }
  }
  const vsRef = m.ours.map((v, i) => v / m.ref[i]);
  const vsFloor = m.ours.map((v, i) => v / m.floor[i]);
  const ok = (i) => vsRef[i] <= 1.3 || (floorExe && vsFloor[i] <= 1.2);
  const medOk = median(vsRef) <= 1.3 || (floorExe && median(vsFloor) <= 1.2);
  const met = vsRef.filter((_, i) => ok(i)).length;
  rows.push([
    `one queue of ${n(JOBS)} \`/bin/true\` jobs, wall`,
    sec(m.ours),
    `the reference: ${sec(m.ref)}; the C loop: ${floorExe ? sec(m.floor) : '**not measured, cc is missing**'}`,
    `${times(vsRef)} the reference; ${floorExe ? `${times(vsFloor)} the C loop` : '—'}`,
    '≤ 1.3× reference, or ≤ 1.2× the C loop',
    medOk ? 'met' : '**missed**',
    `${met} of ${vsRef.length} (either)`,
    `${l0}–${load()}`,
  ]);
}

// ------------------------------------------------------------------------------------------------

const t0 = Date.now();
const loadStart = load();
const needFloor = want('pass') || want('drain') || want('true');
const floorExe = needFloor ? compileFloor() : undefined;
if (want('pass') || want('drain')) benchQueues(floorExe);
if (want('watch')) await benchWatch();
if (want('start')) benchStart();
if (want('typed')) benchTyped();
if (want('true')) benchTrue(floorExe);
if (needFloor && !floorExe) notes.unshift('**cc is missing: the C floor rows were skipped.**');

const HEAD = [
  '| measure | median (min–max) | compared with | ratio (min–max) | target | median |',
  ' rounds | load |\n| --- | --- | --- | --- | --- | --- | --- | --- |',
].join('');
const cell = (c) => String(c).replace(/\|/g, '\\|');
const md = `${BEGIN}
## Cost above the commands' own floor (\`bench/cost.mjs\`)

${opts.quick ? 'Quick mode: tiny sizes, a smoke test only; the numbers mean nothing.\n\n' : ''}${HEAD}
${rows.map((r) => `| ${r.map(cell).join(' | ')} |`).join('\n')}

How it is measured (${opts.rounds} round(s), in \`${opts.dir}\`, ${os.cpus().length} cores, load ${loadStart} at the
start, ${load()} at the end, ${((Date.now() - t0) / 1000).toFixed(0)} s in all):
- The floor is \`bench/floor-loop.c\`, compiled with \`cc -O2\`: the same commands started one after the
  other by \`posix_spawn\`, the job file as stdin (past its header), \`waitpid\` each; no queue logic.
  For \`/bin/true\`, it also makes per job the system calls a queue run records: the note in the lock
  file, \`nextseq\` through a temp file fsynced and renamed, the queue directory fsynced, the job
  unlinked and \`jobs/\` fsynced.
- CPU is user+sys of the whole process tree from GNU time, children included (the loop's shell,
  every \`fspl\`, \`sh\` and \`cat\`). Above the floor is a side's CPU minus the floor's of the same round.
- Each round runs the sides one after the other (floor, ours, the reference), on fresh copies
  (\`cp -a\`) of queues made once by the reference. A ratio is computed per round; a cell gives its
  median and its spread (min–max) over the rounds; the verdict is on the median. Every run is checked
  (\`nextseq\`, an empty \`jobs/\`, the lines of F); a failed check aborts. The \`/bin/true\` jobs are made
  with \`prepare -s SEQFILE\` (\`-s -\` would number them all 1).
- Idle CPU: utime+stime from \`/proc/PID/stat\` over the window, which starts ${SETTLE} s after the
  watcher's first job, past V8's one collection of start-up's garbage (\`bench/many.mjs\` watchIdle).
  Start-up: ${STARTS} runs of each side a round, A B A B.
- Every side runs without \`NODE_EXTRA_CA_CERTS\`, which this machine sets: with it, every node
  reads a bundle of certificates before any script (50–80 ms; \`bench/common.mjs\`).
${notes.map((x) => `- ${x}\n`).join('')}${END}
`;

process.stdout.write(md);
if (opts.splice) {
  spliceSplit(opts.splice, md, BEGIN, END);
  log(`wrote the section into ${opts.splice}`);
}
