// Floors: what Node itself costs for the work a queue run does, measured without fspl.
//   node bench/floors.mjs spawn N         N sequential child_process.spawn of /bin/true
//   node bench/floors.mjs native-spawn N  the same through the native addon's posix_spawn
//                                         (prints "none" when the addon is not built)
//   node bench/floors.mjs nop DIR         the syscalls of a NOP run over the queue DIR
//   node bench/floors.mjs moves DIR N [LANES]
//                                         the syscalls of N durable moves of small tokens from
//                                         DIR/a to DIR/b, in groups of 64 (made here first), the
//                                         outputs one after the other or in LANES at once
// Prints the elapsed milliseconds of the loop (start-up excluded).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [what, arg] = process.argv.slice(2);
const t0 = performance.now();
if (what === 'spawn') {
  for (let i = 0; i < Number(arg); i++) {
    await new Promise((resolve, reject) => {
      const c = spawn('/bin/true', [], { stdio: 'inherit' });
      c.on('close', resolve);
      c.on('error', reject);
    });
  }
} else if (what === 'native-spawn') {
  const addon = new URL('../native/build/Release/fspl_native.node', import.meta.url);
  if (!fs.existsSync(addon)) {
    process.stdout.write('none\n');
    process.exit(0);
  }
  const b = createRequire(import.meta.url)(addon.pathname);
  const env = Object.entries(process.env).map(([k, v]) => `${k}=${v}\0`).join('');
  const start = performance.now();
  for (let i = 0; i < Number(arg); i++) {
    await new Promise((resolve, reject) => {
      if (b.spawn('/bin/true', 'true\0', env, 0, 1, 2, resolve) < 0) reject(new Error('spawn failed'));
    });
  }
  process.stdout.write(`${(performance.now() - start).toFixed(1)}\n`);
  process.exit(0);
} else if (what === 'nop') {
  // One scan (open, one read, close per file), then per job: seqfile temp, write, fsync, close,
  // rename, unlink: the same system calls as a queue run of NOP jobs, with no decoding at all.
  const jobs = path.join(arg, 'jobs');
  const buf = Buffer.alloc(4096);
  const names = fs.readdirSync(jobs);
  for (const n of names) {
    const fd = fs.openSync(path.join(jobs, n), 'r');
    fs.readSync(fd, buf, 0, 4096, 0);
    fs.closeSync(fd);
  }
  const seq = path.join(arg, 'nextseq');
  names.forEach((n, i) => {
    const fd = fs.openSync(`${seq}.temp`, 'w');
    fs.writeSync(fd, `${i + 2}\n`);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(`${seq}.temp`, seq);
    fs.unlinkSync(path.join(jobs, n));
  });
} else if (what === 'moves') {
  process.stdout.write(`${(await durableMoves(arg, Number(process.argv[4]), Number(process.argv[5] ?? 1))).toFixed(1)}\n`);
  process.exit(0);
} else {
  throw new Error('usage: floors.mjs spawn N | native-spawn N | nop DIR | moves DIR N [LANES]');
}
process.stdout.write(`${(performance.now() - t0).toFixed(1)}\n`);

/**
 * The system calls a net's group commit makes to move small tokens durably (src/net/run/commit.ts,
 * its table), with no decoding, scheduling or JavaScript function. Per group of 64: each output
 * read from its input, created, written and fsynced (one after the other, or in lanes at once,
 * each a chain of asynchronous calls, as the commit's many parts are), their directory fsynced;
 * the numbers stored (a seqfile: temp, fsync, rename, fsync of the place); one journal line
 * appended and fsynced; the outputs renamed and their directory fsynced; the inputs' nextseq
 * stored as the numbers were, the inputs unlinked and their directory fsynced. Returns the loop's
 * milliseconds.
 */
async function durableMoves(dir, n, lanes) {
  const [a, b] = ['a', 'b'].map((p) => path.join(dir, p));
  for (const p of [a, b]) fs.mkdirSync(path.join(p, 'jobs'), { recursive: true });
  const body = Buffer.alloc(120, 'x');
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(a, 'jobs', `${i}.fspl`), body);
  const fsyncDir = (d) => {
    const fd = fs.openSync(d, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  };
  const store = (place, value) => {
    const file = path.join(place, 'seq');
    const fd = fs.openSync(`${file}.temp`, 'w');
    fs.writeSync(fd, `${value}\n`);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(`${file}.temp`, file);
    fsyncDir(place);
  };
  fsyncDir(path.join(a, 'jobs'));
  const journal = fs.openSync(path.join(dir, 'journal'), 'a');
  const start = performance.now();
  for (let g = 0; g < n; g += 64) {
    const ids = Array.from({ length: Math.min(64, n - g) }, (_, k) => g + k);
    if (lanes === 1) {
      for (const i of ids) {
        const data = fs.readFileSync(path.join(a, 'jobs', `${i}.fspl`));
        const out = fs.openSync(path.join(b, 'jobs', `${i}.part`), 'wx');
        fs.writeSync(out, data);
        fs.fsyncSync(out);
        fs.closeSync(out);
      }
    } else {
      // In lanes at once, as the commit does for a group (fs-batch.ts runBatchesAtOnce): a disk's
      // journal takes several fsyncs in one commit.
      await Promise.all(
        Array.from({ length: lanes }, async (_, k) => {
          for (const i of ids.filter((_, j) => j % lanes === k)) {
            const data = await fs.promises.readFile(path.join(a, 'jobs', `${i}.fspl`));
            const out = await fs.promises.open(path.join(b, 'jobs', `${i}.part`), 'wx');
            await out.write(data);
            await out.sync();
            await out.close();
          }
        }),
      );
    }
    fsyncDir(path.join(b, 'jobs'));
    store(b, g + ids.length);
    fs.writeSync(journal, `${'x'.repeat(80 * ids.length)}\n`);
    fs.fsyncSync(journal);
    for (const i of ids) fs.renameSync(path.join(b, 'jobs', `${i}.part`), path.join(b, 'jobs', `${i}.fspl`));
    fsyncDir(path.join(b, 'jobs'));
    store(a, g + ids.length);
    for (const i of ids) fs.unlinkSync(path.join(a, 'jobs', `${i}.fspl`));
    fsyncDir(path.join(a, 'jobs'));
  }
  const ms = performance.now() - start;
  fs.closeSync(journal);
  return ms;
}
