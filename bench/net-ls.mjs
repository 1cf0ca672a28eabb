#!/usr/bin/env node
/**
 * `net ls` on a big place: does memory stay flat? (issue 21; a bench, not a timed test.)
 *
 *   npm run build && node bench/net-ls.mjs [N...]     # default 10000 100000
 *
 * For each N, a place is filled with N tokens (packet files written directly, as a net writer
 * names them), then a fresh process lists them all through Net.tokens() (what `fspl net ls`
 * prints) and reports its peak RSS, its heap after the listing and the time taken. Flat memory:
 * the peak grows far less than N does.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const lib = await import(pathToFileURL(path.join(ROOT, 'dist', 'index.js')).href);

if (process.argv[2] === '--list') {
  const net = lib.Net.load(process.argv[3]);
  const t0 = performance.now();
  let n = 0;
  for await (const t of net.tokens('p')) if (t.key) n++;
  const ms = performance.now() - t0;
  console.log(
    JSON.stringify({
      n,
      ms: Math.round(ms),
      maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    }),
  );
  process.exit(0);
}

const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
for (const n of (process.argv.slice(2).length ? process.argv.slice(2) : ['10000', '100000']).map(Number)) {
  const dir = fs.mkdtempSync(path.join(base, 'fspl-bench-ls-'));
  try {
    fs.writeFileSync(path.join(dir, 'net.yaml'), 'places: { p: {}, q: {} }\ntransitions:\n  t: { in: p, out: q }\n');
    const net = lib.Net.load(path.join(dir, 'net.yaml'));
    net.init();
    const jobs = path.join(dir, 'places/p/jobs');
    for (let i = 1; i <= n; i++) {
      const header = lib.makeHeader({
        seq: BigInt(i),
        cmd: { kind: 'Command', params: [Buffer.from('x')], env: [[Buffer.from('KEY'), Buffer.from(`key-${i}`)]] },
      });
      fs.writeFileSync(
        path.join(jobs, `fspl-${String(i).padStart(20, '0')}-${randomUUID()}.fspl`),
        Buffer.concat([lib.encodeHeader(header), Buffer.from(`payload ${i}\n`)]),
      );
    }
    const r = spawnSync(
      process.execPath,
      [
        ...(process.env.LS_NODE_FLAGS ?? '').split(' ').filter(Boolean),
        fileURLToPath(import.meta.url),
        '--list',
        path.join(dir, 'net.yaml'),
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(r.stderr);
    console.log(`${n} tokens: ${r.stdout.trim()}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
