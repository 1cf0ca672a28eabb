#!/usr/bin/env node
/**
 * Two shell commands timed in pairs, A then B, N times: each run's wall time and CPU (user + sys, the
 * children it waited for included) as GNU time reports them, and the ratio A/B taken pair by pair, so
 * that a machine whose speed drifts during the call moves both sides of a pair alike. Prints each side's
 * median (min–max) and the ratios' median (min–max): quote the median.
 *
 *   node bench/pairs.mjs [-n N] [--before 'SHELL'] 'COMMAND A' 'COMMAND B'
 *
 * `--before` runs (untimed) before every run of either side: to copy a queue afresh, say, with $SIDE set
 * to A or B. Both sides run in bench/common.mjs's environment (benchEnv); a run that fails stops the call.
 * Example, one build against another over copies of one queue of 1,000 jobs:
 *
 *   node bench/pairs.mjs -n 20 --before 'rm -rf /dev/shm/q$SIDE; cp -a /dev/shm/tpl /dev/shm/q$SIDE' \
 *     'node bin/fspl queue-process -q /dev/shm/qA /bin/true' 'node OLD/bin/fspl queue-process -q /dev/shm/qB /bin/true'
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchEnv, median, underTime } from './common.mjs';

function usage(why) {
  process.stderr.write(
    `pairs: ${why}\nusage: node bench/pairs.mjs [-n N] [--before 'SHELL'] 'COMMAND A' 'COMMAND B'\n`,
  );
  process.exit(2);
}

const args = process.argv.slice(2);
let n = 10;
let before;
const commands = [];
while (args.length > 0) {
  const a = args.shift();
  if (a === '-n') n = Number(args.shift());
  else if (a === '--before') before = args.shift();
  else commands.push(a);
}
if (commands.length !== 2) usage('two commands are needed');
if (!Number.isInteger(n) || n < 1) usage('-n takes a whole number above 0');
if (!fs.existsSync('/usr/bin/time')) usage('GNU time (/usr/bin/time) is missing: apt-get install time');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pairs-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const env = benchEnv();
const fail = (side) => (why) => {
  process.stderr.write(`pairs: command ${side}: ${why}\n`);
  process.exit(1);
};

function run(side, command) {
  if (before !== undefined) {
    const r = spawnSync('/bin/sh', ['-c', before], { env: { ...env, SIDE: side }, stdio: 'inherit' });
    if (r.status !== 0) fail(side)(`--before failed (${r.status})`);
  }
  return underTime(['/bin/sh', '-c', command], { dir, env: { ...env, SIDE: side }, fail: fail(side) });
}

const runs = { A: [], B: [] };
run('A', commands[0]); // a warm-up of each, not counted: the page cache, the code cache
run('B', commands[1]);
for (let i = 0; i < n; i++) {
  runs.A.push(run('A', commands[0]));
  runs.B.push(run('B', commands[1]));
}

const spread = (xs, digits) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
for (const key of ['wall', 'cpu']) {
  const a = runs.A.map((r) => r[key]);
  const b = runs.B.map((r) => r[key]);
  const ratios = a.map((x, i) => x / b[i]);
  process.stdout.write(`${key}: A ${spread(a, 3)} s, B ${spread(b, 3)} s, A/B ${spread(ratios, 3)} over ${n} pairs\n`);
}
