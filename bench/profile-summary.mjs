#!/usr/bin/env node
// Summarise a V8 .cpuprofile (from `node --cpu-prof`): time per category and the functions with
// the most self time. Used by bench/run.mjs (workload P); by hand:
//   node bench/profile-summary.mjs FILE.cpuprofile [JOBS] [TOP]
// With JOBS, times are also given per job. Categories (self time of the sampled frame):
// - "spawning job commands": the addon's start (nativeSpawn; the child's exec happens
//   before it returns) or child_process.spawn;
// - "system calls through Node's bindings": frames without a script (open, read, rename, ...);
// - "JS": every other function (fspl's code, its libraries, Node's own JS);
// - idle (waiting in epoll: the command running), the garbage collector, and "(program)": V8
//   and Node native work outside any JS function.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const SPAWN = new Set(['nativeSpawn', 'spawn', 'ChildProcess.spawn']);

export function summarize(prof, top = 20) {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < prof.samples.length; i++) {
    const id = prof.samples[i];
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  const cat = { total: prof.endTime - prof.startTime, idle: 0, gc: 0, program: 0, spawn: 0, syscalls: 0, js: 0 };
  const fns = new Map();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)') cat.idle += us;
    else if (name === '(garbage collector)') cat.gc += us;
    else if (name === '(program)' || name === '(root)') cat.program += us;
    else if (SPAWN.has(name)) cat.spawn += us;
    else if (!url) cat.syscalls += us;
    else cat.js += us;
    const where = url
      ? ` ${url.replace(/^.*\/(dist|src|node_modules)\//, '$1/').replace(/-[A-Z0-9]{8}\.js$/, '.js')}:${lineNumber + 1}`
      : '';
    const key = `${name}${where}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  const functions = [...fns].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { categories: cat, functions };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, jobsArg, topArg] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [JOBS] [TOP]');
    process.exit(2);
  }
  const jobs = Number(jobsArg) || 0;
  const { categories: c, functions } = summarize(JSON.parse(fs.readFileSync(file, 'utf8')), Number(topArg) || 20);
  const fmt = (us) => `${(us / 1000).toFixed(1)} ms${jobs ? ` (${(us / jobs).toFixed(1)} µs/job)` : ''}`;
  for (const [k, v] of Object.entries(c)) console.log(`${k.padEnd(10)} ${fmt(v)}`);
  for (const [k, v] of functions) console.log(`${fmt(v).padStart(28)}  ${k}`);
}
