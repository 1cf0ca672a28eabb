#!/usr/bin/env node
/**
 * Latency of `fspl queue-process --watch`: from a job file's rename into jobs/ to its command
 * starting. The reference has no watch mode, so there is nothing to compare with: the target is
 * the issue's bound, 200 ms, on both paths (file system events, and --poll-interval 0.1).
 *
 *   node bench/watch-latency.mjs --dir DIR --jobs N [--poll SECONDS]
 *
 * Prints one JSON line: { mode, latencies: [ms...] }. Run by bench/run.mjs.
 *
 * The command is `sh -c 'date +%s%N >> LOG'`: the time is taken when it has started (sh and
 * date included, about a millisecond), so the figures are an upper bound. Jobs arrive one at a
 * time, a random 20-60 ms after the previous one ran, so polling is caught at random phases.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i < 0 ? dflt : args[i + 1];
};
const dir = arg('--dir');
const jobs = Number(arg('--jobs', '20'));
const poll = arg('--poll');
if (!dir || !(jobs > 0)) {
  process.stderr.write('usage: watch-latency.mjs --dir DIR --jobs N [--poll SECONDS]\n');
  process.exit(2);
}

const { Queue, encodeHeader, makeHeader } = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
const work = fs.mkdtempSync(path.join(dir, 'fspl-watch-'));
const qdir = path.join(work, 'q');
const log = path.join(work, 'log');
fs.writeFileSync(log, '');
const q = Queue.init(qdir);
const put = (seq) =>
  q.writeBuffer(encodeHeader(makeHeader({ seq: BigInt(seq), cmd: { kind: 'Command', params: [], env: [] } })));
const lines = () => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond, ms = 30_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

const child = spawn(
  process.execPath,
  [
    path.join(ROOT, 'bin', 'fspl'),
    '-l',
    'warn',
    'queue-process',
    '-q',
    qdir,
    '--watch',
    ...(poll ? ['--poll-interval', poll] : []),
    'sh',
    '--',
    '-c',
    `date +%s%N >> '${log}'`,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const latencies = [];
try {
  // A first job, not measured: the watcher is up once it has run.
  put(1);
  await until('the watcher to start', () => lines().length === 1);
  for (let seq = 2; seq <= jobs + 1; seq++) {
    await sleep(20 + Math.floor(Math.random() * 40));
    put(seq);
    const renamed = Date.now();
    await until(`job ${seq}`, () => lines().length === seq);
    const startedNs = BigInt(lines()[seq - 1]);
    latencies.push(Number(startedNs / 1_000_000n) - renamed);
  }
} finally {
  child.kill('SIGTERM');
  const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));
  fs.rmSync(work, { recursive: true, force: true });
  if (code !== 0) {
    process.stderr.write(`watch-latency: queue-process --watch exited with ${code} on SIGTERM\n`);
    process.exitCode = 1;
  }
}
process.stdout.write(
  `${JSON.stringify({ mode: poll ? `polling every ${poll} s` : 'file system events', latencies })}\n`,
);
