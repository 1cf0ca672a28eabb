#!/usr/bin/env node
/**
 * One run of a net to the end, in a fresh process, for bench/net-flat.mjs: the runner of `fspl net
 * run` through the library (`Net.run({ drain: true, workers })`), with its own CPU (process.cpuUsage:
 * user + system of this process; the commands' CPU is their own) split at the first firing's start
 * and the last commit: before, the run's open (locks, recovery, the first scan of every place, the
 * watches); between, the firings; after, the drain's end (its last look at every place, the
 * leftovers).
 *
 *   node bench/net-flat-run.mjs ROOT NETFILE WORKERS
 *     prints {"openMs", "firingMs", "spawnerMs", "endMs", "firings", "wallMs", "rssMiB"}
 *
 * spawnerMs: of firingMs, the native spawner thread's (its starts), to the 50th commit before the
 * last (from /proc, in 10 ms ticks: a rough figure).
 *
 * ROOT: the checkout whose dist/ runs (built), so that two builds can be measured side by side.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** CPU ms of this process's threads by name (/proc: Linux), to tell the spawner thread's share. */
function threads() {
  const out = {};
  try {
    for (const t of fs.readdirSync('/proc/self/task')) {
      const st = fs.readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] ?? 0) + (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in clock ticks of 10 ms
    }
  } catch {
    // no /proc
  }
  return out;
}

const [ROOT, FILE, W = '2'] = process.argv.slice(2);
const { Net } = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
const net = Net.load(FILE);
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const c0 = cpu();
const t0 = performance.now();
let first;
let last;
let spawner0 = 0;
let spawner1 = 0;
let firings = 0;
await net.run({
  drain: true,
  workers: Number(W),
  onEvent: (e) => {
    if (e.type === 'start' && first === undefined) {
      first = cpu();
      spawner0 = threads()['fspl-spawner'] ?? 0;
    }
    if (e.type === 'commit') {
      firings++;
      last = cpu();
      if (firings % 50 === 0) spawner1 = threads()['fspl-spawner'] ?? 0; // every 50th: a look costs a few system calls
    }
  },
});
const end = cpu();
first ??= end;
last ??= end;
process.stdout.write(
  `${JSON.stringify({
    openMs: first - c0,
    firingMs: last - first,
    spawnerMs: spawner1 - spawner0,
    endMs: end - last,
    firings,
    wallMs: performance.now() - t0,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
  })}\n`,
);
