import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * What the bench scripts need alike: the median, shell quoting, the clean environment both sides run in, and
 * the queues and nets of many queues.
 */

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** s as one word of sh. */
export const shq = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;

/**
 * This process's environment without FSPL_* (prepare would store FSPL_SET_* ones), NODE_OPTIONS and
 * NODE_EXTRA_CA_CERTS, and without the names in `drop`: the same for ours and the reference.
 * NODE_EXTRA_CA_CERTS makes every node read and parse the certificates it names before any script
 * runs (50-80 ms for Debian's bundle): a machine that sets it for its own tools would add that to
 * every one of our processes, and to `node -e 0`, and fspl opens no TLS connection.
 */
const NOT_OURS = new Set(['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS']);
export function benchEnv(drop = []) {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('FSPL_') && !NOT_OURS.has(k) && !drop.includes(k)),
  );
}

/**
 * A net file: `n` places (their `dir`s as `dirOf` gives them, relative ones under the net's directory), each
 * read by a transition with no output running `run` (both written as given: quote them for YAML).
 */
export function manyQueues(n, run, dirOf = (i) => `places/q${i}`) {
  const lines = ['places:'];
  for (let i = 0; i < n; i++) lines.push(`  q${i}: { dir: ${dirOf(i)} }`);
  lines.push('transitions:');
  for (let i = 0; i < n; i++) lines.push(`  t${i}: { in: q${i}, run: ${run} }`);
  return `${lines.join('\n')}\n`;
}

/** sh that makes queues q0 to q(n-1) in its directory with the reference at `ref`, one job each. */
export function refQueuesScript(ref, n) {
  const r = shq(ref);
  return (
    `i=0; while [ $i -lt ${n} ]; do ${r} queue-init -q q$i && echo "job $i" | ${r} prepare -s - -i - ` +
    `| ${r} queue-write -q q$i || exit 1; i=$((i+1)); done`
  );
}

/**
 * argv under GNU time (/usr/bin/time), its time file in `dir`: wall seconds, CPU (user+sys) of it and the
 * children it waited for, and peak RSS (KiB); `fail` gets one line when it can't run or exits non-zero.
 */
export function underTime(argv, { dir, cwd, env, fail }) {
  const tf = path.join(dir, 'time');
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-o', tf, '-f', '%U %S %M', ...argv], {
    cwd,
    env,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.error) fail(r.error.message);
  if (r.status !== 0) fail(`failed (${r.status}): ${r.stderr.trim().split('\n').pop()}`);
  const [u, s, rssKiB] = fs.readFileSync(tf, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  return { wall, cpu: u + s, rssKiB };
}
