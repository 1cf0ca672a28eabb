#!/usr/bin/env node
/**
 * Peak RSS of `fspl net run --drain` with many tokens waiting (issue 20's RSS row, alone): a chain
 * of two moves, N tokens put in its first place once (kept as a seed directory, copied per run).
 *
 *   node bench/rss.mjs seed DIR N          put N tokens in DIR (a fresh directory)
 *   node bench/rss.mjs run DIR [ROUNDS] [-- node flags...]
 *                                          copy DIR, run it ROUNDS times: peak RSS (MiB), wall (s)
 *
 * Needs `npm run build` first. FSPL_RSS_BIN picks another bin/fspl (A/B against a worktree).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchEnv } from './common.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = process.env.FSPL_RSS_BIN ?? path.join(ROOT, 'bin', 'fspl');
const NET =
  'places: { a: {}, b: {}, c: {} }\ntransitions:\n' +
  '  m1: { in: a, out: b, run: null }\n  m2: { in: b, out: c, run: null }\n';
const ENV = benchEnv();

async function seed(dir, n) {
  const { Net } = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'net.yaml');
  fs.writeFileSync(file, NET);
  const net = Net.load(file);
  net.init();
  for (let i = 0; i < n; i++) await net.put('a', Buffer.from('x'), { key: `k${i}` });
}

function jobs(dir) {
  return fs.readdirSync(path.join(dir, 'places', 'c', 'jobs')).filter((f) => f.endsWith('.fspl')).length;
}

function runOnce(seedDir, nodeFlags) {
  const dir = `${seedDir}-run-${process.pid}`;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(seedDir, dir, { recursive: true });
  const want = fs.readdirSync(path.join(dir, 'places', 'a', 'jobs')).filter((f) => f.endsWith('.fspl')).length;
  const tf = `${dir}.time`;
  const r = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      '%e %U %S %M',
      '-o',
      tf,
      process.execPath,
      ...nodeFlags,
      BIN,
      'net',
      'run',
      '--drain',
      path.join(dir, 'net.yaml'),
    ],
    { cwd: dir, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.status !== 0) throw new Error(`run failed (${r.status}): ${r.stderr.toString().slice(-2000)}`);
  const [wall, u, s, kib] = fs.readFileSync(tf, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  const got = jobs(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(tf, { force: true });
  if (got !== want) throw new Error(`${got} tokens arrived in c, expected ${want}`);
  return { mib: kib / 1024, wall, cpu: u + s };
}

const [cmd, dir, ...rest] = process.argv.slice(2);
if (cmd === 'seed') await seed(dir, Number(rest[0]));
else if (cmd === 'run') {
  const dd = rest.indexOf('--');
  const rounds = Number(dd === 0 ? 3 : (rest[0] ?? 3));
  const flags = dd >= 0 ? rest.slice(dd + 1) : [];
  const out = [];
  for (let i = 0; i < rounds; i++) {
    const r = runOnce(dir, flags);
    out.push(r);
    process.stdout.write(
      `${path.basename(dir)} ${flags.join(' ')} round ${i + 1}: ${r.mib.toFixed(1)}` +
        ` MiB, ${r.wall.toFixed(2)} s wall, ${r.cpu.toFixed(2)} s cpu\n`,
    );
  }
  const med = (k) => {
    const s = out.map((o) => o[k]).sort((a, b) => a - b);
    return s[s.length >> 1];
  };
  process.stdout.write(
    `${path.basename(dir)} ${flags.join(' ')} median: ${med('mib').toFixed(1)}` +
      ` MiB, ${med('wall').toFixed(2)} s wall, ${med('cpu').toFixed(2)} s cpu\n`,
  );
} else {
  process.stderr.write('usage: rss.mjs seed DIR N | run DIR [ROUNDS] [-- node flags]\n');
  process.exit(2);
}
