#!/usr/bin/env node
/**
 * What the power-cut protocol costs (issue: power cuts): the directory fsyncs that make a
 * rename or unlink durable, measured on a real disk (fsync on tmpfs is free, so /dev/shm would
 * show nothing). Each workload runs twice in one run, in child processes: as shipped, and with
 * FSPL_BENCH_NO_DIRSYNC=1 (src/sys/durable.ts: every directory fsync skipped, the code as it was
 * before the protocol); queue-write and queue-process run the reference beside them too.
 *
 *   node bench/durability.mjs [--quick] [--rounds N] [--dir DIR] [--ref /usr/bin/fspl]
 *                             [--splice docs/benchmarks.md]
 *
 * --dir must be on a disk (default /var/tmp); prints a markdown section; --splice puts its table into
 * docs/benchmarks.md and its notes into docs/benchmarks-notes.md, between its markers. Needs `npm run build` first.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEnv, median } from './common.mjs';
import { spliceSplit } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const SELF = fileURLToPath(import.meta.url);
const NODE = process.execPath;
const BEGIN = '<!-- durability-bench:begin -->';
const END = '<!-- durability-bench:end -->';
const ENV = benchEnv();
const log = (m) => process.stderr.write(`[durability-bench] ${m}\n`);

// ---------------------------------------------------------------- child: one library workload, timed

/** Runs in a child process (its FSPL_BENCH_NO_DIRSYNC fixed at load); prints ms per item. */
async function child(what, n, dir) {
  const lib = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
  const { Queue, Net, preparePacket } = lib;
  const packet = async (i) => {
    const chunks = [];
    for await (const c of preparePacket({ seq: BigInt(i), payload: Buffer.from(`job ${i}\n`) })) chunks.push(c);
    return Buffer.concat(chunks);
  };
  if (what === 'write') {
    const q = Queue.init(path.join(dir, 'q'));
    const packets = await Promise.all(Array.from({ length: n }, (_, i) => packet(i + 1)));
    const t0 = process.hrtime.bigint();
    for (const p of packets) q.writeBuffer(p);
    return Number(process.hrtime.bigint() - t0) / 1e6 / n;
  }
  if (what === 'process') {
    const q = Queue.init(path.join(dir, 'q'));
    for (let i = 1; i <= n; i++) q.writeBuffer(await packet(i));
    const t0 = process.hrtime.bigint();
    const s = await q.process(async () => {});
    if (s.succeeded !== n) throw new Error(`processed ${s.succeeded} of ${n}`);
    return Number(process.hrtime.bigint() - t0) / 1e6 / n;
  }
  if (what === 'net') {
    const file = path.join(dir, 'net.yaml');
    fs.writeFileSync(
      file,
      'places: { a: {}, b: {}, c: {} }\ntransitions:\n' +
        '  m1: { in: a, out: b, run: null }\n  m2: { in: b, out: c, run: null }\n',
    );
    const net = Net.load(file);
    net.init();
    for (let i = 0; i < n; i++) await net.put('a', Buffer.from('x'), { key: `k${i}` });
    const t0 = process.hrtime.bigint();
    await net.run({ drain: true });
    const left = fs.readdirSync(path.join(dir, 'places/c/jobs')).length;
    if (left !== n) throw new Error(`${left} of ${n} tokens reached c`);
    return Number(process.hrtime.bigint() - t0) / 1e6 / (2 * n); // two firings per token
  }
  throw new Error(`unknown workload ${what}`);
}

if (process.argv[2] === '--child') {
  const [, , , what, n, dir] = process.argv;
  process.stdout.write(`${await child(what, Number(n), dir)}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------- parent

function parseArgs(argv) {
  const o = {
    quick: process.env.BENCH_QUICK === '1',
    rounds: undefined,
    dir: '/var/tmp',
    ref: process.env.FSPL_REF ?? '/usr/bin/fspl',
    splice: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') o.quick = true;
    else if (a === '--rounds') o.rounds = Number(argv[++i]);
    else if (a === '--dir') o.dir = argv[++i];
    else if (a === '--ref') o.ref = argv[++i];
    else if (a === '--splice') o.splice = argv[++i];
    else if (a === '--help' || a === '-h') {
      process.stdout.write(fs.readFileSync(SELF, 'utf8').split('*/')[0]);
      process.exit(0);
    } else {
      process.stderr.write(`bench/durability.mjs: unknown option ${a}\n`);
      process.exit(2);
    }
  }
  o.rounds ??= o.quick ? 1 : 5;
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const fsType = (() => {
  const r = spawnSync('findmnt', ['-n', '-o', 'FSTYPE', '-T', opts.dir], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
})();
let WORK;

function fresh() {
  return fs.mkdtempSync(path.join(WORK, 'w-'));
}

const SIDES = [
  { id: 'ours', label: 'ours (durable)', env: ENV },
  { id: 'nosync', label: 'ours, directory fsyncs skipped', env: { ...ENV, FSPL_BENCH_NO_DIRSYNC: '1' } },
];

function runChild(what, n, env) {
  const dir = fresh();
  try {
    const r = spawnSync(NODE, [SELF, '--child', what, String(n), dir], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${what} child failed: ${r.stderr}`);
    return Number(r.stdout.trim());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** ms per job of `fspl queue-write` (a process each), for one implementation. */
function cliWrite(argv0, n, env) {
  const dir = fresh();
  try {
    const q = path.join(dir, 'q');
    const pkt = path.join(dir, 'pkt');
    spawnSync(NODE, [BIN, 'queue-init', '-q', q], { env });
    const p = spawnSync(NODE, [BIN, 'prepare', '-s', '-', '-i', '-'], { env, input: 'x\n' });
    fs.writeFileSync(pkt, p.stdout);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const r = spawnSync(argv0[0], [...argv0.slice(1), 'queue-write', '-q', q], { env, input: fs.readFileSync(pkt) });
      if (r.status !== 0) throw new Error(`queue-write failed: ${r.stderr}`);
    }
    return Number(process.hrtime.bigint() - t0) / 1e6 / n;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** ms per job of `fspl queue-process` running `true` (or over NOP jobs), for one implementation. */
function cliProcess(argv0, n, env, kind = 'command') {
  const dir = fresh();
  try {
    const q = path.join(dir, 'q');
    spawnSync(NODE, [BIN, 'queue-init', '-q', q], { env });
    // n jobs numbered 1..n, written by the library (not what is timed).
    const r0 = spawnSync(
      NODE,
      [
        '--input-type=module',
        '-e',
        `
      const { Queue, preparePacket } = await import(` +
          `${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href)});
      const q = Queue.open(${JSON.stringify(q)});
      const { encodeHeader } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href)});
      for (let i = 1; i <= ${n}; i++) {
        if (${JSON.stringify(kind)} === 'nop') q.writeBuffer(encodeHeader({ ` +
          `seq: BigInt(i), ctime: { secs: 1700000000n, nanos: 0 }, cmd: { kind: 'NOP' } }));
        else await q.write(preparePacket({ seq: BigInt(i) }));
      }`,
      ],
      { env, encoding: 'utf8' },
    );
    if (r0.status !== 0) throw new Error(`filling the queue failed: ${r0.stderr}`);
    const t0 = process.hrtime.bigint();
    const r = spawnSync(argv0[0], [...argv0.slice(1), 'queue-process', '-q', q, 'true'], { env });
    if (r.status !== 0) throw new Error(`queue-process failed: ${r.stderr}`);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6 / n;
    if (fs.readdirSync(path.join(q, 'jobs')).length !== 0) throw new Error('queue-process left jobs');
    return ms;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Rounds interleave the sides (A B C, A B C, ...), so that a noisy moment of a shared machine falls on all of them. */
function measure(rows, label, n, unit, fns) {
  const xs = fns.map(() => []);
  for (let r = 0; r < opts.rounds; r++) fns.forEach(({ fn }, i) => xs[i].push(fn()));
  const results = fns.map(({ side }, i) => ({ side, ms: median(xs[i]) }));
  log(`${label}: ${results.map((r) => `${r.side} ${r.ms.toFixed(3)} ms`).join(', ')}`);
  rows.push({ label, n, unit, results });
}

WORK = fs.mkdtempSync(path.join(opts.dir, 'fspl-durability-bench-'));
const t0 = Date.now();
const load = os.loadavg()[0].toFixed(2);
const rows = [];
const haveRef = fs.existsSync(opts.ref);
try {
  const N = opts.quick
    ? { lib: 100, cli: 5, proc: 20, nop: 100, net: 50 }
    : { lib: 2000, cli: 100, proc: 300, nop: 3000, net: 1000 };
  measure(
    rows,
    'Queue.writeBuffer (library), per job',
    N.lib,
    'job',
    SIDES.map((s) => ({ side: s.label, fn: () => runChild('write', N.lib, s.env) })),
  );
  measure(rows, '`fspl queue-write` (a process per job), per job', N.cli, 'job', [
    ...SIDES.map((s) => ({ side: s.label, fn: () => cliWrite([NODE, BIN], N.cli, s.env) })),
    ...(haveRef ? [{ side: 'reference', fn: () => cliWrite([opts.ref], N.cli, ENV) }] : []),
  ]);
  measure(
    rows,
    'Queue.process with a JavaScript function (library), per job',
    N.lib,
    'job',
    SIDES.map((s) => ({ side: s.label, fn: () => runChild('process', N.lib, s.env) })),
  );
  measure(rows, '`fspl queue-process` running `true`, per job', N.proc, 'job', [
    ...SIDES.map((s) => ({ side: s.label, fn: () => cliProcess([NODE, BIN], N.proc, s.env) })),
    ...(haveRef ? [{ side: 'reference', fn: () => cliProcess([opts.ref], N.proc, ENV) }] : []),
  ]);
  measure(rows, '`fspl queue-process` of NOP jobs, per job', N.nop, 'job', [
    ...SIDES.map((s) => ({ side: s.label, fn: () => cliProcess([NODE, BIN], N.nop, s.env, 'nop') })),
    ...(haveRef ? [{ side: 'reference', fn: () => cliProcess([opts.ref], N.nop, ENV, 'nop') }] : []),
  ]);
  measure(
    rows,
    'net commit: moves (`run: null`) through 2 transitions (library `run --drain`), per firing',
    N.net,
    'firing',
    SIDES.map((s) => ({ side: s.label, fn: () => runChild('net', N.net, s.env) })),
  );
} finally {
  fs.rmSync(WORK, { recursive: true, force: true });
}

const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`);
const table = rows
  .map((r) => {
    const base = r.results.find((x) => x.side.startsWith('ours,'));
    const ours = r.results.find((x) => x.side === 'ours (durable)');
    const ref = r.results.find((x) => x.side === 'reference');
    return (
      `| ${r.label} (n = ${r.n}) | ${fmt(ours.ms)} | ${fmt(base.ms)} | ${ours.ms >= base.ms ? '+' : '−'}` +
      `${fmt(Math.abs(ours.ms - base.ms))} (${(ours.ms / base.ms).toFixed(2)}×) | ` +
      `${ref ? fmt(ref.ms) : '—'} |`
    );
  })
  .join('\n');
const md =
  `${BEGIN}
## The cost of durability (power cuts)

Generated by \`bench/durability.mjs\`` +
  `${opts.quick ? ' in **quick mode** (tiny sizes: numbers mean nothing)' : ''} on ` +
  `${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, ${os.cpus().length} cores,
in \`${opts.dir}\` (${fsType}: a disk, where fsync costs what it costs); load average ${load} at the start,
${os.loadavg()[0].toFixed(2)} at the end; median of ${opts.rounds} round(s), the sides ` +
  `interleaved; ${((Date.now() - t0) / 1000).toFixed(0)} s in all.

Each workload runs as shipped, and again with \`FSPL_BENCH_NO_DIRSYNC=1\`, which skips the fsyncs
the power-cut protocol added (docs/reliability.md, "Power cuts"): every directory fsync, and
queue-process's note; the code as it was before, as far as its ` +
  `cost goes. The difference is what surviving a power cut costs.

| workload | ours (durable) | ours, directory fsyncs skipped | cost of durability | reference |
| --- | --- | --- | --- | --- |
${table}

- queue-write: one fsync of \`jobs/\` after the rename, so that a job reported ` +
  `written is there after a power cut (the reference skips it and loses such jobs).
- queue-process (src/process/finish.ts): per job, the note naming the finished job (and the deletions ` +
  `not yet durable) is fdatasynced and \`nextseq\`'s directory is fsynced after the rename (the job is not ` +
  `run again); \`jobs/\` is fsynced once for the deletions of up to 16 jobs, and when the run rests or ends ` +
  `(the spent files stay gone). A run of NOP jobs is recorded as one: one note, one \`nextseq\` update, one ` +
  `fsync of \`jobs/\` for up to 1,024 NOPs (the reference writes \`nextseq\` for each, with its fsync).
- net commit: each step of a commit is durable before the next (the table in ` +
  `src/net/commit/commit.ts): the staged token's \`jobs/\`, \`sendseq\`'s directory, the ` +
  `output's \`jobs/\` after the rename, \`nextseq\`'s directory and the input's \`jobs/\` ` +
  `after the consume. Group commit (one fsync per directory for several firings) is the way to win this back.
${END}
`;
if (opts.splice) {
  spliceSplit(opts.splice, md, BEGIN, END);
  log(`wrote the section into ${opts.splice}`);
}
process.stdout.write(md);
