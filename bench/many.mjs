#!/usr/bin/env node
/**
 * Benchmarks of many queues in one process (issue 30): `fspl queue-process` over 1,000 queues in
 * one pass against the reference's loop (one `fspl queue-process` per queue, as cron runs them),
 * and 10,000 queues under `queue-process --watch --queues-in`: idle CPU, memory, and the time
 * from a job's rename into a queue to its command's start. Prints a markdown section on stdout;
 * bench/run.mjs calls it (`--only M`). Run alone:
 *
 *   node bench/many.mjs [--quick] [--rounds N] [--only pass,watch] [--dir DIR] [--ref /usr/bin/fspl]
 *                       [--splice docs/benchmarks.md]
 *
 * Needs `npm run build` first.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchEnv, median, refQueuesScript, shq, underTime } from './common.mjs';
import { parseSectionArgs } from './section-args.mjs';
import { notesFile, spliceSection } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const NODE = process.execPath;
const BEGIN = '<!-- many-bench:begin -->';
const END = '<!-- many-bench:end -->';

/** Run as a script (not imported by bench/cost.mjs for watchIdle). */
const isMain = !!process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
const opts = isMain ? parseSectionArgs(process.argv.slice(2), import.meta.url) : undefined;
const want = (id) => !opts.only || opts.only.has(id);
const log = (m) => process.stderr.write(`[many-bench] ${m}\n`);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const x = (v) => `${v.toFixed(2)}×`;
const s2 = (v) => `${v.toFixed(2)} s`;
process.env.SHELL = '/bin/sh';
const ENV = benchEnv();
const loadavg = () => os.loadavg()[0].toFixed(2);

const WORK = isMain ? fs.mkdtempSync(path.join(opts.dir, 'fspl-many-bench-')) : undefined;
if (isMain) process.on('exit', () => fs.rmSync(WORK, { recursive: true, force: true }));

function die(msg) {
  process.stderr.write(`bench/many.mjs: ${msg}\n`);
  process.exit(1);
}

/** Run a shell command line under GNU time: wall seconds, and CPU (user+sys) of it and its children. */
function timed(cmdline, what) {
  return underTime(['sh', '-c', cmdline], { dir: WORK, env: ENV, fail: (why) => die(`${what} ${why}`) });
}

// ------------------------------------------------------------------------------------------------
// pass: 1,000 queues, one job each, one pass

/** The queues, made by the reference (queue-init, prepare, queue-write), once: each round copies them. */
function makeTemplate(n) {
  const t = path.join(WORK, `template-${n}`);
  fs.mkdirSync(t);
  const r = spawnSync('sh', ['-c', refQueuesScript(opts.ref, n)], { cwd: t, env: ENV, encoding: 'utf8' });
  if (r.status !== 0) die(`making the queues failed: ${r.stderr}`);
  return t;
}

function fresh(template, name) {
  const d = path.join(WORK, name);
  fs.rmSync(d, { recursive: true, force: true });
  const r = spawnSync('cp', ['-a', template, d]);
  if (r.status !== 0) die(`cp -a failed: ${r.stderr}`);
  return d;
}

/** Every queue ran its job: nextseq 2, jobs/ empty, and the output file holds n lines. */
function checkPass(dir, n, out, what) {
  const lines = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean);
  if (lines.length !== n) die(`${what}: ${lines.length} lines of output, expected ${n}`);
  for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 50))) {
    const q = path.join(dir, `q${i}`);
    if (fs.readFileSync(path.join(q, 'nextseq'), 'utf8').trim() !== '2') die(`${what}: ${q} not processed`);
    if (fs.readdirSync(path.join(q, 'jobs')).length !== 0) die(`${what}: ${q}/jobs not empty`);
  }
}

function benchPass() {
  const n = opts.quick ? 100 : 1000;
  log(`pass: making ${n} queues with the reference`);
  const template = makeTemplate(n);
  const sides = {
    ref: (dir, out) =>
      `for q in ${shq(dir)}/q*; do ${shq(opts.ref)} queue-process -q "$q" sh -- -c 'cat >> ${out}' || exit 1; done`,
    ours: (dir, out) => `${shq(NODE)} ${shq(BIN)} queue-process --queues-in ${shq(dir)} sh -- -c 'cat >> ${out}'`,
  };
  const runs = { ref: [], ours: [], floor: [] };
  const loads = [];
  const list = path.join(WORK, 'list');
  fs.writeFileSync(list, Array.from({ length: n }, (_, i) => `${i}\n`).join(''));
  for (let round = 0; round < opts.rounds; round++) {
    // The floor: the same commands with no queue at all, started by xargs (fork and exec).
    const fout = path.join(WORK, 'out-floor');
    fs.writeFileSync(fout, '');
    runs.floor.push(timed(`xargs -a ${shq(list)} -I{} sh -c 'cat >> ${fout}' < /dev/null`, 'the floor'));
    for (const side of ['ours', 'ref']) {
      log(`pass: ${side}, round ${round + 1} of ${opts.rounds}`);
      const dir = fresh(template, `pass-${side}`);
      const out = path.join(WORK, `out-${side}`);
      fs.writeFileSync(out, '');
      loads.push(loadavg());
      runs[side].push(timed(sides[side](dir, out), `pass (${side})`));
      checkPass(dir, n, out, `pass (${side})`);
      fs.rmSync(dir, { recursive: true });
    }
  }
  const cpu = {
    ref: median(runs.ref.map((r) => r.cpu)),
    ours: median(runs.ours.map((r) => r.cpu)),
    floor: median(runs.floor.map((r) => r.cpu)),
  };
  const wall = { ref: median(runs.ref.map((r) => r.wall)), ours: median(runs.ours.map((r) => r.wall)) };
  const ratio = cpu.ours / cpu.ref;
  const ownMs = ((cpu.ours - cpu.floor) / n) * 1000;
  const refOwnMs = ((cpu.ref - cpu.floor) / n) * 1000;
  return {
    rows: [
      `| ${n.toLocaleString('en-US')} queues, one job each (\`sh -c 'cat >> F'\`), one pass: \`fspl ` +
        `queue-process --queues-in\`, CPU (user+sys, children included) | the reference's loop, one ` +
        `\`fspl queue-process\` per queue | ${s2(cpu.ours)} | ${s2(cpu.ref)} | ${x(ratio)} | ≤ ` +
        `0.3× | ${ratio <= 0.3 ? 'met' : '**missed**'} | ${loads[0]}–${loads[loads.length - 1]} |`,
      `| the same, wall | the same loop | ${s2(wall.ours)} | ${s2(wall.ref)}` +
        ` | ${x(wall.ours / wall.ref)} | — | (information) | |`,
      `| the commands alone: the same ${n.toLocaleString('en-US')} \`sh -c 'cat >> F'\` started by ` +
        `\`xargs\`, no queue (the floor both sides pay) | the reference's loop | ${s2(cpu.floor)} | ` +
        `${s2(cpu.ref)} | ${x(cpu.floor / cpu.ref)} | — | (the lowest ratio any processor can have here) | |`,
      `| CPU per queue above that floor | the reference's | ${ownMs.toFixed(2)} ms ` +
        `| ${refOwnMs.toFixed(2)} ms | ${x(ownMs / refOwnMs)} | — | (information) | |`,
    ],
    n,
  };
}

// ------------------------------------------------------------------------------------------------
// watch: 10,000 queues under --watch --queues-in

/** utime+stime of a process, in seconds (/proc/PID/stat). */
function cpuOf(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks: 100 a second on Linux
}

function rssOf(pid) {
  const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(st)?.[1]);
  return { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond, ms = 120_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) die(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A packet of sequence seq, made by the reference, read back as bytes. */
function refPacket(ref, seq, die) {
  const r = spawnSync(
    'sh',
    ['-c', `f=$(mktemp); echo ${seq} > "$f"; echo job | ${shq(ref)} prepare -s "$f" -i -; rm -f "$f" "$f.lock"`],
    { env: ENV },
  );
  if (r.status !== 0) die('prepare failed');
  return r.stdout;
}

/**
 * n empty queues under one `queue-process --watch --queues-in`, in WORK/watch: its idle CPU (a
 * fraction of a core) over idleSeconds, its memory, its start-up (to its first job run), and the
 * latency of `samples` jobs renamed into random queues. Also used by bench/cost.mjs.
 * The idle window starts settleSeconds after the first job; settleCpu is the CPU of that wait.
 */
export async function watchIdle({ n, idleSeconds, settleSeconds = 2, samples, work, ref, log, die }) {
  const parent = path.join(work, 'watch');
  log(`watch: making ${n} empty queues`);
  // Made as queue-init leaves them (jobs/, nextseq, nextseq.lock), directly: 10,000 reference
  // processes would only slow the bench down.
  for (let i = 0; i < n; i++) {
    const q = path.join(parent, `q${i}`);
    fs.mkdirSync(path.join(q, 'jobs'), { recursive: true });
    fs.writeFileSync(path.join(q, 'nextseq'), '1\n');
    fs.writeFileSync(path.join(q, 'nextseq.lock'), '');
  }
  const logFile = path.join(work, 'watch-log');
  fs.writeFileSync(logFile, '');
  // Queues made moments ago look as if they might have changed unseen (coarse time stamps): each
  // is scanned once more at its first safety look. A service starts over queues made long before.
  await sleep(3000);
  const child = spawn(
    NODE,
    [
      BIN,
      'queue-process',
      '--watch',
      '--queues-in',
      parent,
      'sh',
      '--',
      '-c',
      `echo "$(date +%s%N)" >> ${logFile}; cat > /dev/null`,
    ],
    {
      env: ENV,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const t0 = Date.now();
  // Started: every queue looked at once (its lock free, a job's rename seen). A first job proves it.
  const first = path.join(parent, 'q0', 'jobs');
  fs.writeFileSync(path.join(first, 'tmp-x'), refPacket(ref, 1, die));
  fs.renameSync(path.join(first, 'tmp-x'), path.join(first, 'fspl-00000000-0000-4000-8000-000000000000.fspl'));
  await until('the first job', () => fs.readFileSync(logFile, 'utf8').length > 0);
  const startup = (Date.now() - t0) / 1000;
  // Settle: the first look of every queue, the garbage collector.
  const s0 = cpuOf(child.pid);
  const sw0 = Date.now();
  await sleep(settleSeconds * 1000);
  const settleCpu = (cpuOf(child.pid) - s0) / ((Date.now() - sw0) / 1000);
  log(`watch: idle for ${idleSeconds} s`);
  const c0 = cpuOf(child.pid);
  const w0 = Date.now();
  await sleep(idleSeconds * 1000);
  const idleCpu = (cpuOf(child.pid) - c0) / ((Date.now() - w0) / 1000);
  const mem = rssOf(child.pid);
  // Latency: jobs renamed into random queues, one at a time, 20-60 ms apart.
  if (samples) log(`watch: ${samples} jobs renamed into random queues`);
  const latencies = [];
  const packet = refPacket(ref, 1, die);
  let seen = fs.readFileSync(logFile, 'utf8').split('\n').filter(Boolean).length;
  for (let k = 0; k < samples; k++) {
    const q = path.join(parent, `q${1 + Math.floor(Math.random() * (n - 1))}`, 'jobs');
    const tmp = path.join(q, `tmp-${k}`);
    fs.writeFileSync(tmp, packet);
    // The queue's next job: its own number 1, unless the queue was picked before.
    const name = `fspl-00000000-0000-4000-8000-${String(k + 1).padStart(12, '0')}.fspl`;
    const renamedNs = BigInt(Date.now()) * 1_000_000n;
    if (
      fs.readdirSync(q).some((f) => f.startsWith('fspl-')) ||
      fs.readFileSync(path.join(q, '..', 'nextseq'), 'utf8').trim() !== '1'
    ) {
      fs.rmSync(tmp);
      continue; // picked twice: a packet numbered 1 would not run; skip the sample
    }
    fs.renameSync(tmp, path.join(q, name));
    await until(
      'the job to start',
      () => fs.readFileSync(logFile, 'utf8').split('\n').filter(Boolean).length > seen,
      30_000,
    );
    const lines = fs.readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
    seen = lines.length;
    latencies.push(Number(BigInt(lines[lines.length - 1]) - renamedNs) / 1e6);
    await sleep(20 + Math.random() * 40);
  }
  const memAfter = rssOf(child.pid);
  child.kill('SIGTERM');
  const code = await new Promise((r) => child.once('exit', r));
  if (code !== 0) die(`the watcher exited ${code}: ${stderr}`);
  fs.rmSync(parent, { recursive: true, force: true });
  return { idleCpu, settleCpu, mem, memAfter, startup, latencies };
}

async function benchWatch() {
  const n = opts.quick ? 1000 : 10_000;
  const idleSeconds = opts.quick ? 5 : 60;
  const samples = opts.quick ? 20 : 60;
  const { idleCpu, mem, memAfter, startup, latencies } = await watchIdle({
    n,
    idleSeconds,
    samples,
    work: WORK,
    ref: opts.ref,
    log,
    die,
  });
  const p50 = quantile(latencies, 0.5);
  const p90 = quantile(latencies, 0.9);
  const rss = Math.max(mem.hwm, memAfter.hwm);
  return {
    rows: [
      `| ${n.toLocaleString('en-US')} queues under \`queue-process --watch --queues-in\`: ` +
        `idle CPU over ${idleSeconds} s | — | ${(idleCpu * 100).toFixed(2)} % of a core ` +
        `| — | — | ≤ 1 % | ${idleCpu <= 0.01 ? 'met' : '**missed**'} | ${loadavg()} |`,
      `| the same: peak RSS (VmHWM) | — | ${rss.toFixed(0)} MiB | — ` +
        `| — | ≤ 150 MiB | ${rss <= 150 ? 'met' : '**missed**'} | |`,
      `| the same: rename into a random queue → its command's start (${latencies.length} ` +
        `jobs; p50 ${p50.toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms) | — | ` +
        `p90 ${p90.toFixed(1)} ms | — | — | ≤ 100 ms | ${p90 <= 100 ? 'met' : '**missed**'} | |`,
      `| the same: from start to its first job run (every queue found and ` +
        `watched) | — | ${s2(startup)} | — | — | (information) | | |`,
    ],
  };
}

// ------------------------------------------------------------------------------------------------

if (isMain) await main();

async function main() {
  const rows = [];
  if (want('pass')) rows.push(...benchPass().rows);
  if (want('watch')) rows.push(...(await benchWatch()).rows);

  const md =
    `${BEGIN}
## Many queues in one process (issue 30; \`bench/many.mjs\`)

| measure | compared with | ours | theirs | ratio | target | | load (1 min) |
| --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

How it is measured:
- The pass: the queues are made by the reference (\`queue-init\`, then \`prepare | queue-write\` of one
  job each) once, and copied fresh (\`cp -a\`) for every run. Each round runs ours, then the
  reference's loop (\`for q in DIR/q*; do fspl queue-process -q "$q" sh -- -c 'cat >> F'; done\`),
  each under GNU time: CPU is user+sys of the whole command, children included (the shell loop,
  every \`fspl\`, \`sh\` and \`cat\`). Medians of ${opts.rounds} rounds, in \`${opts.dir}\`. Every run is
  checked: every queue's \`nextseq\` is 2, its \`jobs/\` empty, and F holds one line per queue.
- Watching: the empty queues are made directly (\`jobs/\`, \`nextseq\`, \`nextseq.lock\`, as
  \`queue-init\` leaves them), then one \`queue-process --watch --queues-in\` starts. After its first job
  and 2 s more, its CPU (utime+stime from \`/proc/PID/stat\`) is read over the idle window; peak RSS is
  VmHWM from \`/proc/PID/status\`. The queues are made 3 s before the watcher starts (a queue changed
  within 2 s of a look is scanned again at its next look, in case coarse time ` +
    `stamps hid a change). Latency: one job at a time is renamed into a random queue,
  20–60 ms apart; the command logs \`date +%s%N\` as it starts (\`sh\` and \`date\` included: an upper
  bound).
${END}
`;

  process.stdout.write(md);
  if (opts.splice) {
    spliceSection(notesFile(opts.splice), md, BEGIN, END); // whole, into the notes: bench/cost.mjs has the page's
    log(`wrote the section into ${opts.splice}`);
  }
}
