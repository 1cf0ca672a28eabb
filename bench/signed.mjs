#!/usr/bin/env node
/**
 * Benchmarks of signed packets (issue 39), each a ratio in one run against what it adds to:
 *
 *   process  `queue-process --allowed-signers` of 1,000 signed `/bin/true` jobs, against the same
 *            jobs unsigned (sealed, so that only the signature differs), same run: CPU; the target
 *            is on what the check costs above its floor, one Ed25519 verification a job, whose
 *            CPU each round measures (verifyFloor)
 *   verify   checking a signed 1 GiB payload (`stdin-process --allowed-signers true` on the
 *            packet as a file, the command reading nothing), against `sha512sum` of the same
 *            payload: CPU
 *   prepare  `prepare --sign KEY` of a 1 KiB job, whole process, against `prepare` unsigned: wall
 *
 * Every round runs the sides one after the other; the tables give the median of the rounds and
 * the spread of the ratio (lowest–highest round). Prints a markdown section on stdout; bench/run.mjs
 * calls it (`--only G`). Run alone:
 *
 *   node bench/signed.mjs [--quick] [--rounds N] [--only process,verify,prepare] [--dir DIR]
 *                         [--splice docs/benchmarks.md]
 *
 * Needs `npm run build` first, ssh-keygen and GNU time.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEnv, median, shq } from './common.mjs';
import { parseSectionArgs } from './section-args.mjs';
import { spliceSplit } from './splice.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'fspl');
const NODE = process.execPath;
const TIME = '/usr/bin/time';
const BEGIN = '<!-- signed-bench:begin -->';
const END = '<!-- signed-bench:end -->';

const opts = parseSectionArgs(process.argv.slice(2), import.meta.url, { rounds: undefined });
opts.rounds = Math.max(opts.rounds, opts.quick ? 1 : 6);
const want = (id) => !opts.only || opts.only.has(id);
const log = (m) => process.stderr.write(`[signed-bench] ${m}\n`);
const x = (v) => `${v.toFixed(2)}×`;
const ENV = benchEnv(['SSH_AUTH_SOCK']);
ENV.SHELL = '/bin/sh';
const loadavg = () => os.loadavg()[0].toFixed(2);
const fspl = `${shq(NODE)} ${shq(BIN)}`;

const WORK = fs.mkdtempSync(path.join(opts.dir, 'fspl-signed-bench-'));
process.on('exit', () => fs.rmSync(WORK, { recursive: true, force: true }));

function die(msg) {
  process.stderr.write(`bench/signed.mjs: ${msg}\n`);
  process.exit(1);
}

/** Run a shell command line under GNU time: wall seconds, and CPU (user+sys) of it and its children. */
function timed(cmdline, what) {
  const tf = path.join(WORK, 'time');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(TIME, ['-o', tf, '-f', '%U %S %M', 'sh', '-c', cmdline], {
    env: ENV,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) die(`${what} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const [u, s] = fs.readFileSync(tf, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  return { wall, cpu: u + s };
}

function run(cmdline, what) {
  const r = spawnSync('sh', ['-c', cmdline], { env: ENV, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) die(`${what} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/**
 * A row: the medians, the ratio of the medians, and the spread of the per-round ratios (target undefined: for
 * information).
 */
function row(what, against, ours, base, unit, target, loads) {
  const ratios = ours.map((o, i) => o / base[i]);
  const r = median(ours) / median(base);
  const fmt = (v) => (unit === 's' ? `${v.toFixed(2)} s` : `${(v * 1000).toFixed(1)} ms`);
  const ok = target === undefined ? '' : r <= target ? 'met' : '**missed**';
  const goal = target === undefined ? '(information)' : `≤ ${target.toFixed(2)}×`;
  return (
    `| ${what} | ${against} | ${fmt(median(ours))} | ${fmt(median(base))} | ${x(r)} (${x(Math.min(...ratios))}` +
    `–${x(Math.max(...ratios))}) | ${goal} | ${ok} | ${loads[0]}–${loads[loads.length - 1]} |`
  );
}

/**
 * The floor of checking n signatures at all: CPU of n Ed25519 verifications by node:crypto (OpenSSL), over
 * n distinct messages the size of a signed header's, in a process of its own (its start not counted).
 */
function verifyFloor(n) {
  const script = `const c = require('node:crypto');
const { privateKey, publicKey } = c.generateKeyPairSync('ed25519');
const msgs = Array.from({ length: ${n} }, (_, i) => Buffer.alloc(380, i));
const sigs = msgs.map((m) => c.sign(null, m, privateKey));
const t = process.cpuUsage();
for (let i = 0; i < msgs.length; i++) if (!c.verify(null, msgs[i], publicKey, sigs[i])) process.exit(1);
const d = process.cpuUsage(t);
process.stdout.write(String((d.user + d.system) / 1e6));`;
  return Number(run(`${shq(NODE)} -e ${shq(script)}`, 'the verification floor'));
}

// A key and its allowed_signers line.
const KEY = path.join(WORK, 'key');
run(`ssh-keygen -q -t ed25519 -N '' -C bench -f ${shq(KEY)}`, 'ssh-keygen');
const SIGNERS = path.join(WORK, 'allowed_signers');
fs.writeFileSync(SIGNERS, `bench@example namespaces="fspl" ${fs.readFileSync(`${KEY}.pub`, 'utf8')}`);

/**
 * A queue of n jobs, signed or sealed, made once (each round copies it): through the library in
 * this process, as `prepare --sign | queue-write` would make them (the same packets, minus 2n
 * process starts).
 */
async function makeQueue(n, signed) {
  const { preparePacket, Queue } = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
  const q = path.join(WORK, `template-${signed ? 'signed' : 'sealed'}`);
  const queue = Queue.init(q);
  for (let i = 1; i <= n; i++) {
    const how = signed ? { sign: { key: KEY } } : { seal: true };
    await queue.write(preparePacket({ seq: BigInt(i), ...how }));
  }
  return q;
}

function fresh(template, name) {
  const d = path.join(WORK, name);
  fs.rmSync(d, { recursive: true, force: true });
  run(`cp -a ${shq(template)} ${shq(d)}`, 'cp -a');
  return d;
}

async function benchProcess() {
  const n = opts.quick ? 100 : 1000;
  log(`process: making ${n} signed and ${n} sealed jobs`);
  const templates = { signed: await makeQueue(n, true), sealed: await makeQueue(n, false) };
  const runs = { signed: [], sealed: [], floor: [] };
  const loads = [];
  for (let round = 0; round < opts.rounds; round++) {
    // Each side goes first in every other round: a run's deletions slow the file creations of the
    // run after it (ext4's inode allocation passes over recently deleted inodes: 2.6% of one
    // profile's samples, 7% of the next one's), which would count against whichever side ran second.
    for (const side of round % 2 ? ['sealed', 'signed'] : ['signed', 'sealed']) {
      const q = fresh(templates[side], `process-${side}`);
      loads.push(loadavg());
      const check = side === 'signed' ? `--allowed-signers ${shq(SIGNERS)} ` : '';
      runs[side].push(timed(`${fspl} queue-process -q ${shq(q)} ${check}/bin/true`, `queue-process (${side})`).cpu);
      if (fs.readdirSync(path.join(q, 'jobs')).length !== 0) die(`queue-process (${side}) left jobs`);
      if (fs.existsSync(path.join(q, 'refused'))) die('signed jobs were refused');
    }
    runs.floor.push(verifyFloor(n));
  }
  const what = `\`queue-process --allowed-signers\` of ${n.toLocaleString('en-US')} signed \`/bin/true\` jobs, CPU`;
  const base = 'the same jobs sealed, unsigned, no check';
  return [
    row(what, base, runs.signed, runs.sealed, 's', undefined, loads),
    // The target: what the check costs above its floor, one Ed25519 verification a job (verifyFloor).
    row(
      `the same, less ${n.toLocaleString('en-US')} Ed25519 verifications (their CPU measured in the round)`,
      base,
      runs.signed.map((v, i) => v - runs.floor[i]),
      runs.sealed,
      's',
      1.1,
      loads,
    ),
  ].join('\n');
}

function benchVerify() {
  const size = opts.quick ? 64 << 20 : 1 << 30;
  log(`verify: a signed ${size >> 20} MiB payload`);
  const payload = path.join(WORK, 'payload');
  run(`head -c ${size} /dev/urandom > ${shq(payload)}`, 'payload');
  const packet = path.join(WORK, 'big.fspl');
  run(`${fspl} prepare --sign ${shq(KEY)} -s - -i ${shq(payload)} > ${shq(packet)}`, 'prepare --sign');
  const runs = { ours: [], floor: [] };
  const loads = [];
  for (let round = 0; round < opts.rounds; round++) {
    loads.push(loadavg());
    runs.ours.push(
      timed(
        `${fspl} stdin-process --allowed-signers ${shq(SIGNERS)} --ignore-payload true < ${shq(packet)}`,
        'stdin-process',
      ),
    );
    runs.floor.push(timed(`sha512sum ${shq(payload)} > /dev/null`, 'sha512sum'));
  }
  fs.rmSync(payload);
  fs.rmSync(packet);
  return row(
    `checking a signed ${size >> 20} MiB payload: \`stdin-process ` +
      `--allowed-signers\` of the packet (a file), command \`true\`, CPU`,
    '`sha512sum` of the payload',
    runs.ours.map((r) => r.cpu),
    runs.floor.map((r) => r.cpu),
    's',
    1.3,
    loads,
  );
}

function benchPrepare() {
  const n = opts.quick ? 5 : 20;
  log(`prepare: ${n} × ${opts.rounds} rounds of a 1 KiB job`);
  const input = path.join(WORK, 'kib');
  fs.writeFileSync(input, Buffer.alloc(1024, 0x61));
  const runs = { signed: [], plain: [] };
  const loads = [];
  for (let round = 0; round < opts.rounds; round++) {
    loads.push(loadavg());
    for (const side of ['signed', 'plain']) {
      const how = side === 'signed' ? `--sign ${shq(KEY)} ` : '';
      // n runs in a row, so that one run's noise weighs less; the per-run time is the total / n.
      const t = timed(
        `i=0; while [ $i -lt ${n} ]; do ${fspl} prepare ${how}-s ` +
          `- -i ${shq(input)} > /dev/null || exit 1; i=$((i+1)); done`,
        `prepare (${side})`,
      );
      runs[side].push(t.wall / n);
    }
  }
  return row(
    '`prepare --sign KEY -i FILE` of a 1 KiB job, whole process, wall per run',
    '`prepare -i FILE`, unsigned',
    runs.signed,
    runs.plain,
    'ms',
    1.1,
    loads,
  );
}

const rows = [];
if (want('process')) rows.push(await benchProcess());
if (want('verify')) rows.push(benchVerify());
if (want('prepare')) rows.push(benchPrepare());

const md =
  `${BEGIN}
## Signed packets (bench/signed.mjs)

${opts.rounds} rounds${opts.quick ? ' (quick: small sizes)' : ''}, ${new Date().toISOString().slice(0, 10)}, on ` +
  `${os.cpus().length} cores; the ratio is of the medians, with the lowest and highest round's ratio after it.

| measure | compared with | signed | base | ratio (spread) | target | | load |
| --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}
${END}
`;
process.stdout.write(md);
if (opts.splice) spliceSplit(opts.splice, md, BEGIN, END);
