// Floors: what Node itself costs for the work a queue run does, measured without fspl.
//   node bench/floors.mjs spawn N         N sequential child_process.spawn of /bin/true
//   node bench/floors.mjs native-spawn N  the same through the native addon's start
//                                         (prints "none" when the addon is not built)
//   node bench/floors.mjs nop DIR         the syscalls of a NOP run over the queue DIR (runs of
//                                         NOPs recorded as one, as queue-process does)
//   node bench/floors.mjs moves DIR N [LANES]
//                                         the syscalls of N durable moves of small tokens from
//                                         DIR/a to DIR/b, in groups of 64 (made here first), the
//                                         outputs one after the other or in LANES at once
//   node bench/floors.mjs chain DIR N [W]  N tokens through a chain of 3 `cat`, W (2) at once, each
//                                         firing's command started and its output committed with
//                                         the system calls of a net's commit (group of one)
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
  const env = Object.entries(process.env)
    .map(([k, v]) => `${k}=${v}\0`)
    .join('');
  const start = performance.now();
  for (let i = 0; i < Number(arg); i++) {
    await new Promise((resolve, reject) => {
      if (b.spawn('/bin/true', 'true\0', env, 0, 1, 2, resolve) < 0) reject(new Error('spawn failed'));
    });
  }
  process.stdout.write(`${(performance.now() - start).toFixed(1)}\n`);
  process.exit(0);
} else if (what === 'nop') {
  // One scan (open, one read, close per file), then the records of runs of up to 1024 NOPs as
  // queue-process makes them (src/process/finish.ts): per run, the note in the lock file (pwrite,
  // fdatasync), nextseq (temp, write, fsync, close, rename, fsync of the directory), an unlink per
  // job, one fsync of jobs/: the same system calls, with no decoding and no logic at all.
  const jobs = path.join(arg, 'jobs');
  const buf = Buffer.alloc(4096);
  const names = fs.readdirSync(jobs);
  for (const n of names) {
    const fd = fs.openSync(path.join(jobs, n), 'r');
    fs.readSync(fd, buf, 0, 4096, 0);
    fs.closeSync(fd);
  }
  const seq = path.join(arg, 'nextseq');
  const lock = fs.openSync(`${seq}.lock`, 'r+');
  for (let at = 0; at < names.length; at += 1024) {
    const run = names.slice(at, at + 1024);
    fs.writeSync(lock, `N ${at + 1} ${at + run.length}\n`, 0);
    fs.fdatasyncSync(lock);
    const fd = fs.openSync(`${seq}.temp`, 'w');
    fs.writeSync(fd, `${at + run.length + 1}\n`);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(`${seq}.temp`, seq);
    fsyncDir(arg);
    for (const n of run) fs.unlinkSync(path.join(jobs, n));
    fsyncDir(jobs);
  }
  fs.closeSync(lock);
} else if (what === 'moves') {
  process.stdout.write(
    `${(await durableMoves(arg, Number(process.argv[4]), Number(process.argv[5] ?? 1))).toFixed(1)}\n`,
  );
  process.exit(0);
} else if (what === 'chain') {
  process.stdout.write(
    `${(await durableChain(arg, Number(process.argv[4]), Number(process.argv[5] ?? 2))).toFixed(1)}\n`,
  );
  process.exit(0);
} else {
  throw new Error('usage: floors.mjs spawn N | native-spawn N | nop DIR | moves DIR N [LANES] | chain DIR N [W]');
}
process.stdout.write(`${(performance.now() - t0).toFixed(1)}\n`);

/** A directory's fsync: open, fsync, close. */
function fsyncDir(d) {
  const fd = fs.openSync(d, 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

/** A seqfile's durable store, as SeqFile's: a temp written and fsynced, renamed, its place fsynced. */
function store(place, value) {
  const file = path.join(place, 'seq');
  const fd = fs.openSync(`${file}.temp`, 'w');
  fs.writeSync(fd, `${value}\n`);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(`${file}.temp`, file);
  fsyncDir(place);
}

/**
 * The system calls a net's group commit makes to move small tokens durably (src/net/commit/commit.ts,
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

/**
 * A chain of 3 `cat` with a net's protocol and nothing else: per firing, the command started
 * (the native addon's start where it is built, as the runner's) with its input token as
 * stdin (opened, its 96-byte header read past) and its stdout and stderr into staging files; once
 * it has exited, the commit's system calls for a group of one (src/net/commit/commit.ts, its table):
 * the output packet created, written (a header, then the staged bytes), fsynced, its directory
 * fsynced; the output place's number stored (seqfile); one journal line appended and fsynced;
 * the output renamed and its directory fsynced; the input place's number stored, the input
 * unlinked and its directory fsynced; the staging files unlinked. No decoding, scheduling,
 * indexing or environment beyond the caller's: W firings at once, the latest hop first. Returns
 * the loop's milliseconds.
 */
async function durableChain(dir, n, w) {
  const HOPS = 3;
  const places = Array.from({ length: HOPS + 1 }, (_, h) => path.join(dir, `q${h}`));
  for (const p of places) fs.mkdirSync(path.join(p, 'jobs'), { recursive: true });
  const staging = path.join(dir, 'staging');
  fs.mkdirSync(staging);
  const header = Buffer.alloc(96, 'h');
  const token = (h, i) => path.join(places[h], 'jobs', `${i}.fspl`);
  for (let i = 0; i < n; i++) fs.writeFileSync(token(0, i), Buffer.concat([header, Buffer.from(`${i}\n`)]));
  const addon = new URL('../native/build/Release/fspl_native.node', import.meta.url);
  const b = fs.existsSync(addon) ? createRequire(import.meta.url)(addon.pathname) : undefined;
  const env = Object.entries(process.env)
    .map(([k, v]) => `${k}=${v}\0`)
    .join('');
  const run = (stdin, stdout, stderr) =>
    new Promise((resolve, reject) => {
      if (!b) {
        spawn('cat', [], { stdio: [stdin, stdout, stderr] })
          .on('error', reject)
          .on('close', resolve);
        return;
      }
      const r = b.spawn('cat', 'cat\0', env, stdin, stdout, stderr, resolve);
      if (r < 0) reject(new Error(`spawn failed: ${r}`));
    });
  const journal = fs.openSync(path.join(dir, 'journal'), 'a');
  const waiting = places.map((_, h) => (h === 0 ? Array.from({ length: n }, (_, i) => i) : []));
  const seq = places.map(() => 0);
  const skipped = Buffer.alloc(96);
  const fire = async (h, i) => {
    const input = fs.openSync(token(h, i), 'r');
    fs.readSync(input, skipped, 0, 96, null);
    const [out, err] = ['out', 'stderr'].map((x) => path.join(staging, `${h}-${i}.${x}`));
    const fds = [out, err].map((f) => fs.openSync(f, 'w'));
    const done = run(input, fds[0], fds[1]);
    for (const fd of [input, ...fds]) fs.closeSync(fd);
    await done;
    const part = path.join(places[h + 1], 'jobs', `${i}.part`);
    const fd = fs.openSync(part, 'wx');
    fs.writeSync(fd, header);
    fs.writeSync(fd, fs.readFileSync(out));
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fsyncDir(path.join(places[h + 1], 'jobs'));
    store(places[h + 1], ++seq[h + 1]);
    fs.writeSync(journal, `${'x'.repeat(400)}\n`);
    fs.fsyncSync(journal);
    fs.renameSync(part, token(h + 1, i));
    fsyncDir(path.join(places[h + 1], 'jobs'));
    store(places[h], ++seq[h]);
    fs.unlinkSync(token(h, i));
    fsyncDir(path.join(places[h], 'jobs'));
    for (const f of [out, err]) fs.unlinkSync(f);
    if (h + 1 < HOPS) waiting[h + 1].push(i);
  };
  const start = performance.now();
  await new Promise((resolve, reject) => {
    let running = 0;
    const next = () => {
      while (running < w) {
        const h = [2, 1, 0].find((k) => waiting[k].length > 0);
        if (h === undefined) break;
        running++;
        fire(h, waiting[h].shift()).then(() => {
          running--;
          next();
        }, reject);
      }
      if (running === 0) resolve();
    };
    next();
  });
  const ms = performance.now() - start;
  fs.closeSync(journal);
  if (fs.readdirSync(path.join(places[HOPS], 'jobs')).length !== n) throw new Error('chain floor: tokens missing');
  return ms;
}
