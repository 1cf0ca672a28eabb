#!/usr/bin/env node
/**
 * Benchmark harness: our TypeScript `fspl` against the reference Filespooler 1.2.2 binary.
 *
 *   npm run bench                      # build, full run, writes docs/benchmarks.md and its notes
 *   node bench/run.mjs --quick         # ~10-20 s smoke run of every workload (also BENCH_QUICK=1)
 *
 * Options (environment variable in brackets):
 *   --quick              tiny sizes, 1-2 rounds, no docs/ update [BENCH_QUICK=1]
 *   --out PATH           where to write the markdown (default docs/benchmarks.md; a temp file
 *                        with --quick or --only) [BENCH_OUT]
 *   --rounds N           rounds for the heavy workloads (default 5, quick 1) [BENCH_ROUNDS]
 *   --big-rounds N       rounds for the 4 GiB workload (default 3, quick 1) [BENCH_BIG_ROUNDS]
 *   --cold-rounds N      rounds for the start-up measurements (default 20, quick 2) [BENCH_COLD_ROUNDS]
 *   --only LIST          comma-separated workload ids to run, e.g. 1,4 or W, N for nets, M for many queues,
 *                        C for the cost above the commands' floor, G for signed packets, D for durability
 *   --dir DIR            where queues and payloads go (default /dev/shm, else the temp dir) [BENCH_DIR]
 *   --ref PATH           the reference binary (default /usr/bin/fspl) [FSPL_REF]
 *   --no-native          run ours without its native addon (FSPL_NO_NATIVE=1) [BENCH_NO_NATIVE=1]
 *   --baseline DIR       another checkout (built: DIR/bin/fspl) measured as a third side in
 *                        workloads 2 and 3, e.g. main in a scratch worktree [BENCH_BASELINE]
 *
 * Every round runs ours then the reference, one after the other, on fresh copies of the same
 * generated input. Each run is checked (exit status, end state of the queue, output equal to the
 * reference's / to the expected checksum); any failure aborts the whole benchmark with exit 1.
 * No thresholds make the run fail: the "met?" column only reports.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { benchEnv, median, shq } from './common.mjs';
import { summarize } from './profile-summary.mjs';
import { notesFile, spliceSection, splitSection } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const DIST = path.join(ROOT, 'dist');
const NODE = process.execPath;
const TIME = '/usr/bin/time';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const RUN_BEGIN = '<!-- run-bench:begin -->';
const RUN_END = '<!-- run-bench:end -->';

// ---------------------------------------------------------------- options

function parseArgs(argv) {
  const env = process.env;
  const o = {
    quick: env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true',
    out: env.BENCH_OUT || undefined,
    rounds: env.BENCH_ROUNDS ? Number(env.BENCH_ROUNDS) : undefined,
    bigRounds: env.BENCH_BIG_ROUNDS ? Number(env.BENCH_BIG_ROUNDS) : undefined,
    coldRounds: env.BENCH_COLD_ROUNDS ? Number(env.BENCH_COLD_ROUNDS) : undefined,
    only: undefined,
    dir: env.BENCH_DIR || undefined,
    ref: env.FSPL_REF || '/usr/bin/fspl',
    noNative: env.BENCH_NO_NATIVE === '1',
    baseline: env.BENCH_BASELINE || undefined,
  };
  const need = (i) => {
    if (i + 1 >= argv.length) die(`option ${argv[i]} needs a value`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let inline;
    if (a.startsWith('--') && a.includes('=')) [a, inline] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
    const val = () => (inline !== undefined ? inline : need(i++));
    switch (a) {
      case '--quick':
        o.quick = true;
        break;
      case '--out':
        o.out = val();
        break;
      case '--rounds':
        o.rounds = Number(val());
        break;
      case '--big-rounds':
        o.bigRounds = Number(val());
        break;
      case '--cold-rounds':
        o.coldRounds = Number(val());
        break;
      case '--only':
        o.only = new Set(
          val()
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        );
        break;
      case '--dir':
        o.dir = val();
        break;
      case '--ref':
        o.ref = val();
        break;
      case '--no-native':
        o.noNative = true;
        break;
      case '--baseline':
        o.baseline = path.resolve(val());
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          `${fs
            .readFileSync(fileURLToPath(import.meta.url), 'utf8')
            .split('\n')
            .slice(2, 25)
            .map((l) => l.replace(/^ \*\/? ?/, ''))
            .join('\n')}\n`,
        );
        process.exit(0);
        break;
      default:
        die(`unknown option ${a} (try --help)`);
    }
  }
  o.rounds ??= o.quick ? 1 : 5;
  o.bigRounds ??= o.quick ? 1 : 3;
  o.coldRounds ??= o.quick ? 2 : 20;
  for (const k of ['rounds', 'bigRounds', 'coldRounds']) {
    if (!Number.isInteger(o[k]) || o[k] < 1)
      die(`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a positive integer`);
  }
  if (!o.dir) o.dir = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  if (o.baseline && !fs.existsSync(path.join(o.baseline, 'bin', 'fspl')))
    die(`--baseline ${o.baseline}: no bin/fspl there`);
  if (!o.out) {
    o.out =
      o.quick || o.only
        ? path.join(os.tmpdir(), `fspl-bench-${o.quick ? 'quick' : 'partial'}-${process.pid}.md`)
        : path.join(ROOT, 'docs', 'benchmarks.md');
  }
  return o;
}

function die(msg) {
  process.stderr.write(`bench: ${msg}\n`);
  process.exit(2);
}

class BenchError extends Error {}

function fail(msg, res) {
  let detail = '';
  if (res) {
    detail = `\n  command: ${res.argv.join(' ')}\n  status: ${res.status}${res.signal ? ` signal ${res.signal}` : ''}`;
    if (res.stderr) detail += `\n  stderr: ${String(res.stderr).slice(0, 2000).trimEnd()}`;
    if (res.stdout) detail += `\n  stdout: ${String(res.stdout).slice(0, 500).trimEnd()}`;
  }
  throw new BenchError(msg + detail);
}

const opts = parseArgs(process.argv.slice(2));
const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

// Sizes: full / quick.
const SIZES = opts.quick
  ? { trueJobs: 100, nopJobs: 1000, lsJobs: 1000, zcatJobs: 100, pipe1: 64 * MiB, pipe4: 256 * MiB, md5: 64 * MiB }
  : { trueJobs: 1000, nopJobs: 10000, lsJobs: 10000, zcatJobs: 1000, pipe1: GiB, pipe4: 4 * GiB, md5: GiB };

// A clean environment, the same for both sides: no FSPL_* variables (prepare would store
// FSPL_SET_* ones), no NODE_OPTIONS, and a fixed shell for decoders.
const ENV = benchEnv();
ENV.SHELL = '/bin/sh';
if (opts.noNative) ENV.FSPL_NO_NATIVE = '1';

const ADDON = path.join(ROOT, 'native', 'build', 'Release', 'fspl_native.node');
const NATIVE = !opts.noNative && fs.existsSync(ADDON);

const SIDES = {
  ours: { name: 'ours', argv: [NODE, BIN] },
  ref: { name: 'ref', argv: [opts.ref] },
  /** Ours without the native addon (row 6 measures both when the addon is built). */
  oursJs: { name: 'ours-js', argv: [NODE, BIN], env: { ...ENV, FSPL_NO_NATIVE: '1' } },
  /** Another checkout (--baseline): a third side in workloads 2 and 3. */
  base: opts.baseline ? { name: 'base', argv: [NODE, path.join(opts.baseline, 'bin', 'fspl')] } : undefined,
};

// ---------------------------------------------------------------- running things

const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;

/** What a spawnSync of argv gave, as the rows read it; fails the run if argv could not start. */
function spawned(argv, wall, r) {
  const res = {
    argv,
    wall,
    status: r.status,
    signal: r.signal,
    stdout: r.stdout?.toString() ?? '',
    stderr: r.stderr?.toString() ?? '',
  };
  if (r.error) fail(`cannot run ${argv[0]}: ${r.error.message}`, res);
  return res;
}

/** Run argv directly (no /usr/bin/time): wall time only. For start-up measurements. */
function runBare(argv, { cwd = ROOT } = {}) {
  const start = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), {
    cwd,
    env: ENV,
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * MiB,
  });
  const wall = ms(start);
  const res = spawned(argv, wall, r);
  return res;
}

let timeFileCounter = 0;
/**
 * Run argv under /usr/bin/time: wall time (hrtime around the spawn), user and system CPU seconds
 * and max RSS (KiB) of the process (GNU time's rusage, which includes children it waited for).
 */
function runTimed(argv, { stdin, cwd = ROOT } = {}) {
  const tf = path.join(WORK, `time-${timeFileCounter++}.txt`);
  let fd = 'ignore';
  if (stdin) fd = fs.openSync(stdin, 'r');
  const start = process.hrtime.bigint();
  let r;
  try {
    r = spawnSync(TIME, ['-f', '%e %U %S %M', '-o', tf, ...argv], {
      cwd,
      env: ENV,
      stdio: [fd, 'pipe', 'pipe'],
      maxBuffer: 512 * MiB,
    });
  } finally {
    if (typeof fd === 'number') fs.closeSync(fd);
  }
  const wall = ms(start);
  const res = spawned(argv, wall, r);
  Object.assign(res, readTimeFile(tf, res));
  return res;
}

function readTimeFile(tf, res) {
  let text;
  try {
    text = fs.readFileSync(tf, 'utf8');
  } catch {
    fail(`/usr/bin/time wrote no report (${tf})`, res);
  }
  fs.rmSync(tf, { force: true });
  const last = text.trim().split('\n').pop();
  const [e, u, s, m] = last.split(' ').map(Number);
  if (![e, u, s, m].every(Number.isFinite)) fail(`cannot parse /usr/bin/time output: ${JSON.stringify(text)}`, res);
  return { cpu: u + s, user: u, sys: s, maxrssKiB: m };
}

function sh(cmd, args, what) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: ENV, maxBuffer: 64 * MiB });
  if (r.error || r.status !== 0) {
    throw new BenchError(`${what ?? cmd} failed: ${r.error?.message ?? ''} ${r.stderr?.toString() ?? ''}`.trim());
  }
  return r.stdout.toString();
}

function expectOk(res, what) {
  if (res.status !== 0) fail(`${what}: exit status ${res.status} (expected 0)`, res);
}

// ---------------------------------------------------------------- statistics and formatting

const stats = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length });

function fmtMs(v) {
  if (v === undefined || Number.isNaN(v)) return '—';
  if (v >= 10000) return `${(v / 1000).toFixed(1)} s`;
  if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
  if (v >= 100) return `${v.toFixed(0)} ms`;
  if (v >= 10) return `${v.toFixed(1)} ms`;
  return `${v.toFixed(2)} ms`;
}
const fmtCpu = (s) => (s === undefined ? '—' : `${s.toFixed(2)} s CPU`);
const fmtMiB = (kib) => (kib === undefined ? '—' : `${(kib / 1024).toFixed(1)} MiB`);
const fmtRatio = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}×` : '—');
const fmtSize = (b) => (b >= GiB ? `${+(b / GiB).toFixed(1)} GiB` : `${+(b / MiB).toFixed(1)} MiB`);
const fmtCount = (n) => n.toLocaleString('en-US');

function met(value, limit) {
  if (value <= limit) return 'yes';
  return `**no** (+${((value / limit - 1) * 100).toFixed(0)}%)`;
}

// ---------------------------------------------------------------- queue generation

let encodeHeader;
let decodeHeader;
const FIXED_SECS = 1767225600n; // 2026-01-01T00:00:00Z

function header(seq, kind) {
  const cmd = kind === 'nop' ? { kind: 'NOP' } : { kind: 'Command', params: [], env: [] };
  return encodeHeader({ seq: BigInt(seq), ctime: { secs: FIXED_SECS, nanos: seq % 1e9 }, cmd });
}

function makeQueueDir(dir) {
  fs.mkdirSync(path.join(dir, 'jobs'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'nextseq'), '1\n');
  fs.writeFileSync(path.join(dir, 'nextseq.lock'), '');
}

/** A queue of n jobs with sequence numbers 1..n and empty payloads. */
function makeQueue(dir, n, kind, { gzip = false } = {}) {
  makeQueueDir(dir);
  for (let i = 1; i <= n; i++) {
    const h = header(i, kind);
    fs.writeFileSync(path.join(dir, 'jobs', `fspl-${randomUUID()}.fspl`), gzip ? gzipSync(h) : h);
  }
}

/** Write a packet with a payload of `size` zero bytes to `file`. */
function writeBigPacket(file, size) {
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, header(1, 'command'));
    const chunk = Buffer.alloc(16 * MiB);
    let left = size;
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      fs.writeSync(fd, chunk, 0, n);
      left -= n;
    }
  } finally {
    fs.closeSync(fd);
  }
}

function freshCopy(template, name) {
  const dst = path.join(WORK, name);
  fs.rmSync(dst, { recursive: true, force: true });
  sh('cp', ['-a', template, dst], 'cp -a');
  return dst;
}

function jobFiles(q) {
  return fs.readdirSync(path.join(q, 'jobs'));
}

function expectDrained(q, n, res, what) {
  const left = jobFiles(q);
  if (left.length !== 0) fail(`${what}: ${left.length} file(s) left in jobs/ (expected none), e.g. ${left[0]}`, res);
  const next = fs.readFileSync(path.join(q, 'nextseq'), 'utf8');
  if (next.trim() !== String(n + 1)) fail(`${what}: nextseq is ${JSON.stringify(next)} (expected ${n + 1})`, res);
}

// ---------------------------------------------------------------- the workloads

const results = []; // rows of the main table
const details = []; // rows of the raw-details table
let floorMs; // median of `node -e 0`
const startup = {}; // the start-up breakdown
const floors = {}; // what Node itself costs for the same work (bench/floors.mjs)

function want(id) {
  return !opts.only || opts.only.has(String(id));
}

/**
 * Alternate ours and the reference for `rounds` rounds. `prepare(side)` makes a fresh input
 * (not timed) and returns a context; `run(side, ctx)` is timed inside; `check(side, ctx, res)`
 * verifies; `cleanup(ctx)` removes the copy.
 */
function alternate(
  label,
  rounds,
  { prepare = () => ({}), run, check, cleanup = () => {}, sides = [SIDES.ours, SIDES.ref] },
) {
  const out = Object.fromEntries(sides.map((s) => [s.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const side of sides) {
      const ctx = prepare(side);
      const res = run(side, ctx);
      check(side, ctx, res);
      cleanup(ctx);
      out[side.name].push(res);
    }
    log(
      `  ${label} round ${r + 1}/${rounds}: ${sides.map((s) => `${s.name} ${fmtMs(out[s.name][r].wall)}`).join(', ')}`,
    );
  }
  return out;
}

function addDetails(id, label, runs, metrics = ['wall']) {
  for (const side of Object.keys(runs)) {
    const xs = runs[side];
    const w = stats(xs.map((x) => x.wall));
    const row = { id, label, side, wall: w };
    if (xs[0].cpu !== undefined) {
      row.cpu = stats(xs.map((x) => x.cpu));
      row.rss = stats(xs.map((x) => x.maxrssKiB));
    }
    if (metrics.includes('pipeline')) {
      row.cpu = stats(xs.map((x) => x.cpu));
      row.rss = stats(xs.map((x) => x.maxrssKiB));
    }
    details.push(row);
  }
}

/** The chunk bin/fspl runs first (what "module load only" loads), from dist/bundle/group-start.cjs. */
function entryModule() {
  const text = fs.readFileSync(BIN, 'utf8');
  const m = /['"]([^'"]*main\.c?js)['"]/.exec(text);
  const file = path.join(DIST, 'bundle', m ? path.basename(m[1]) : 'main.cjs');
  if (!fs.existsSync(path.join(DIST, 'bundle', 'group-start.cjs')))
    throw new BenchError('dist/bundle/group-start.cjs (loaded by bin/fspl) is missing: run npm run build first');
  return file;
}

/**
 * A start-up probe's CPU: the process run by bash, whose `times` prints the user and system time
 * of its children from getrusage (to the millisecond; dash's `times` counts 10 ms ticks, and GNU
 * time prints hundredths of seconds). Milliseconds, user+sys.
 */
function probeCpu(argv, what) {
  const r = spawnSync('bash', ['-c', '"$@" >/dev/null 2>&1; s=$?; times >&2; exit $s', 'bash', ...argv], {
    cwd: ROOT,
    env: ENV,
    encoding: 'utf8',
  });
  if (r.status !== 0) fail(`${what} (CPU run): exit status ${r.status}`, { argv, stderr: r.stderr });
  const last = r.stderr.trim().split('\n').pop();
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(last ?? '');
  if (!m) fail(`${what}: cannot read bash's times from ${JSON.stringify(r.stderr)}`, { argv });
  return (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$/;

// 1. Cold start, plus the start-up breakdown, all interleaved in one loop: each round runs every
// probe once bare (wall time) and once under bash (CPU), in the same order.
function benchColdStart() {
  const entry = entryModule();
  const empty = path.join(WORK, 'empty-queue');
  expectOk(runBare([...SIDES.ref.argv, 'queue-init', '-q', empty]), 'queue-init of the empty queue');
  const probes = [
    { key: 'floor', argv: [NODE, '-e', '0'] },
    { key: 'load', argv: [NODE, '-e', `require(${JSON.stringify(BIN)}).requireChunk(${JSON.stringify(entry)})`] },
    { key: 'version', argv: [...SIDES.ours.argv, '-V'] },
    { key: 'ours', argv: [...SIDES.ours.argv, 'gen-uuid'], uuid: true },
    { key: 'ref', argv: [...SIDES.ref.argv, 'gen-uuid'], uuid: true },
    { key: 'process', argv: [...SIDES.ours.argv, 'queue-process', '-q', empty, 'true'], empty: true },
    { key: 'refProcess', argv: [...SIDES.ref.argv, 'queue-process', '-q', empty, 'true'], empty: true },
  ];
  startup.entry = path.relative(ROOT, entry);
  // Warm the page cache once, untimed.
  for (const p of probes) runBare(p.argv);
  const t = Object.fromEntries(probes.map((p) => [p.key, []]));
  const cpu = Object.fromEntries(probes.map((p) => [p.key, []]));
  for (let r = 0; r < opts.coldRounds; r++) {
    for (const p of probes) {
      const res = runBare(p.argv);
      expectOk(res, `start-up probe ${p.key}`);
      if (p.uuid && !UUID_RE.test(res.stdout)) fail(`${p.key} gen-uuid printed ${JSON.stringify(res.stdout)}`, res);
      if (p.key === 'version' && !res.stdout.startsWith('filespooler '))
        fail(`fspl -V printed ${JSON.stringify(res.stdout)}`, res);
      if (p.empty && (res.stdout !== '' || res.stderr !== ''))
        fail(`${p.key} of an empty queue printed something`, res);
      t[p.key].push(res.wall);
      cpu[p.key].push(probeCpu(p.argv, `start-up probe ${p.key}`));
    }
  }
  if (fs.readdirSync(path.join(empty, 'jobs')).length !== 0) fail('the empty queue is no longer empty', {});
  // bash's times counts whole milliseconds: the CPU figure is the mean of the middle half of the
  // runs (less noisy than a median of such steps), in place of the median.
  const iqm = (xs) => {
    const a = [...xs].sort((x, y) => x - y);
    const mid = a.slice(Math.floor(a.length / 4), Math.ceil((a.length * 3) / 4));
    return mid.reduce((x, y) => x + y, 0) / mid.length;
  };
  const m = Object.fromEntries(
    Object.entries(t).map(([k, v]) => [k, { ...stats(v), cpu: { ...stats(cpu[k]), median: iqm(cpu[k]) } }]),
  );
  floorMs = m.floor.median;
  log(
    `  cold start: node -e 0 ${fmtMs(m.floor.median)}, ours ${fmtMs(m.ours.median)}` +
      `, ref ${fmtMs(m.ref.median)}, empty queue-process ${fmtMs(m.process.median)}`,
  );
  Object.assign(startup, m);
  results.push({
    id: '1',
    workload: '`node -e 0` (the Node floor)',
    ours: `${fmtMs(m.floor.median)} (${fmtMs(m.floor.cpu.median)} CPU)`,
    ref: '—',
    ratio: '—',
    target: '(reference point)',
    met: '',
  });
  const limit = 1.3 * floorMs;
  results.push({
    id: '1',
    workload: 'cold start: `fspl gen-uuid`',
    ours: fmtMs(m.ours.median),
    ref: fmtMs(m.ref.median),
    ratio: fmtRatio(m.ours.median / m.ref.median),
    target: `≤ 1.3× node floor = ${fmtMs(limit)} (ours/floor ${fmtRatio(m.ours.median / floorMs)})`,
    met: met(m.ours.median, limit),
  });
  // Issue 30: every cron pass over a queue pays this; wall and CPU, each against the floor's.
  const wallRatio = m.process.median / floorMs;
  const cpuRatio = m.process.cpu.median / m.floor.cpu.median;
  results.push({
    id: '1',
    workload: 'cold start: `fspl queue-process` of an empty queue (wall, and CPU user+sys)',
    ours: `${fmtMs(m.process.median)} (${fmtMs(m.process.cpu.median)} CPU)`,
    ref: `${fmtMs(m.refProcess.median)} (${fmtMs(m.refProcess.cpu.median)} CPU)`,
    ratio: fmtRatio(m.process.median / m.refProcess.median),
    target: `≤ 1.1× node floor, wall and CPU (ours/floor: wall ${fmtRatio(wallRatio)}, CPU ${fmtRatio(cpuRatio)})`,
    met: wallRatio <= 1.1 && cpuRatio <= 1.1 ? 'yes' : `**no** (${fmtRatio(Math.max(wallRatio, cpuRatio))})`,
  });
  for (const side of ['ours', 'ref']) details.push({ id: '1', label: 'cold start gen-uuid', side, wall: m[side] });
  details.push({ id: '1', label: 'node -e 0', side: 'node', wall: m.floor });
  details.push({ id: '1', label: 'queue-process, empty queue', side: 'ours', wall: m.process });
  details.push({ id: '1', label: 'queue-process, empty queue', side: 'ref', wall: m.refProcess });
}

function ratioRow(id, workload, runs, target, { metric = 'wall' } = {}) {
  const pick = (x) => (metric === 'cpu' ? x.cpu * 1000 : x.wall);
  const o = median(runs.ours.map(pick));
  const r = median(runs.ref.map(pick));
  const ratio = o / r;
  results.push({
    id: String(id),
    workload,
    ours: metric === 'cpu' ? fmtCpu(o / 1000) : fmtMs(o),
    ref: metric === 'cpu' ? fmtCpu(r / 1000) : fmtMs(r),
    ratio: fmtRatio(ratio),
    target: `≤ ${Number.isInteger(target) ? target.toFixed(1) : target}× reference`,
    met: met(ratio, target),
  });
}

// 2 and 3: queue-process of many small jobs.
function benchQueueProcess(id, n, kind, target) {
  const label = `queue-process ${fmtCount(n)} ${kind === 'nop' ? 'NOP' : '/bin/true'} jobs`;
  log(`${id}. ${label}`);
  const tpl = path.join(WORK, `tpl-${id}`);
  makeQueue(tpl, n, kind);
  const runs = alternate(label, opts.rounds, {
    prepare: () => ({ q: freshCopy(tpl, 'q') }),
    run: (side, { q }) => runTimed([...side.argv, 'queue-process', '-q', q, '/bin/true']),
    check: (side, { q }, res) => {
      expectOk(res, `${side.name} ${label}`);
      expectDrained(q, n, res, `${side.name} ${label}`);
    },
    cleanup: ({ q }) => fs.rmSync(q, { recursive: true, force: true }),
    sides: [SIDES.ours, SIDES.ref, ...(SIDES.base ? [SIDES.base] : [])],
  });
  fs.rmSync(tpl, { recursive: true, force: true });
  const what = `\`queue-process\`, ${fmtCount(n)} ${kind === 'nop' ? 'NOP jobs' : 'command jobs running `/bin/true`'}`;
  ratioRow(id, what, runs, target);
  // CPU too (user+sys, the commands included): steadier than wall time on a shared machine.
  ratioRow(id, `same: CPU (user+sys, commands included)`, runs, target, { metric: 'cpu' });
  if (runs.base) {
    // The baseline in the ref column: what a change gained, in the same run.
    for (const metric of ['wall', 'cpu']) {
      ratioRow(
        id,
        `same, against the baseline (${gitDescribe(opts.baseline)})${metric === 'cpu' ? ': CPU' : ''}`,
        { ours: runs.ours, ref: runs.base },
        1.0,
        {
          metric,
        },
      );
      results.at(-1).target = '(information)';
      results.at(-1).met = '';
    }
  }
  addDetails(String(id), label, runs);
}

// P: where a job's time goes in our queue-process: a V8 CPU profile of one run.
let profile;
function benchProfile() {
  const n = opts.quick ? 200 : 10000;
  const label = `queue-process ${fmtCount(n)} /bin/true jobs under --cpu-prof`;
  log(`P. ${label}`);
  const q = path.join(WORK, 'q-prof');
  makeQueue(q, n, 'command');
  const dir = path.join(WORK, 'prof');
  const res = runTimed([NODE, '--cpu-prof', '--cpu-prof-dir', dir, BIN, 'queue-process', '-q', q, '/bin/true']);
  expectOk(res, label);
  expectDrained(q, n, res, label);
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) fail(`${label}: no .cpuprofile written`, res);
  profile = { n, wall: res.wall, ...summarize(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')), 15) };
  fs.rmSync(q, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
}

function profileSection() {
  if (!profile) return '';
  const { n, categories: c, functions } = profile;
  const per = (us) => `${(us / n).toFixed(1)} µs`;
  const ms1 = (us) => fmtMs(us / 1000);
  const rows = [
    ['whole run (profiled: the profiler slows it)', ms1(c.total), per(c.total)],
    ["spawning job commands (the addon's start, which returns once the child has exec'd)", ms1(c.spawn), per(c.spawn)],
    ['idle: waiting for the command to exit', ms1(c.idle), per(c.idle)],
    [
      "system calls through Node's fs bindings (open, read, rename, unlink, write, ...)",
      ms1(c.syscalls),
      per(c.syscalls),
    ],
    ["**JS** (fspl's code, its libraries, Node's own JS)", ms1(c.js), `**${per(c.js)}**`],
    ['garbage collector', ms1(c.gc), per(c.gc)],
    ['(program): V8 and Node native code outside JS', ms1(c.program), per(c.program)],
  ];
  const fnRows = functions.map(([k, us]) => [`\`${k}\``, ms1(us), per(us)]);
  return `## Per-job profile: \`queue-process\` of ${fmtCount(n)} \`/bin/true\` jobs

\`node --cpu-prof bin/fspl queue-process -q Q /bin/true\` in the same run, summarised by
\`bench/profile-summary.mjs\` (self time of the sampled frames; a native call is counted in the JS
function that makes it, so the addon's spawn shows as \`nativeSpawn\` and a bound system call
as \`open\`, \`rename\`...). Target: JS ≤ 100 µs a job.

${table(['Where the time goes', 'Total', 'Per job'], rows)}

Functions with the most self time:

${table(['Function', 'Total', 'Per job'], fnRows)}

Reading it: the JS that fspl runs per job (build the environment, note the job, decode, the
event loop's own JS) is about ${per(c.js)}, ${c.js / n <= 100 ? 'within' : 'over'} the 100 µs target.
Most of a job's time is the spawn (the addon's clone and exec, which does not return until the
child has exec'd \`/bin/true\`) and waiting for the command to exit: the same work the
reference does, in the same way. What row 2 still loses against the reference is Node's
start-up (row 1) and the cost of \`clone\` and of reaping a child from a process the size of
Node's (strace -c: \`clone3\` about 46 µs in ours against 18 µs in the reference; the reference
reaps in a blocking \`wait4\`, ours on the thread pool). A pidfd polled on the event loop
instead of the thread pool was tried and measured no faster (wall per spawn of \`/bin/true\`
1.8–2.2 ms against 1.3–2.0 ms on the thread pool, on the loaded machine), so it was not kept.

`;
}

// 4 and 5: queue-ls.
function benchQueueLs(id, n, { gzip }) {
  const label = `queue-ls ${fmtCount(n)} jobs${gzip ? ' -d zcat' : ''}`;
  log(`${id}. ${label}`);
  const tpl = path.join(WORK, `tpl-${id}`);
  makeQueue(tpl, n, 'command', { gzip });
  const extra = gzip ? ['-d', 'zcat'] : [];
  let refOut;
  const outs = { ours: [], ref: [] };
  const runs = alternate(label, opts.rounds, {
    // queue-ls does not change the queue, but use a fresh copy anyway so both sides see the same state.
    prepare: () => ({ q: freshCopy(tpl, 'q') }),
    run: (side, { q }) => runTimed([...side.argv, 'queue-ls', ...extra, '-q', q]),
    check: (side, { q }, res) => {
      expectOk(res, `${side.name} ${label}`);
      const lines = res.stdout.split('\n').filter(Boolean);
      if (lines.length !== n + 1 || !lines[0].startsWith('ID'))
        fail(`${side.name} ${label}: ${lines.length} lines of output (expected a header and ${n} jobs)`, res);
      // The same queue (copied to the same path) must list identically on both sides.
      outs[side.name].push(res.stdout);
      if (jobFiles(q).length !== n) fail(`${side.name} ${label}: queue-ls changed the queue`, res);
    },
    cleanup: ({ q }) => fs.rmSync(q, { recursive: true, force: true }),
  });
  refOut = outs.ref[0];
  for (const [side, list] of Object.entries(outs)) {
    for (const o of list) {
      if (o !== refOut) {
        const a = o.split('\n');
        const b = refOut.split('\n');
        const i = a.findIndex((l, k) => l !== b[k]);
        throw new BenchError(
          `${side} ${label}: output differs from the reference's at line ${i + 1}:\n` +
            `  ${side}: ${JSON.stringify(a[i])}\n  ref:  ${JSON.stringify(b[i])}`,
        );
      }
    }
  }
  fs.rmSync(tpl, { recursive: true, force: true });
  if (gzip) {
    ratioRow(id, `\`queue-ls -d zcat\`, ${fmtCount(n)} gzipped jobs`, runs, 1.3);
  } else {
    const o = median(runs.ours.map((x) => x.wall));
    const r = median(runs.ref.map((x) => x.wall));
    const limit = 1.5 * (r + floorMs);
    results.push({
      id: String(id),
      workload: `\`queue-ls\`, ${fmtCount(n)} jobs`,
      ours: fmtMs(o),
      ref: fmtMs(r),
      ratio: fmtRatio(o / r),
      target: `≤ 1.5× (reference + node floor ${fmtMs(floorMs)}) = ${fmtMs(limit)}`,
      met: met(o, limit),
    });
  }
  addDetails(String(id), label, runs);
}

// 6 and 7: prepare -s - -i - | queue-write, CPU time and peak RSS of the two fspl processes.
function runPipeline(side, size, q) {
  const t1 = path.join(WORK, `time-${timeFileCounter++}.txt`);
  const t2 = path.join(WORK, `time-${timeFileCounter++}.txt`);
  const cmd = side.argv.map(shq).join(' ');
  const tf = shq('%e %U %S %M');
  const script =
    `set -o pipefail; head -c ${size} /dev/zero ` +
    `| ${TIME} -f ${tf} -o ${shq(t1)} ${cmd} prepare -s - -i - ` +
    `| ${TIME} -f ${tf} -o ${shq(t2)} ${cmd} queue-write -q ${shq(q)}`;
  const argv = ['bash', '-c', script];
  const start = process.hrtime.bigint();
  const r = spawnSync('bash', ['-c', script], { cwd: ROOT, env: side.env ?? ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const wall = ms(start);
  const res = spawned(argv, wall, r);
  expectOk(res, `${side.name} prepare | queue-write`);
  const a = readTimeFile(t1, res);
  const b = readTimeFile(t2, res);
  return { ...res, cpu: a.cpu + b.cpu, maxrssKiB: Math.max(a.maxrssKiB, b.maxrssKiB), prepare: a, write: b };
}

function checkWritten(side, q, size, res) {
  const files = jobFiles(q);
  if (files.length !== 1 || !/^fspl-[0-9a-f-]{36}\.fspl$/.test(files[0]))
    fail(`${side.name}: expected one job file in jobs/, found ${JSON.stringify(files)}`, res);
  const file = path.join(q, 'jobs', files[0]);
  const st = fs.statSync(file);
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(Math.min(st.size, 64 * 1024));
  fs.readSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  let h;
  try {
    h = decodeHeader(head);
  } catch (e) {
    fail(`${side.name}: the written job has a bad header: ${e.message}`, res);
  }
  if (h.header.seq !== 1n || h.header.cmd.kind !== 'Command')
    fail(
      `${side.name}: unexpected header ${JSON.stringify(h.header, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
      res,
    );
  if (st.size - h.length !== size) fail(`${side.name}: payload is ${st.size - h.length} bytes (expected ${size})`, res);
}

function benchPipeline(id, size, rounds, sides) {
  const label = `prepare | queue-write ${fmtSize(size)}`;
  log(`${id}. ${label}`);
  const runs = alternate(label, rounds, {
    prepare: () => {
      const q = path.join(WORK, 'q');
      fs.rmSync(q, { recursive: true, force: true });
      makeQueueDir(q);
      return { q };
    },
    run: (side, { q }) => runPipeline(side, size, q),
    check: (side, { q }, res) => checkWritten(side, q, size, res),
    cleanup: ({ q }) => fs.rmSync(q, { recursive: true, force: true }),
    sides,
  });
  addDetails(String(id), label, runs, ['pipeline']);
  return runs;
}

// S: the cost of sealing (ours only): `prepare --seal -s - -i FILE | queue-write` against the
// same without --seal. Sealed, prepare reads the file twice (CRC-32, then copy, checked again)
// and queue-write reads every byte through its CRC-32 instead of copying blindly.
function runFilePipeline(sealed, file, q) {
  const t1 = path.join(WORK, `time-${timeFileCounter++}.txt`);
  const t2 = path.join(WORK, `time-${timeFileCounter++}.txt`);
  const cmd = SIDES.ours.argv.map(shq).join(' ');
  const tf = shq('%e %U %S %M');
  const script =
    `set -o pipefail; ${TIME} -f ${tf} -o ${shq(t1)} ${cmd} prepare ${sealed ? '--seal ' : ''}-s - -i ${shq(file)} ` +
    `| ${TIME} -f ${tf} -o ${shq(t2)} ${cmd} queue-write -q ${shq(q)}`;
  const argv = ['bash', '-c', script];
  const start = process.hrtime.bigint();
  const r = spawnSync('bash', argv.slice(1), { cwd: ROOT, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const wall = ms(start);
  const res = spawned(argv, wall, r);
  expectOk(res, `prepare${sealed ? ' --seal' : ''} | queue-write`);
  const a = readTimeFile(t1, res);
  const b = readTimeFile(t2, res);
  return { ...res, cpu: a.cpu + b.cpu, maxrssKiB: Math.max(a.maxrssKiB, b.maxrssKiB), prepare: a, write: b };
}

function benchSeal() {
  const size = SIZES.pipe1;
  const label = `prepare [--seal] -i FILE | queue-write ${fmtSize(size)}`;
  log(`S. ${label}`);
  const file = path.join(WORK, 'seal-payload');
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < block.length; i++) block[i] = (i * 2654435761) >>> 24;
  const fd = fs.openSync(file, 'w');
  for (let done = 0; done < size; done += MiB) {
    block.writeUInt32BE(done / MiB, 0);
    fs.writeSync(fd, block, 0, Math.min(MiB, size - done));
  }
  fs.closeSync(fd);
  // `ours` is sealed, `ref` is our own unsealed run (the columns of the table).
  const runs = { ours: [], ref: [] };
  for (let r = 0; r < opts.rounds; r++) {
    for (const sealed of [false, true]) {
      const q = path.join(WORK, 'q');
      fs.rmSync(q, { recursive: true, force: true });
      makeQueueDir(q);
      const res = runFilePipeline(sealed, file, q);
      checkWritten({ name: sealed ? 'sealed' : 'unsealed' }, q, size, res);
      fs.rmSync(q, { recursive: true, force: true });
      runs[sealed ? 'ours' : 'ref'].push(res);
    }
    log(
      `  ${label} round ${r + 1}/${opts.rounds}: sealed ` +
        `${fmtCpu(runs.ours[r].cpu)}, unsealed ${fmtCpu(runs.ref[r].cpu)}`,
    );
  }
  fs.rmSync(file, { force: true });
  const o = median(runs.ours.map((x) => x.cpu));
  const u = median(runs.ref.map((x) => x.cpu));
  const part = (side, which) => median(runs[side].map((x) => x[which].cpu));
  results.push({
    id: 'S',
    workload:
      `\`prepare --seal -s - -i FILE | queue-write\`, ${fmtSize(size)}: CPU (user+sys), ` +
      `against the same without --seal (both ours; the "ref" column is the unsealed run)`,
    ours: fmtCpu(o),
    ref: fmtCpu(u),
    ratio: fmtRatio(o / u),
    target: '≤ 1.2× unsealed',
    met: met(o / u, 1.2),
  });
  results.push({
    id: 'S',
    workload: `same, by process: prepare / queue-write`,
    ours: `${fmtCpu(part('ours', 'prepare'))} / ${fmtCpu(part('ours', 'write'))}`,
    ref: `${fmtCpu(part('ref', 'prepare'))} / ${fmtCpu(part('ref', 'write'))}`,
    ratio: '',
    target: '(information)',
    met: '',
  });
  addDetails('S', `${label} (ours = sealed, ref = unsealed)`, runs, ['pipeline']);
}

function benchPipelines() {
  // With the addon built, row 6 also runs ours without it (FSPL_NO_NATIVE=1): a third side in
  // each round, so that the three are measured side by side.
  const sides6 = NATIVE && want(6) ? [SIDES.ours, SIDES.ref, SIDES.oursJs] : undefined;
  const runs1 = want(6) || want(7) ? benchPipeline(6, SIZES.pipe1, opts.rounds, sides6) : undefined;
  const rss1 = runs1 && median(runs1.ours.map((x) => x.maxrssKiB));
  if (want(6)) {
    const name = `\`prepare -s - -i - | queue-write\`, ${fmtSize(SIZES.pipe1)}`;
    ratioRow(
      6,
      `${name}: CPU (user+sys)${NATIVE ? ', with the native addon (splice)' : ', without the native addon'}`,
      runs1,
      NATIVE ? 1.0 : 1.3,
      {
        metric: 'cpu',
      },
    );
    if (runs1['ours-js']) {
      ratioRow(
        6,
        `${name}: CPU (user+sys), without the native addon (\`FSPL_NO_NATIVE=1\`: read/write loop)`,
        { ours: runs1['ours-js'], ref: runs1.ref },
        1.3,
        { metric: 'cpu' },
      );
    }
    const refRss = median(runs1.ref.map((x) => x.maxrssKiB));
    results.push({
      id: '6',
      workload: `${name}: peak RSS`,
      ours: fmtMiB(rss1),
      ref: fmtMiB(refRss),
      ratio: fmtRatio(rss1 / refRss),
      target: '≤ 80 MiB',
      met: met(rss1, 80 * 1024),
    });
  }
  if (want(7)) {
    const runs4 = benchPipeline(7, SIZES.pipe4, opts.bigRounds);
    const rss4 = median(runs4.ours.map((x) => x.maxrssKiB));
    const refRss4 = median(runs4.ref.map((x) => x.maxrssKiB));
    const growth = rss4 / rss1 - 1;
    results.push({
      id: '7',
      workload: `same at ${fmtSize(SIZES.pipe4)}: peak RSS`,
      ours: fmtMiB(rss4),
      ref: fmtMiB(refRss4),
      ratio: fmtRatio(rss4 / refRss4),
      target:
        `within 5% of the ${fmtSize(SIZES.pipe1)} run (${fmtMiB(rss1)}` +
        `): ${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)}%`,
      met: Math.abs(growth) <= 0.05 ? 'yes' : `**no** (${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(0)}%)`,
    });
    const o = median(runs4.ours.map((x) => x.cpu));
    const r = median(runs4.ref.map((x) => x.cpu));
    results.push({
      id: '7',
      workload: `same at ${fmtSize(SIZES.pipe4)}: CPU (user+sys)`,
      ours: fmtCpu(o),
      ref: fmtCpu(r),
      ratio: fmtRatio(o / r),
      target: '(information)',
      met: '',
    });
  }
}

// 8 and 9: one big job into md5sum.
function benchMd5(packet, size, expectedMd5) {
  const checkMd5 = (side, res, what) => {
    expectOk(res, `${side.name} ${what}`);
    if (res.stdout !== expectedMd5)
      fail(
        `${side.name} ${what}: md5sum printed ${JSON.stringify(res.stdout)}, expected ${JSON.stringify(expectedMd5)}`,
        res,
      );
  };
  if (want(8)) {
    const label = `queue-process 1 job of ${fmtSize(size)} into md5sum`;
    log(`8. ${label}`);
    const tpl = path.join(WORK, 'tpl-8');
    makeQueueDir(tpl);
    fs.linkSync(packet, path.join(tpl, 'jobs', `fspl-${randomUUID()}.fspl`));
    const runs = alternate(label, opts.rounds, {
      // cp -a gives each run its own copy of the job file (not a hard link).
      prepare: () => ({ q: freshCopy(tpl, 'q') }),
      run: (side, { q }) => runTimed([...side.argv, 'queue-process', '-q', q, 'md5sum']),
      check: (side, { q }, res) => {
        checkMd5(side, res, label);
        expectDrained(q, 1, res, `${side.name} ${label}`);
      },
      cleanup: ({ q }) => fs.rmSync(q, { recursive: true, force: true }),
    });
    fs.rmSync(tpl, { recursive: true, force: true });
    ratioRow(8, `\`queue-process\`, one ${fmtSize(size)} job into \`md5sum\``, runs, 1.1);
    addDetails('8', label, runs);
  }
  if (want(9)) {
    const label = `stdin-process ${fmtSize(size)} packet into md5sum`;
    log(`9. ${label}`);
    const runs = alternate(label, opts.rounds, {
      run: (side) => runTimed([...side.argv, 'stdin-process', 'md5sum'], { stdin: packet }),
      check: (side, _ctx, res) => checkMd5(side, res, label),
    });
    ratioRow(9, `\`stdin-process\`, a ${fmtSize(size)} packet into \`md5sum\` (stdin from the file)`, runs, 1.15);
    addDetails('9', label, runs);
  }
}

// ---------------------------------------------------------------- report

function machine() {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  const cores = (cpuinfo.match(/^processor\s*:/gm) || []).length || os.cpus().length;
  const memKiB = Number(/^MemTotal:\s*(\d+)/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0);
  return { model, cores, ramGiB: memKiB / 1024 / 1024 };
}

function gitDescribe(dir = ROOT) {
  try {
    const rev = sh('git', ['-C', dir, 'rev-parse', '--short', 'HEAD']).trim();
    const dirty = sh('git', ['-C', dir, 'status', '--porcelain', '--', 'src']).trim()
      ? ' (src/ has uncommitted changes)'
      : '';
    return `${rev}${dirty}`;
  } catch {
    return 'unknown';
  }
}

function fsType(dir) {
  try {
    return sh('stat', ['-f', '-c', '%T', dir]).trim();
  } catch {
    return 'unknown';
  }
}

function floorsSection() {
  if (floors.spawnPerJob === undefined) return '';
  const r2 = results.find((r) => r.id === '2');
  const r3 = results.find((r) => r.id === '3');
  const d2 = details.find((d) => d.id === '2' && d.side === 'ours');
  const n = floors.jobs;
  const nativeRow =
    floors.nativePerJob === undefined
      ? ''
      : `| the same loop through fspl's native addon (its clone and exec, the way ours starts jobs; row ` +
        `2's floor) | ${floors.nativePerJob.toFixed(2)} ms | ${fmtMs(floors.nativePerJob * n)} |\n`;
  let row2;
  if (floors.nativePerJob !== undefined) {
    // What is left above the spawn floor: start-up and the per-job JS work.
    const start = startup.ours?.median;
    const rest = d2 && start !== undefined ? d2.wall.median - start - floors.nativePerJob * n : undefined;
    row2 =
      `- Row 2 (${r2 ? r2.ours : '?'} against ${r2 ? r2.ref : '?'}): ours starts job commands through its
  native addon (native/child_start.c: \`clone(CLONE_VM|CLONE_VFORK)\` as glibc's \`posix_spawn\`, so
  nothing of Node's ~50 MiB is copied, nor its table of open files): ${floors.nativePerJob.toFixed(2)} ms a job for the bare loop, against
  ${floors.spawnPerJob.toFixed(2)} ms for \`child_process.spawn\` (a full \`fork()\`; libuv 1.46 uses neither vfork nor
  posix_spawn on Linux) and ${floors.shPerJob.toFixed(2)} ms ` +
      `for a shell's fork+exec. The reference's whole run costs about
  what that loop costs, so the difference is Node's start-up plus the per-job work (open the job
  and read its header, build its environment, record the job: the note in the lock file, nextseq,
  the unlink, their fsyncs, src/process/finish.ts)${
    rest !== undefined
      ? `:\n  ${fmtMs(rest)} here beyond our start-up (row 1) and ` +
        `the spawn loop, ${((rest / n) * 1000).toFixed(0)} µs a job`
      : ''
  }.\n  Without the addon (not built, or \`FSPL_NO_NATIVE=1\`) jobs start through \`child_process.spawn\`.`;
  } else {
    row2 =
      `- Row 2 (${r2 ? r2.ours : '?'} against ${r2 ? r2.ref : '?'}): measured ` +
      `${opts.noNative ? 'with `--no-native`' : 'without the native addon (not built)'}:
  Node's \`child_process.spawn\` does a full \`fork()\` of a ~50 MiB process (libuv 1.46 does not use
  vfork or posix_spawn on Linux), which costs ${floors.spawnPerJob.toFixed(2)} ms a job here before the command even
  starts, against ${floors.shPerJob.toFixed(2)} ms for a shell's fork+exec. That floor alone, times ${n} jobs, is
  ${fmtMs(floors.spawnPerJob * n)}. The native addon (\`npm ` +
      `run build\` builds it) starts jobs with a clone and exec instead (native/child_start.c).`;
  }
  return (
    `## Floors: what Node itself costs for the per-job work

Measured in the same run with \`bench/floors.mjs\` (loop time only, no start-up), to show how
much of rows 2 and 3 is Node's own cost for the same system calls rather than fspl's code.

| Measurement | Per job | For the workload |
| --- | --- | --- |
| bare \`child_process.spawn('/bin/true')\` loop in Node | ` +
    `${floors.spawnPerJob.toFixed(2)} ms | ${fmtMs(floors.spawnPerJob * n)} for ${n} jobs |
${nativeRow}| the same loop in \`sh\` (fork+exec as a small C program does it) ` +
    `| ${floors.shPerJob.toFixed(2)} ms | ${fmtMs(floors.shPerJob * n)} |
| Node doing a NOP run's system calls (the scan, then runs of NOPs recorded as ` +
    `one), no decoding (row 3's floor, plus start-up) | ${((floors.nopLoop / floors.nopJobs) * 1000).toFixed(1)}` +
    ` µs | ${fmtMs(floors.nopLoop)} for ${floors.nopJobs} jobs |

Where the time of rows 2 and 3 goes (and row 4's):
${row2}
  execa (on the design card) is slower than even \`child_process.spawn\`, about twice the bare
  spawn, so it is kept off this path (see src/sys/exec.ts).
- Row 3 (${r3 ? r3.ours : '?'} against ${r3 ? r3.ref : '?'}): a run of NOP jobs is recorded as one
  (src/process/finish.ts): one note, one nextseq update and one fsync of \`jobs/\` for up to 1,024 NOPs, and
  an unlink each, where the reference writes \`nextseq\` (temp, rename) for every job. What is left
  is the node start-up floor, the scan and the unlinks: ${fmtMs(floors.nopLoop)} for Node to make the
  same calls with no fspl logic at all.
- Row 4: ${
      NATIVE
        ? `the scan reads every job file's first 4 KiB (open, pread, close) and decodes the headers in
  the usual encoding in one call to the native addon; what is left is Node's start-up, listing
  \`jobs/\` (one \`fs.Dir\` entry object per file), building, sorting and printing the entries (local
  timestamps included). Without the addon, the reads go through Node's synchronous fs bindings
  and the headers through the JS MessagePack decoder.`
        : `without the native addon, each header is read with one 4 KiB read through Node's synchronous
  fs bindings and decoded by the JS MessagePack decoder (decoders are reused); a CPU profile shows
  the time spread over start-up, those calls, decoding and garbage collection.`
    }
`
  );
}

function table(headers, rows) {
  const esc = (c) => String(c).replace(/\|/g, '\\|');
  return [
    `| ${headers.join(' | ')} |`,
    `| ${headers.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}

/**
 * Floors for the per-job workloads: Node's own cost for the same system calls, without fspl.
 * Medians of a few runs, each the loop time only (process start-up excluded).
 */
function benchFloors() {
  log('floors: bare Node spawn loop and NOP-run system calls');
  const floorScript = path.join(ROOT, 'bench', 'floors.mjs');
  const n = SIZES.trueJobs;
  const spawnMs = [];
  const nativeMs = [];
  const shMs = [];
  const nopMs = [];
  const template = path.join(WORK, 'floor-nop-template');
  makeQueue(template, SIZES.nopJobs, 'nop');
  for (let r = 0; r < Math.max(1, Math.min(opts.rounds, 3)); r++) {
    spawnMs.push(Number(sh(process.execPath, [floorScript, 'spawn', String(n)], 'spawn floor').trim()));
    if (NATIVE)
      nativeMs.push(
        Number(sh(process.execPath, [floorScript, 'native-spawn', String(n)], 'native spawn floor').trim()),
      );
    const t = process.hrtime.bigint();
    sh('sh', ['-c', `i=0; while [ $i -lt ${n} ]; do /bin/true; i=$((i+1)); done`], 'shell spawn loop');
    shMs.push(ms(t));
    const q = freshCopy(template, `floor-nop-${r}`);
    nopMs.push(Number(sh(process.execPath, [floorScript, 'nop', q], 'nop floor').trim()));
    fs.rmSync(q, { recursive: true, force: true });
  }
  fs.rmSync(template, { recursive: true, force: true });
  floors.jobs = n;
  floors.nopJobs = SIZES.nopJobs;
  floors.spawnPerJob = median(spawnMs) / n;
  floors.nativePerJob = NATIVE ? median(nativeMs) / n : undefined;
  floors.shPerJob = median(shMs) / n;
  floors.nopLoop = median(nopMs);
}

// W: queue-process --watch, rename-to-start latency (an extension: the reference has no watch mode).
function benchWatch() {
  const n = opts.quick ? 5 : 40;
  for (const poll of [undefined, '0.1']) {
    const what = poll ? `--poll-interval ${poll}` : 'file system events';
    log(`W. queue-process --watch (${what}): ${n} jobs, one at a time`);
    const r = spawnSync(
      NODE,
      [
        path.join(ROOT, 'bench', 'watch-latency.mjs'),
        '--dir',
        WORK,
        '--jobs',
        String(n),
        ...(poll ? ['--poll', poll] : []),
      ],
      {
        env: ENV,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        timeout: 120_000,
      },
    );
    if (r.status !== 0) throw new BenchError(`watch latency (${what}) failed with status ${r.status}`);
    const { latencies } = JSON.parse(r.stdout.trim());
    const sorted = [...latencies].sort((a, b) => a - b);
    const p95 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)];
    const max = sorted[sorted.length - 1];
    results.push({
      id: 'W',
      workload:
        `\`queue-process --watch\`${poll ? ` \`--poll-interval ${poll}\`` : ''}: from ` +
        `a job's rename into \`jobs/\` to its command's start (${what}; ${n} jobs)`,
      ours: `${fmtMs(median(latencies))} (p95 ${fmtMs(p95)}, max ${fmtMs(max)})`,
      ref: '— (no watch mode)',
      ratio: '—',
      target: '≤ 200 ms (extension)',
      met: met(max, 200),
    });
  }
}

/**
 * The report, with the marked blocks of the file it replaces that it does not make itself: the
 * other benches' tables (`<!-- net-bench:begin -->` ... `<!-- net-bench:end -->`, spliced in by
 * bench/net.mjs and the like) and the sections written by hand (`<!-- notes:begin NAME -->` ...
 * `<!-- notes:end NAME -->`), in their order, after it. A full run refreshes its own part and
 * loses nothing else.
 */
function keptBlocks(md, file) {
  let old;
  try {
    old = fs.readFileSync(file, 'utf8');
  } catch {
    return md;
  }
  const blocks = [...old.matchAll(/^<!-- ([\w-]+):begin( [\w-]+)? -->\n[\s\S]*?^<!-- \1:end\2 -->$/gm)];
  const kept = blocks.map((m) => m[0]).filter((b) => !md.includes(b.slice(0, b.indexOf('\n'))));
  return kept.length === 0 ? md : `${md.replace(/\n*$/, '\n')}\n${kept.join('\n\n')}\n`;
}

function report(meta) {
  const main = table(
    ['#', 'Workload', 'Ours (median)', 'Reference (median)', 'Ratio ours/ref', 'Target', 'Met?'],
    results.map((r) => [r.id, r.workload, r.ours, r.ref, r.ratio, r.target, r.met]),
  );
  const s = startup;
  let startupSection = '';
  if (s.floor && s.load && s.ours) {
    const pct = (v) => `${((v / s.ours.median) * 100).toFixed(0)}%`;
    const load = s.load.median - s.floor.median;
    const rest = s.ours.median - s.load.median;
    const cpu = (k) => `${fmtMs(s[k].cpu.median)} (${fmtRatio(s[k].cpu.median / s.floor.cpu.median)})`;
    const wall = (k) => `${fmtMs(s[k].median)} (${fmtRatio(s[k].median / s.floor.median)})`;
    const rows = [
      ['(a) `node -e 0`: the Node floor', wall('floor'), cpu('floor'), '—', 'Node itself: V8, bootstrap, exit'],
      [
        `(b) \`node -e "require('bin/fspl').requireChunk('${s.entry}')"\`: module load only`,
        wall('load'),
        cpu('load'),
        `${fmtMs(load)} (b − a)`,
        "bin/fspl's loader, and the first chunk (group-start.cjs) with the chunks it requires",
      ],
      [
        '(c) full `fspl gen-uuid`',
        wall('ours'),
        cpu('ours'),
        `${fmtMs(rest)} (c − b)`,
        'argument parsing, modules imported on demand, the work, exit',
      ],
      [
        'for comparison: `fspl -V`',
        wall('version'),
        cpu('version'),
        `${fmtMs(s.version.median - s.load.median)} (vs b)`,
        'the same entry load, answered before any handler is imported',
      ],
      [
        '`fspl queue-process -q EMPTY true`',
        wall('process'),
        cpu('process'),
        `${fmtMs(s.process.median - s.load.median)} (vs b)`,
        'the queue-process handler, the queue and processing modules, the lock (the native addon), one scan',
      ],
      ['for comparison: reference `fspl gen-uuid`', fmtMs(s.ref.median), fmtMs(s.ref.cpu.median), '', ''],
      [
        'for comparison: reference `fspl queue-process -q EMPTY true`',
        fmtMs(s.refProcess.median),
        fmtMs(s.refProcess.cpu.median),
        '',
        '',
      ],
    ];
    startupSection = `## Where our start-up time goes

Medians of ${opts.coldRounds} runs of each process, interleaved with the cold-start measurements above:
each round runs every probe once bare (wall time of the whole process spawned from the harness,
the spawn included) and once under bash, whose \`times\` gives the user+sys CPU of its child
(getrusage, to the millisecond; the CPU column is the mean of the middle half of the runs, the
wall column the median). Ratios are to (a), measured in the same rounds.
Differences of medians of noisy measurements: read them as estimates to within a few ms.

${table(['Measurement', 'Median wall (/ a)', 'Median CPU (/ a)', 'Difference (wall)', 'What the difference is'], rows)}

Of our ${fmtMs(s.ours.median)} for \`gen-uuid\`: ${fmtMs(s.floor.median)} (${pct(s.floor.median)}) is Node itself,
${fmtMs(load)} (${pct(load)}) loading the entry module graph, and ${fmtMs(rest)} (${pct(rest)}) argument
parsing, lazily imported modules and the work. To look deeper:
\`node --cpu-prof --cpu-prof-dir=/tmp/prof bin/fspl gen-uuid\`, then open the \`.cpuprofile\` in
Chrome DevTools.
`;
  }
  const det = table(
    ['#', 'Run', 'Side', 'Wall median', 'Wall min–max', 'CPU median (user+sys)', 'Max RSS median'],
    details.map((d) => [
      d.id,
      d.label,
      d.side,
      fmtMs(d.wall.median),
      `${fmtMs(d.wall.min)} – ${fmtMs(d.wall.max)}`,
      d.cpu ? `${d.cpu.median.toFixed(2)} s` : '—',
      d.rss ? fmtMiB(d.rss.median) : '—',
    ]),
  );
  const m = meta.machine;
  // The page keeps the tables; the prose goes to the notes, under the same headings. The many-queues
  // section goes to the notes whole: the cost section's table holds its figures against the floor.
  const subs = [netSection, costSection, signedSection, durabilitySection].filter((x) => x).map(splitSection);
  const own = [startupSection].filter((x) => x).map(splitSection);
  const page =
    `# Benchmarks: TypeScript \`fspl\` against the reference

Generated by \`npm run bench\` (\`bench/run.mjs\`)` +
    `${opts.quick ? ' in **quick mode** (tiny sizes, smoke test only: numbers mean nothing)' : ''}.
Notes on each figure, profiles and past results: [benchmarks-notes.md](benchmarks-notes.md).

## How to run

- \`npm run bench\`: build, run all, rewrite this page and the notes' generated parts.
- \`node bench/run.mjs --quick\`: a smoke run in seconds, into a temp file. \`--help\` lists the options.
- \`--only 2,3\`: some workloads (N nets, M many queues, C cost above the floor, G signed, D durability).
- \`node bench/net.mjs --splice docs/benchmarks.md\` (or many, cost, signed, durability): one bench alone.
- Needs the reference at \`/usr/bin/fspl\` and GNU time.

## Method

Each round runs ours, then the reference, on fresh copies of the same input. A figure is the
median of several rounds; ratios compare sides of the same run. CPU (user+sys) and peak RSS come
from GNU time, children included. Every run is checked; a failed check aborts. The machine is
shared: compare ratios, not absolute times across runs. The spread is in
[Details](benchmarks-notes.md#details).

| | |
| --- | --- |
| Date | ${meta.date} |
| Machine | ${m.model}, ${m.cores} cores, ${m.ramGiB.toFixed(1)} GiB RAM (${os.type()} ${os.release()}) |
| Node | ${process.version} |
| Reference | ${meta.refVersion} (\`${opts.ref}\`) |
| Ours | \`node bin/fspl\`, commit ${meta.commit} at the start of the run |
| Native addon | ${
      NATIVE
        ? `used (\`native/build/Release/fspl_native.node\`: clone and exec for job commands, header reads)`
        : opts.noNative
          ? 'not used (`--no-native`: FSPL_NO_NATIVE=1)'
          : 'not built: pure-Node code'
    } |
| Queues and payloads | \`${opts.dir}\` (${meta.fs}) |
| Rounds | ${opts.rounds} per workload, ${opts.bigRounds} for ` +
    `the ${fmtSize(SIZES.pipe4)} run, ${opts.coldRounds} for start-up |
| Load average (1 min) | ${meta.loadStart} at the start, ${meta.loadEnd} at the end |
| Total run time | ${(meta.elapsed / 1000).toFixed(0)} s |

## Results

${main}

${[...own, ...subs].map((x) => x.tables).join('\n')}`;
  const notes = `${RUN_BEGIN}
## The main run (\`bench/run.mjs\`)

### How it is measured

- Input: a queue template built once with \`encodeHeader\`, copied with \`cp -a\` for each side and
  round. Generating and copying are not timed. Each round runs ours, then the reference.
- Wall time: \`process.hrtime\` around a synchronous spawn of the process, under \`/usr/bin/time\`.
  GNU time also gives CPU and max RSS, including the children the process waited for (\`md5sum\`).
  Start-up probes are spawned bare, then again under bash for their CPU.
- Rows 6–7: \`head -c SIZE /dev/zero | fspl prepare -s - -i - | fspl queue-write -q Q\`, each fspl
  under \`/usr/bin/time\`. CPU is the sum of the two fspl processes; peak RSS the larger of the two.
  With the addon, row 6 has three sides per round. Ours moves the payload in the kernel (\`splice\`,
  pipe to pipe in \`prepare\`, pipe to file in \`queue-write\`). The reference does read/write of 8 KiB.
  Ours with \`FSPL_NO_NATIVE=1\` does read/write over one reused 64 KiB buffer.
- Rows 6–7 are noisy. Writing 1 GiB into tmpfs takes 0.6–2.4 s of system time for the same
  command on this virtual machine, for both sides: read the medians. Issue 9 measured 1.5–1.9×
  where an earlier page said 1.14×; single runs spread that widely (1.2–4.3 s of CPU in one sitting).
  The two fspl processes also pay Node's start-up, about 0.3 s of CPU, which the reference does not.
  The CLI copies over one buffer. Only the library's stream API (\`preparePacket\`, \`Queue.write\`)
  allocates a chunk per read on the thread pool, and the CLI does not use it.
- Rows 2 and 3 (issue 30's targets: ≤ 1.3× and ≤ 1.2× the reference) give wall time and CPU
  (user+sys, commands included). CPU is less disturbed on a shared machine.
  \`--baseline DIR\` runs another built checkout as a third side in the same rounds, with two more rows.
- Rows W (\`bench/watch-latency.mjs\`): one \`queue-process --watch\` runs \`sh -c 'date +%s%N >> LOG'\`.
  Jobs are renamed into \`jobs/\` one at a time, 20–60 ms after the previous one ran. The latency is
  the logged start minus the rename's return, \`sh\` and \`date\` included: an upper bound.
  The target is issue 4's bound; the reference has no watch mode.
- Checks: exit status 0; \`jobs/\` empty and \`nextseq\` advanced after \`queue-process\`; \`queue-ls\`
  output equal to the reference's; the packet decodes with the right payload size; \`md5sum\` prints
  the expected digest.
- Environment: the harness's, without \`FSPL_*\` and \`NODE_OPTIONS\`, with \`SHELL=/bin/sh\` (it runs
  \`-d zcat\`).
${own.map((x) => x.notes).join('\n')}
${floorsSection()}
${profileSection()}
## Details

${det}
${RUN_END}
`;
  return { page, notes: [notes, ...subs.map((x) => x.notes), manySection].filter((x) => x) };
}

/**
 * A bench of its own that prints a markdown section (bench/net.mjs, bench/many.mjs), run with this
 * run's directory, reference and rounds (at most 3): its section, put in before the details.
 */
function sectionBench(script) {
  const args = [
    path.join(ROOT, 'bench', script),
    '--dir',
    opts.dir,
    '--ref',
    opts.ref,
    '--rounds',
    String(Math.min(opts.rounds, 3)),
  ];
  if (opts.quick) args.push('--quick');
  const r = spawnSync(NODE, args, {
    env: ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * MiB,
  });
  if (r.status !== 0) throw new BenchError(`bench/${script} failed with status ${r.status}`);
  return r.stdout;
}

// N: nets (bench/net.mjs, issue 11).
let netSection = '';
function benchNets() {
  log('N. nets: bench/net.mjs');
  netSection = sectionBench('net.mjs');
}

// M: many queues in one process (bench/many.mjs, issue 30).
let manySection = '';
function benchMany() {
  log('M. many queues: bench/many.mjs');
  manySection = sectionBench('many.mjs');
}

// C: the remaining cost per queue and per firing, against the commands' own floor (bench/cost.mjs).
let costSection = '';
function benchCost() {
  log('C. the cost above the floor: bench/cost.mjs');
  costSection = sectionBench('cost.mjs');
}

// G: signed packets (bench/signed.mjs, issue 39).
let signedSection = '';
function benchSigned() {
  log('G. signed packets: bench/signed.mjs');
  signedSection = sectionBench('signed.mjs');
}

// D: the cost of durability (bench/durability.mjs): on a disk, not opts.dir (tmpfs makes fsync free).
let durabilitySection = '';
function benchDurability() {
  log('D. durability: bench/durability.mjs');
  const args = [
    path.join(ROOT, 'bench', 'durability.mjs'),
    '--ref',
    opts.ref,
    '--rounds',
    String(Math.min(opts.rounds, 3)),
  ];
  if (opts.quick) args.push('--quick');
  const r = spawnSync(NODE, args, {
    env: ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * MiB,
  });
  if (r.status !== 0) throw new BenchError(`bench/durability.mjs failed with status ${r.status}`);
  durabilitySection = r.stdout;
}

// ---------------------------------------------------------------- main

let WORK;

async function main() {
  const t0 = Date.now();
  if (!fs.existsSync(TIME)) die(`${TIME} is missing: apt-get install -y time`);
  if (!fs.existsSync(opts.ref)) die(`the reference ${opts.ref} is missing: apt-get install -y filespooler`);
  ({ encodeHeader, decodeHeader } = await import(pathToFileURL(path.join(DIST, 'index.js')).href));
  const refVersion = sh(opts.ref, ['--version']).trim();
  const loadStart = os.loadavg()[0].toFixed(2);
  const commit = gitDescribe(); // at the start: src/ may change while we run
  // Room for the largest moment: the 4 GiB packet written by queue-write, or the md5 packet and its copy.
  const need =
    Math.max(want(7) ? SIZES.pipe4 : want(6) ? SIZES.pipe1 : 0, want(8) ? 2 * SIZES.md5 : want(9) ? SIZES.md5 : 0) +
    256 * MiB;
  const st = fs.statfsSync(opts.dir);
  if (st.bavail * st.bsize < need)
    die(
      `${opts.dir} has ${fmtSize(st.bavail * st.bsize)} free; ` +
        `this run needs about ${fmtSize(need)} (use --dir or --quick)`,
    );
  WORK = fs.mkdtempSync(path.join(opts.dir, 'fspl-bench-'));
  const cleanupWork = () => fs.rmSync(WORK, { recursive: true, force: true });
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      cleanupWork();
      process.exit(130);
    });
  }
  log(
    `${opts.quick ? 'quick' : 'full'} run; work dir ${WORK}; ours: ` +
      `${SIDES.ours.argv.join(' ')}; ref: ${opts.ref} (${refVersion})`,
  );
  try {
    // The floor is needed by workload 4's target, so measure start-up if either is wanted.
    if (want(1) || want(4)) {
      log('1. cold start');
      benchColdStart();
    }
    if (want(2) || want(3)) benchFloors();
    if (want(2)) benchQueueProcess(2, SIZES.trueJobs, 'command', 1.3);
    if (want(3)) benchQueueProcess(3, SIZES.nopJobs, 'nop', 1.2);
    if (want('P')) benchProfile();
    if (want(4)) benchQueueLs(4, SIZES.lsJobs, { gzip: false });
    if (want(5)) benchQueueLs(5, SIZES.zcatJobs, { gzip: true });
    if (want('W')) benchWatch();
    benchPipelines();
    if (want('S')) benchSeal();
    if (want('N')) benchNets();
    if (want('M')) benchMany();
    if (want('C')) benchCost();
    if (want('G')) benchSigned();
    if (want('D')) benchDurability();
    if (want(8) || want(9)) {
      const packet = path.join(WORK, 'big.fspl');
      log(`generating a ${fmtSize(SIZES.md5)} packet`);
      writeBigPacket(packet, SIZES.md5);
      const expected = sh('bash', ['-c', `head -c ${SIZES.md5} /dev/zero | md5sum`], 'md5sum of the payload');
      benchMd5(packet, SIZES.md5, expected);
      fs.rmSync(packet, { force: true });
    }
  } finally {
    cleanupWork();
  }
  const md = report({
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine: machine(),
    refVersion,
    commit,
    fs: fsType(opts.dir),
    loadStart,
    loadEnd: os.loadavg()[0].toFixed(2),
    elapsed: Date.now() - t0,
  });
  fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  fs.writeFileSync(opts.out, keptBlocks(md.page, opts.out));
  for (const block of md.notes) {
    const name = block.match(/^<!-- ([\w-]+):begin -->/)[1];
    spliceSection(notesFile(opts.out), block, `<!-- ${name}:begin -->`, `<!-- ${name}:end -->`);
  }
  process.stdout.write(md.page);
  log(`wrote ${opts.out} and ${notesFile(opts.out)} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

main().catch((err) => {
  if (err instanceof BenchError) {
    process.stderr.write(`\n[bench] ABORTED: ${err.message}\n`);
  } else {
    process.stderr.write(`\n[bench] ABORTED (harness error): ${err?.stack ? err.stack : err}\n`);
  }
  process.exit(1);
});
