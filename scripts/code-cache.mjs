#!/usr/bin/env node
/**
 * V8's code cache for the CLI bundle, dist/bundle/code-cache.bin (run by `npm run build`, after
 * scripts/bundle.mjs): for each file of the bundle that the commands below load, its cache and a
 * copy of the bytes it was made from. bin/fspl compiles a file with its cache when the file's
 * bytes equal that copy. Compiling the bundle is a good part of what fspl's start-up costs
 * beyond Node's own; with the cache, V8 reads the compiled code instead (docs/benchmarks-notes.md).
 *
 * How: a child process loads the bundle through bin/fspl's own loader, runs the commands whose
 * start-up counts most (in that process, one after the other, their output thrown away), then
 * writes each loaded file's cache. Made after the commands ran, a cache holds the functions they
 * ran too, which then need no compiling either. A file whose bytes changed since, a cache V8
 * refuses (another V8, other flags) or no pack at all: bin/fspl compiles the source as usual, so a
 * stale cache costs time, never correctness.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The child: run the commands through bin/fspl's loader, then write the caches of the files it compiled. */
async function child(dir) {
  const { requireChunk, scripts, quick } = createRequire(import.meta.url)(path.join(ROOT, 'bin', 'fspl'));
  const { main } = requireChunk(path.join(ROOT, 'dist', 'bundle', 'main.cjs'));
  const { Queue, encodeHeader } = await import(path.join(ROOT, 'dist', 'index.js'));
  const empty = path.join(dir, 'empty');
  const one = path.join(dir, 'one');
  // A parent of two queues, one job in one of them: a pass over many queues (--queues-in, as cron's
  // over a directory of queues) with one job only, so that it never sets the long run's V8 flags.
  const many = path.join(dir, 'many');
  fs.mkdirSync(many);
  const seq = path.join(dir, 'seq');
  // A net: what `net check`, `net init`, `net put` and `net run` load. `net run` sets V8 flags, and a
  // cache made under them would be refused by every other command: it runs here with FSPL_V8_TUNING=0.
  const net = path.join(dir, 'net.yaml');
  const payload = path.join(dir, 'payload');
  fs.writeFileSync(net, 'places:\n  a: { dir: a }\n  b: { dir: b }\ntransitions:\n  t: { in: a, out: b, run: cat }\n');
  fs.writeFileSync(payload, 'x\n');
  const commands = [
    ['-V'],
    ['gen-uuid'],
    ['queue-init', '-q', empty],
    ['queue-process', '-q', empty, 'true'],
    ['queue-init', '-q', one],
    ['write-one-job', one],
    ['queue-process', '-q', one, 'true'],
    ['queue-init', '-q', path.join(many, 'a')],
    ['queue-init', '-q', path.join(many, 'b')],
    ['write-one-job', path.join(many, 'a')],
    ['queue-process', '--queues-in', many, 'true'],
    ['queue-ls', '-q', empty],
    ['prepare-get-next', '-s', seq],
    ['prepare', '-s', seq, '--', 'true'],
    ['queue-write', '-q', empty], // stdin is /dev/null: refused, having loaded what it needs
    ['net', 'check', net],
    ['net', 'init', net],
    ['net', 'put', net, 'a', '-i', payload],
    ['net', 'status', net],
    ['net', 'run', '--drain', net],
  ];
  for (const argv of commands) {
    if (argv[0] === 'write-one-job') {
      Queue.open(argv[1]).writeBuffer(
        encodeHeader({ seq: 1n, ctime: { secs: 0n, nanos: 0 }, cmd: { kind: 'Command', params: [], env: [] } }),
      );
      continue;
    }
    // An empty queue's run is answered by quick.cjs (bin/fspl); the CLI's is cached as well.
    if (argv[0] === 'queue-process' && argv[2] === empty && !quick(argv))
      throw new Error('the empty queue was not run by quick.cjs');
    if (argv[0] === 'net' && argv[1] === 'run') process.env.FSPL_V8_TUNING = '0';
    await main(argv);
    delete process.env.FSPL_V8_TUNING;
  }
  writePack(path.join(ROOT, 'dist', 'bundle', 'code-cache.bin'), scripts);
}

/**
 * The pack bin/fspl reads: a u32 LE, the length of a JSON index (file name: [source offset,
 * source length, cache offset, cache length], offsets from the end of the index), the index, then
 * each file's bytes and cache.
 */
function writePack(file, scripts) {
  const parts = [];
  const index = {};
  let offset = 0;
  const add = (bytes) => {
    parts.push(bytes);
    offset += bytes.length;
    return [offset - bytes.length, bytes.length];
  };
  for (const [file, script] of scripts)
    index[path.basename(file)] = [...add(fs.readFileSync(file)), ...add(script.createCachedData())];
  const json = Buffer.from(JSON.stringify(index));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.length);
  fs.writeFileSync(file, Buffer.concat([length, json, ...parts]));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]);
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fspl-code-cache-'));
  try {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', dir], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      process.stderr.write(r.stderr);
      throw new Error(`making the code cache failed (${r.error?.message ?? `exit status ${r.status}`})`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
